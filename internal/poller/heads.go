package poller

import (
	"errors"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// headShare is the automatic head bound's share of the history rate, inverted: head
// reads of every conversation take one call in headShare. It is what new messages
// cost the rotation of stored ones (a tenth: a rotation stays within about 1.1× of
// the physical limit), and it sets how late a new message may appear in a quiet
// conversation: 10 calls per conversation, 30 minutes for 3 at 1 request a minute.
const headShare = 10

// heads are the history stream's head reads: a conversation's bulk window read newest
// first (walk.go), for its new messages.
type heads struct {
	h *historyStream
	// done holds the conversations whose head was read this tick.
	done map[string]bool
	// calls are the history calls of head reads this tick.
	calls int
}

// withinHalf reports whether head reads have had at most half of the history
// stream's calls this tick, counting the next.
func (hs *heads) withinHalf() bool {
	return 2*hs.calls <= hs.h.g.calls+1
}

// headCandidate is a conversation whose head may be read this tick.
type headCandidate struct {
	c      rm.Conversation
	age    time.Duration
	forced bool
	value  float64 // expected staleness fixed, message-seconds
}

// bound is the longest a conversation's head may go unread: the configured bound,
// else the time in which head reads of every eligible conversation (n) take a tenth
// of the history rate, at least one tick interval.
func (hs *heads) bound(n int) time.Duration {
	cfg := &hs.h.t.p.cfg
	if b := cfg.Tracking.HeadMaxAge; b > 0 {
		return b
	}
	return max(cfg.Interval, time.Duration(headShare*n)*cfg.spacing(rm.MethodHistory))
}

// candidates returns the eligible conversations whose head was not read this tick. A
// head read time in the future (the clock was set back) counts as due: a persisted
// time is never trusted to be in the past.
func (hs *heads) candidates() ([]headCandidate, error) {
	t := hs.h.t
	ids := t.convs.sorted()
	now := t.now()
	bound := hs.bound(len(ids))
	var out []headCandidate
	err := t.p.store.View(func(tx rm.Tx) error {
		for _, id := range ids {
			if hs.done[id] {
				continue
			}
			c, ok, err := tx.Conversation(id)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			h := headCandidate{c: c}
			switch {
			case c.HeadReadAt == nil || c.HeadReadAt.After(now):
				h.age, h.forced = neverAge, true
			default:
				h.age = now.Sub(*c.HeadReadAt)
				h.forced = h.age >= bound || (c.WalkBottom != "" && c.WalkTop != "")
			}
			secs := h.age.Seconds()
			h.value = hs.h.mem.arrivals[id] * secs * secs / 2
			out = append(out, h)
		}
		return nil
	})
	return out, rm.StoreErr(err)
}

// read reads one conversation's bulk window (a fresh walk, or the rest of one cut
// short), then records the head read and the conversation's arrival rate.
func (hs *heads) read(c rm.Conversation) error {
	t := hs.h.t
	hs.done[c.ID] = true
	fresh, pages, err := hs.sweep(c)
	hs.calls += pages
	if pages == 0 || err != nil && !errors.Is(err, errStop) {
		// Nothing was read (the stream stopped first, the read failed): the head
		// is as old as it was.
		return err
	}
	now := t.now()
	if c.HeadReadAt != nil && now.After(*c.HeadReadAt) {
		// Messages per second since the last head read, smoothed over a few reads.
		const alpha = 0.3
		obs := float64(fresh) / now.Sub(*c.HeadReadAt).Seconds()
		arrivals := hs.h.mem.arrivals
		arrivals[c.ID] = alpha*obs + (1-alpha)*arrivals[c.ID]
	}
	if uerr := t.p.w.UpdateConversation(c.ID, func(c *rm.Conversation) { c.HeadReadAt = &now }); uerr != nil {
		return uerr
	}
	return err
}

// count adds a head page's re-read tracked messages to the stream's throughput and
// its new ones to fresh.
func (hs *heads) count(out []rm.Applied, fresh *int) {
	h := hs.h
	for i := range out {
		switch {
		case out[i].Fresh:
			*fresh++
		case out[i].IsTracked():
			h.reads++
			if h.t.watched[rm.Ref{Channel: out[i].Channel, TS: out[i].TS}] {
				h.watchedReads++
			}
		}
	}
}
