package poller

import (
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// neverAge is the staleness a never-read tracked message counts for when ranges are
// compared: more than any read one, so placeholders (track, undecodable in a walk)
// are read first.
const neverAge = 30 * 24 * time.Hour

// historyStream is the conversations.history stream: head reads (a conversation's
// bulk window, its new messages: heads) and tail ranges (stored messages re-read a
// page at a time: tailRanges), both paged by the one pager (pages), in the order next
// picks, until nothing is due, the cap is spent or the soft deadline passes.
type historyStream struct {
	t   *tick
	g   gate
	mem *historyMemory
	// heads and tail are its two kinds of reads, each with its own state.
	heads heads
	tail  tailRanges
	// reads counts the tracked messages it re-read this tick, watchedReads the
	// watched ones among them: its throughput, for the staleness estimates.
	reads, watchedReads int
}

func newHistoryStream(t *tick, cap int) *historyStream {
	h := &historyStream{
		t: t, g: gate{method: rm.MethodHistory, capName: "history_calls", left: cap},
		mem: &t.p.mem.history,
	}
	h.heads = heads{h: h, done: map[string]bool{}}
	h.tail = tailRanges{h: h, tried: map[rm.Ref]bool{}}
	return h
}

func (h *historyStream) gate() *gate   { return &h.g }
func (h *historyStream) enabled() bool { return true }

func (h *historyStream) tally(s *rotationSample) {
	s.reads += h.reads
	s.watched += h.watchedReads
	s.rangeCalls += h.tail.calls
}

// historyAction is what the history stream does with its next call(s).
type historyAction struct {
	head *rm.Conversation // read this conversation's bulk window
	rng  *span            // or re-read this range of stored messages
}

func (h *historyStream) run() error {
	for {
		act, err := h.next()
		if err != nil {
			return err
		}
		switch {
		case act.head != nil:
			err = h.heads.read(*act.head)
		case act.rng != nil:
			err = h.tail.read(act.rng)
		default:
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// next picks the history stream's next action:
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
func (h *historyStream) next() (historyAction, error) {
	heads, err := h.heads.candidates()
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
	if forced != nil && (forced.HeadReadAt == nil || h.heads.withinHalf()) {
		return historyAction{head: forced}, nil
	}
	if !h.t.reactionsUsable() && h.g.owesWatched(h.t.p.cfg.Tracking.WatchedShare) {
		a, ok, err := h.tail.watchedAnchor()
		if err != nil {
			return historyAction{}, err
		}
		if ok {
			sp, err := h.tail.pick(a, true)
			if err != nil {
				return historyAction{}, err
			}
			h.g.watched++
			return historyAction{rng: &sp}, nil
		}
	}
	a, ok, err := h.tail.anchor()
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
	sp, err := h.tail.pick(a, false)
	if err != nil {
		return historyAction{}, err
	}
	if best != nil && best.value > sp.value {
		return historyAction{head: &best.c}, nil
	}
	return historyAction{rng: &sp}, nil
}
