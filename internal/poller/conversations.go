package poller

import (
	"fmt"
	"slices"
	"strings"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// authenticate resolves the token's identity with auth.test once per process (the bot
// user and bot IDs classify own posts; the scopes drive discover: member). Later ticks
// use the cached answer.
func (t *tick) authenticate() error {
	if t.p.identity != nil {
		return nil
	}
	var id rm.Identity
	err := t.do(t.setupStream(rm.MethodAuthTest), func() (err error) {
		id, err = t.p.src.AuthTest(t.ctx)
		return err
	})
	if err != nil {
		if ends(err) {
			return err
		}
		return fmt.Errorf("checking the token: %w", err)
	}
	id.CheckAt = t.now()
	if err := t.p.w.PutIdentity(id); err != nil {
		return err
	}
	t.p.identity = &id
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
// the types its scopes allow) at most every InfoRefresh, and stores new ones.
func (t *tick) discover() error {
	if !t.p.cfg.Discover || !due(t.p.lastDiscover, t.now(), t.p.cfg.InfoRefresh) {
		return nil
	}
	types := discoverTypes(t.p.identity.Scopes)
	if len(types) == 0 {
		t.skip("discover: the token has none of channels:history, groups:history, im:history, mpim:history")
		t.p.lastDiscover = t.now()
		return nil
	}
	var found []rm.ConversationInfo
	cursor := ""
	for {
		var page []rm.ConversationInfo
		var next string
		err := t.do(t.setupStream(rm.MethodUsersConversations), func() (err error) {
			page, next, err = t.p.src.MemberConversations(t.ctx, types, cursor)
			return err
		})
		if err != nil {
			if ends(err) {
				return err
			}
			t.skip("discover: %v", err)
			return nil // a partial listing adds nothing; try again next tick
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
	t.p.lastDiscover = now
	return nil
}

// refreshConversations makes sure every configured conversation is stored, reads
// conversations.info where due (first seen, hourly, or after an error once its retry
// time has come), and decides which conversations this tick may read.
func (t *tick) refreshConversations() error {
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
			err := t.do(t.setupStream(rm.MethodConversationInfo), func() (err error) {
				info, err = t.p.src.ConversationInfo(t.ctx, c.ID)
				return err
			})
			if err != nil {
				if ends(err) {
					return err
				}
				if err := t.conversationFailed(c.ID, err); err != nil {
					return err
				}
				continue
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
		t.mu.Lock()
		t.eligible[c.ID] = true
		t.mu.Unlock()
	}
	return nil
}

// conversationFailed records a per-conversation error (rule 5): the conversation keeps
// its data, its status says why, it is reported once (when the status changes) and not
// tried again before InfoRefresh has passed; info is re-read then. Transient errors
// change no status.
func (t *tick) conversationFailed(id string, err error) error {
	t.mu.Lock()
	delete(t.eligible, id)
	t.mu.Unlock()
	if rm.ClassOf(err) != rm.ClassConversation {
		t.skip("%s: %v (will retry next tick)", id, err)
		return nil
	}
	code := rm.CodeOf(err)
	status := rm.StatusError
	switch code {
	case rm.StatusNotInChannel, rm.StatusMissingScope, rm.StatusChannelNotFound:
		status = code
	case "is_archived":
		status = rm.StatusArchived
	}
	var needed string
	if ae, ok := err.(*rm.APIError); ok {
		needed = ae.Needed
	}
	var changed bool
	retry := t.now().Add(t.p.cfg.InfoRefresh)
	uerr := t.p.w.UpdateConversation(id, func(c *rm.Conversation) {
		changed = c.Status != status || c.NeededScope != needed
		c.Status, c.NeededScope, c.ErrorDetail = status, needed, err.Error()
		c.IsArchived = c.IsArchived || status == rm.StatusArchived
		c.RetryAt = &retry
		c.InfoReadAt = nil // re-read info when the retry comes
	})
	if changed {
		msg := fmt.Sprintf("%s: %s", id, status)
		if needed != "" {
			msg += " (add the " + needed + " scope to the app and reinstall it)"
		} else if status == rm.StatusNotInChannel {
			msg += " (invite the bot: /invite @yourbot)"
		}
		t.skip("%s; retrying after %s", msg, retry.UTC().Format(time.RFC3339))
	}
	return uerr
}

// conversationOK records a successful read: status ok, error cleared.
func (t *tick) conversationOK(id string, swept bool) error {
	now := t.now()
	return t.p.w.UpdateConversation(id, func(c *rm.Conversation) {
		if c.Status != rm.StatusArchived {
			c.Status = rm.StatusOK
		}
		c.NeededScope, c.ErrorDetail, c.RetryAt = "", "", nil
		if swept {
			c.LastSweptAt = &now
		}
	})
}

// eligibleIDs returns the conversations that may be read this tick, sorted.
func (t *tick) eligibleIDs() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := make([]string, 0, len(t.eligible))
	for id := range t.eligible {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func joinErrs(errs []rm.ItemError) string {
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = string(e.TS) + ": " + e.Err
	}
	return strings.Join(parts, "; ")
}
