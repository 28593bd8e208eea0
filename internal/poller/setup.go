package poller

import (
	"context"
	"slices"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// setup is the first part of a tick, its calls made in turn before the streams start,
// uncapped (each needs the one before: the identity's scopes decide discovery,
// conversations.info decides which conversations are read): auth.test once per
// process, users.conversations with discover: member, conversations.info where due,
// then the watched set.
type setup struct {
	t *tick
	// gates are the setup methods' calls: uncapped, stopped by the soft deadline.
	gates map[string]*gate
}

func newSetup(t *tick) *setup { return &setup{t: t, gates: map[string]*gate{}} }

// gate returns the uncapped gate of a setup method.
func (s *setup) gate(method string) *gate {
	g, ok := s.gates[method]
	if !ok {
		g = &gate{method: method, left: -1}
		s.gates[method] = g
	}
	return g
}

// authenticate resolves the token's identity with auth.test once per process (the bot
// user and bot IDs classify own posts; the scopes drive discover: member). Later ticks
// use the cached answer. Its failure ends the tick.
func (s *setup) authenticate() error {
	t := s.t
	if t.p.mem.identity != nil {
		return nil
	}
	var id rm.Identity
	o, err := t.do(s.gate(rm.MethodAuthTest), call{essential: true, what: "checking the token"}, func(ctx context.Context) (err error) {
		id, err = t.p.src.AuthTest(ctx)
		return err
	})
	if o != done {
		return stepErr(o, err)
	}
	id.CheckAt = t.now()
	if err := t.p.w.PutIdentity(id); err != nil {
		return err
	}
	t.p.mem.identity = &id
	return nil
}

// discoverTypes maps the token's history scopes to the conversation types it may read.
func discoverTypes(scopes []string) []string {
	var types []string
	for _, ty := range []string{rm.TypePublicChannel, rm.TypePrivateChannel, rm.TypeMPIM, rm.TypeIM} {
		if slices.Contains(scopes, rm.HistoryScope(ty)) {
			types = append(types, ty)
		}
	}
	return types
}

// due reports whether something last done at last (zero: never) is due again at now,
// every every. A last time after now was written by a clock that was ahead, so its age
// is unknown: it is due, rather than waited for until the clock catches up.
func due(last, now time.Time, every time.Duration) bool {
	return last.IsZero() || last.After(now) || now.Sub(last) >= every
}

// discover lists the conversations the bot is a member of (users.conversations, for
// the types its scopes allow) at most every InfoRefresh, and stores new ones. A
// listing cut short adds nothing: the next tick tries again.
func (s *setup) discover() error {
	t, mem := s.t, &s.t.p.mem
	if !t.p.cfg.Discover || !due(mem.lastDiscover, t.now(), t.p.cfg.InfoRefresh) {
		return nil
	}
	types := discoverTypes(mem.identity.Scopes)
	if len(types) == 0 {
		t.report.skip("discover: the token has none of channels:history, groups:history, im:history, mpim:history")
		mem.lastDiscover = t.now()
		return nil
	}
	var found []rm.ConversationInfo
	cursor := ""
	for {
		var page []rm.ConversationInfo
		var next string
		o, err := t.do(s.gate(rm.MethodUsersConversations), call{what: "discover"}, func(ctx context.Context) (err error) {
			page, next, err = t.p.src.MemberConversations(ctx, types, cursor)
			return err
		})
		if o != done {
			return stepErr(o, err)
		}
		found = append(found, page...)
		if next == "" || next == cursor {
			break
		}
		cursor = next
	}
	now := t.now()
	if err := t.p.w.PutDiscovered(found, now); err != nil {
		return err
	}
	mem.lastDiscover = now
	return nil
}

// refreshConversations makes sure every configured conversation is stored, reads
// conversations.info where due (first seen, hourly, or after an error once its retry
// time has come), and decides which conversations this tick may read.
func (s *setup) refreshConversations() error {
	t := s.t
	convs, err := t.p.w.EnsureConversations(t.p.cfg.Conversations)
	if err != nil {
		return err
	}
	for _, c := range convs {
		now := t.now()
		// A retry time further ahead than InfoRefresh was set by a clock that was
		// ahead: it is not waited for. Nor is any on a process's first tick: a restart
		// is what an operator does after adding a scope or inviting the bot.
		if c.RetryAt != nil && t.no > 1 && now.Before(*c.RetryAt) && !c.RetryAt.After(now.Add(t.p.cfg.InfoRefresh)) {
			continue // reported once; retried no more than every InfoRefresh
		}
		if c.InfoReadAt == nil || due(*c.InfoReadAt, now, t.p.cfg.InfoRefresh) {
			var info rm.ConversationInfo
			o, err := t.do(s.gate(rm.MethodConversationInfo), call{ch: c.ID, whole: true}, func(ctx context.Context) (err error) {
				info, err = t.p.src.ConversationInfo(ctx, c.ID)
				return err
			})
			if o != done {
				if err := stepErr(o, err); err != nil {
					return err
				}
				continue // failed: recorded
			}
			if err := t.p.w.UpdateConversation(c.ID, func(c *rm.Conversation) { c.ApplyInfo(info, t.now()) }); err != nil {
				return err
			}
			if info.IsArchived {
				continue
			}
		} else if c.IsArchived {
			continue
		}
		t.convs.add(c.ID)
	}
	return nil
}

// loadWatched reads the watched set for this tick's streams, brings back into the
// rotation what a longer tracking horizon covers again, and re-queues the messages
// still waiting for locate.
func (s *setup) loadWatched() error {
	t := s.t
	watched := map[rm.Ref]bool{}
	threads := map[rm.Ref]bool{}
	err := t.p.store.View(func(tx rm.Tx) error {
		return tx.Watched(func(r rm.Ref) error {
			watched[r] = true
			m, ok, err := tx.Message(r.Channel, r.TS)
			switch {
			case err != nil:
				return err
			case ok && m.IsReply():
				threads[rm.Ref{Channel: r.Channel, TS: m.ThreadTS}] = true
			case ok && m.IsParent():
				threads[r] = true
			}
			return nil
		})
	})
	if err != nil {
		return rm.StoreErr(err)
	}
	if err := s.unretire(); err != nil {
		return err
	}
	t.watched, t.watchedThreads = watched, threads
	t.work.loadLocate()
	return nil
}

// unretire runs when the horizon no longer covers what was retired: a conversation
// whose newest retired message is within the horizon (or any, with no horizon).
func (s *setup) unretire() error {
	t := s.t
	var cutoff rm.TS
	if h := t.p.cfg.Tracking.Horizon; h > 0 {
		cutoff = rm.TSFromUnix(t.slackNow().Add(-h).Unix())
	}
	for _, ch := range t.convs.sorted() {
		var c rm.Conversation
		err := t.p.store.View(func(tx rm.Tx) error {
			var err error
			c, _, err = tx.Conversation(ch)
			return err
		})
		if err != nil {
			return rm.StoreErr(err)
		}
		if c.RetiredTo == "" || (cutoff != "" && !cutoff.Before(c.RetiredTo)) {
			continue
		}
		n, err := t.p.w.Unretire(ch, cutoff)
		if err != nil {
			return err
		}
		t.p.log.Info("tracking horizon covers retired messages again; they rotate again", "channel", ch, "messages", n)
	}
	return nil
}
