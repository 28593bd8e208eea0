package poller

import (
	"errors"
	"slices"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// reactionsUsable reports whether the tick may call reactions.get: the token has
// reactions:read (auth.test's X-OAuth-Scopes) and the budget allows it.
func (t *tick) reactionsUsable() bool {
	return t.p.identity != nil && slices.Contains(t.p.identity.Scopes, rm.ScopeReactionsRead) && t.p.cfg.Budget.ReactionsCalls > 0
}

// runReactions is the reactions.get stream: each watched message read before (top-level
// or reply) and not read since the tick started is refreshed with one call of its own,
// least recently read first. reactions.get is Tier 3 (about 50 a minute) where history
// and replies may be 1: it keeps the watched class fresh however scattered it is. It
// cannot find what was never read nor discover new replies: a parent whose
// latest_reply moved still has its thread queued for the replies stream.
func (t *tick) runReactions() error {
	due, err := t.reactionsDue()
	if err != nil {
		return err
	}
	for _, ref := range due {
		var m rm.Message
		started := t.now()
		err := t.do(t.reactions, func() (err error) {
			m, err = t.p.src.ReactionsGet(t.ctx, ref)
			return err
		})
		if err != nil {
			if errors.Is(err, errStreamStop) {
				return nil
			}
			if ends(err) {
				return err
			}
			switch {
			case rm.CodeOf(err) == "message_not_found":
				// Not proof of absence: a deleted parent whose replies live on is a
				// tombstone in conversations.history, and reactions.get does not know
				// it. A history read decides (rule 4); reactions.get leaves it alone.
				t.mu.Lock()
				t.p.noReactions[ref] = true
				t.mu.Unlock()
			case rm.ClassOf(err) == rm.ClassConversation:
				if err := t.conversationFailed(ref.Channel, err); err != nil {
					return err
				}
			default:
				t.skip("%s/%s: reactions.get: %v", ref.Channel, ref.TS, err)
			}
			continue
		}
		m.Channel = ref.Channel
		if m.TS != ref.TS {
			t.skip("%s/%s: reactions.get answered for ts %s; ignored", ref.Channel, ref.TS, m.TS)
			continue
		}
		if err := t.vetReactionsGet(&m); err != nil {
			return err
		}
		if _, err := t.applyReads([]rm.Message{m}, nil, started); err != nil {
			return err
		}
		t.mu.Lock()
		t.reads++
		t.watchedReads++
		t.sum.TailRead++
		t.mu.Unlock()
	}
	return nil
}

// reactionsDue lists the watched messages to refresh: read before, of an eligible
// conversation, not read since the tick started (or read "in the future": the clock
// was set back), least recently read first.
func (t *tick) reactionsDue() ([]rm.Ref, error) {
	t.mu.Lock()
	refs := make([]rm.Ref, 0, len(t.watched))
	for r := range t.watched {
		if t.eligible[r.Channel] && !t.p.noReactions[r] {
			refs = append(refs, r)
		}
	}
	t.mu.Unlock()
	sortRefs(refs)
	type item struct {
		ref  rm.Ref
		read time.Time
	}
	var items []item
	now := t.now()
	err := t.p.store.View(func(tx rm.Tx) error {
		for _, r := range refs {
			m, ok, err := tx.Message(r.Channel, r.TS)
			if err != nil {
				return err
			}
			if !ok || m.LastPolledAt == nil || m.Deleted {
				continue
			}
			if at := *m.LastPolledAt; at.Before(t.start) || at.After(now) {
				if at.After(now) {
					at = time.Time{}
				}
				items = append(items, item{r, at})
			}
		}
		return nil
	})
	if err != nil {
		return nil, rm.StoreErr(err)
	}
	slices.SortStableFunc(items, func(a, b item) int { return a.read.Compare(b.read) })
	out := make([]rm.Ref, len(items))
	for i := range items {
		out[i] = items[i].ref
	}
	return out, nil
}
