package poller

import (
	"errors"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// neverAge is the staleness a never-read tracked message counts for when ranges are
// compared: more than any read one, so placeholders (track, undecodable in a walk)
// are read first.
const neverAge = 30 * 24 * time.Hour

// historyAction is what the history stream does with its next call(s).
type historyAction struct {
	head *rm.Conversation // read this conversation's bulk window
	rng  *span            // or re-read this range of stored messages
}

// runHistory is the conversations.history stream: head reads (a conversation's bulk
// window, its new messages) and tail ranges (stored messages re-read a page at a time),
// in the order the scheduler picks, until nothing is due, the cap is spent or the soft
// deadline passes.
func (t *tick) runHistory() error {
	for {
		act, err := t.nextHistory()
		if err != nil {
			return err
		}
		switch {
		case act.head != nil:
			err = t.readHead(*act.head)
		case act.rng != nil:
			err = t.readRange(act.rng)
		default:
			return nil
		}
		if err != nil {
			if errors.Is(err, errStreamStop) {
				return nil
			}
			if ends(err) {
				return err
			}
		}
	}
}

// nextHistory picks the history stream's next action:
//
//  1. a head read the bound forces: a conversation never read, a walk to finish, or
//     one whose last head read is older than the head bound;
//  2. a watched range, while the watched class is below its share of the calls (and
//     reactions.get is not refreshing it);
//  3. else whichever fixes more staleness, in message-seconds: the best tail range
//     (the sum of its due messages' ages) or the best head read (the messages the
//     conversation's arrival rate predicts since its last head read, each as old on
//     average as half that time);
//  4. with no tail range due, a head read of a conversation not read this tick.
func (t *tick) nextHistory() (historyAction, error) {
	heads, err := t.headCandidates()
	if err != nil {
		return historyAction{}, err
	}
	// Forced heads go first while they have had at most half of the stream's calls
	// this tick (a conversation never read, always): the bound is computed from the
	// configured rate, and when calls come slower than that (Retry-After, slow
	// answers) forced heads alone would take every call and starve the rotation.
	// The stalest forced head first (never read counts as stalest), so that every
	// conversation gets its turn when only some can be read in a tick.
	var forced *rm.Conversation
	var forcedAge time.Duration
	for i := range heads {
		if heads[i].forced && (forced == nil || heads[i].age > forcedAge) {
			forced, forcedAge = &heads[i].c, heads[i].age
		}
	}
	if forced != nil && (forced.HeadReadAt == nil || t.headsWithinHalf()) {
		return historyAction{head: forced}, nil
	}
	if !t.reactionsUsable() && t.owesWatched(t.history) {
		a, ok, err := t.watchedAnchor()
		if err != nil {
			return historyAction{}, err
		}
		if ok {
			sp, err := t.pickRange(a, true)
			if err != nil {
				return historyAction{}, err
			}
			t.spendWatched(t.history)
			return historyAction{rng: &sp}, nil
		}
	}
	a, ok, err := t.tailAnchor()
	if err != nil {
		return historyAction{}, err
	}
	var best *headCandidate
	for i := range heads {
		if best == nil || heads[i].value > best.value || (!ok && heads[i].age > best.age) {
			best = &heads[i]
		}
	}
	if !ok {
		if forced != nil {
			return historyAction{head: forced}, nil
		}
		if best != nil {
			return historyAction{head: &best.c}, nil
		}
		return historyAction{}, nil
	}
	sp, err := t.pickRange(a, false)
	if err != nil {
		return historyAction{}, err
	}
	if best != nil && best.value > sp.value {
		return historyAction{head: &best.c}, nil
	}
	return historyAction{rng: &sp}, nil
}

// headShare is the automatic head bound's share of the history rate, inverted: head
// reads of every conversation take one call in headShare. It is what new messages
// cost the rotation of stored ones (a tenth: a rotation stays within about 1.1× of
// the physical limit), and it sets how late a new message may appear in a quiet
// conversation: 10 calls per conversation, 30 minutes for 3 at 1 request a minute.
const headShare = 10

// headsWithinHalf reports whether head reads have had at most half of the history
// stream's calls this tick, counting the next.
func (t *tick) headsWithinHalf() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return 2*t.headCalls <= t.history.calls+1
}

// headCandidate is a conversation whose head may be read this tick.
type headCandidate struct {
	c      rm.Conversation
	age    time.Duration
	forced bool
	value  float64 // expected staleness fixed, message-seconds
}

// headBound is the longest a conversation's head may go unread: the configured bound,
// else the time in which head reads of every eligible conversation take a tenth of
// the history rate, at least one tick interval.
func (t *tick) headBound(n int) time.Duration {
	if b := t.p.cfg.Tracking.HeadMaxAge; b > 0 {
		return b
	}
	return max(t.p.cfg.Interval, time.Duration(headShare*n)*t.p.cfg.spacing(rm.MethodHistory))
}

// headCandidates returns the eligible conversations whose head was not read this
// tick. A head read time in the future (the clock was set back) counts as due: a
// persisted time is never trusted to be in the past.
func (t *tick) headCandidates() ([]headCandidate, error) {
	ids := t.eligibleIDs()
	now := t.now()
	bound := t.headBound(len(ids))
	var out []headCandidate
	err := t.p.store.View(func(tx rm.Tx) error {
		for _, id := range ids {
			t.mu.Lock()
			done, rate := t.headDone[id], t.p.arrivals[id]
			t.mu.Unlock()
			if done {
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
			h.value = rate * secs * secs / 2
			out = append(out, h)
		}
		return nil
	})
	return out, rm.StoreErr(err)
}

// readHead reads one conversation's bulk window (a fresh walk, or the rest of one cut
// short), then records the head read and the conversation's arrival rate.
func (t *tick) readHead(c rm.Conversation) error {
	t.mu.Lock()
	t.headDone[c.ID] = true
	t.mu.Unlock()
	fresh, pages, err := t.sweep(c)
	t.mu.Lock()
	t.headCalls += pages
	t.mu.Unlock()
	if pages == 0 || (ends(err) && !errors.Is(err, errStreamStop)) {
		// Nothing was read (the stream stopped first, the read failed): the head
		// is as old as it was.
		return err
	}
	now := t.now()
	if c.HeadReadAt != nil && now.After(*c.HeadReadAt) {
		// Messages per second since the last head read, smoothed over a few reads.
		const alpha = 0.3
		obs := float64(fresh) / now.Sub(*c.HeadReadAt).Seconds()
		t.mu.Lock()
		t.p.arrivals[c.ID] = alpha*obs + (1-alpha)*t.p.arrivals[c.ID]
		t.mu.Unlock()
	}
	if uerr := t.p.w.UpdateConversation(c.ID, func(c *rm.Conversation) { c.HeadReadAt = &now }); uerr != nil {
		return uerr
	}
	return err
}

// countHeadReads adds a head page's re-read tracked messages to the tick's throughput
// and its new ones to fresh.
func (t *tick) countHeadReads(out []rm.Applied, fresh *int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range out {
		switch {
		case out[i].Fresh:
			*fresh++
		case out[i].IsTracked():
			t.reads++
			if t.watched[rm.Ref{Channel: out[i].Channel, TS: out[i].TS}] {
				t.watchedReads++
			}
		}
	}
}

// learnPageCap notes the server's page cap from a page cut short of the limit asked
// with more to come (a non-Marketplace app gets 15 whatever it asks), and reports
// whether this page taught it.
func (t *tick) learnPageCap(asked int, page *rm.Page) bool {
	n := len(page.Messages) + len(page.Skipped)
	if page.NextCursor == "" || n == 0 || n >= asked {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.p.pageCap != 0 && t.p.pageCap <= n {
		return false
	}
	t.p.pageCap = n
	t.p.log.Info("conversations.history pages hold at most this many messages; tail ranges are sized to it", "page_cap", n)
	return true
}

// pageSize is the number of stored messages a tail range covers: the learned page
// cap, or the most a page may hold while it is unknown.
func (t *tick) pageSize() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.p.pageCap > 0 {
		return t.p.pageCap
	}
	return rm.HistoryPageLimit
}
