package poller

import (
	"context"
	"fmt"
	"slices"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// reactionsStream is the reactions.get stream: each watched message read before
// (top-level or reply) and not read since the tick started is refreshed with one call
// of its own, least recently read first. reactions.get is Tier 3 (about 50 a minute)
// where history and replies may be 1: it keeps the watched class fresh however
// scattered it is. It cannot find what was never read nor discover new replies: a
// parent whose latest_reply moved still has its thread queued for the replies
// stream. It runs only when the token has reactions:read.
type reactionsStream struct {
	t *tick
	g gate
	// noReactions is memory's: the watched messages reactions.get answered
	// message_not_found for.
	noReactions map[rm.Ref]bool
	// reads counts the watched messages it re-read this tick.
	reads int
}

func newReactionsStream(t *tick, cap int) *reactionsStream {
	return &reactionsStream{
		t: t, g: gate{method: rm.MethodReactionsGet, capName: "reactions_calls", left: cap},
		noReactions: t.p.mem.noReactions,
	}
}

func (rs *reactionsStream) gate() *gate   { return &rs.g }
func (rs *reactionsStream) enabled() bool { return rs.t.reactionsUsable() }

func (rs *reactionsStream) tally(s *rotationSample) {
	s.reads += rs.reads
	s.watched += rs.reads
}

func (rs *reactionsStream) run() error {
	t := rs.t
	due, err := rs.due()
	if err != nil {
		return err
	}
	for _, ref := range due {
		var m rm.Message
		started := t.now()
		what := fmt.Sprintf("%s/%s: reactions.get", ref.Channel, ref.TS)
		o, err := t.do(&rs.g, call{ch: ref.Channel, item: true, what: what}, func(ctx context.Context) (err error) {
			m, err = t.p.src.ReactionsGet(ctx, ref)
			return err
		})
		switch o {
		case stopped, fatal:
			return stepErr(o, err)
		case gone:
			// Not proof of absence: a deleted parent whose replies live on is a
			// tombstone in conversations.history, and reactions.get does not know
			// it. A complete history read decides (README, "Replace on read"):
			// reactions.get leaves it alone.
			rs.noReactions[ref] = true
			continue
		case failed, skipped:
			continue
		}
		m.Channel = ref.Channel
		if m.TS != ref.TS {
			t.report.skip("%s/%s: reactions.get answered for ts %s; ignored", ref.Channel, ref.TS, m.TS)
			continue
		}
		if err := t.vetReactionsGet(&m); err != nil {
			return err
		}
		if _, err := t.applyReads([]rm.Message{m}, nil, started); err != nil {
			return err
		}
		rs.reads++
		t.report.add(func(s *rm.TickSummary) { s.TailRead++ })
	}
	return nil
}

// due lists the watched messages to refresh: read before, of an eligible
// conversation, not read since the tick started (or read "in the future": the clock
// was set back), least recently read first.
func (rs *reactionsStream) due() ([]rm.Ref, error) {
	t := rs.t
	refs := make([]rm.Ref, 0, len(t.watched))
	for r := range t.watched {
		if t.convs.has(r.Channel) && !rs.noReactions[r] {
			refs = append(refs, r)
		}
	}
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
