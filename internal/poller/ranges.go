package poller

import (
	"fmt"
	"slices"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// span is a tail range: the stored timeline messages of one conversation from oldest
// to latest (both included), at most a page of them, re-read with one
// conversations.history call (oldest, latest, inclusive, limit = the page size).
type span struct {
	ch             string
	oldest, latest rm.TS
	anchor         rm.Ref
	// refs are the stored timeline messages the range covers; dueRefs those of them
	// the rotation wanted, the anchor among them.
	refs    []rm.Ref
	dueRefs []rm.Ref
	value   float64 // the staleness it fixes: the due messages' ages, in seconds
}

// tailRanges are the history stream's tail ranges: stored messages re-read a page at a
// time, least recently read first, each range one tile of its conversation.
type tailRanges struct {
	h *historyStream
	// tried holds the anchors picked this tick, read or not: an entry whose read
	// advanced nothing (undecodable, failing) is not picked again.
	tried map[rm.Ref]bool
	// calls are the history calls of tail ranges this tick: the rotation's share.
	calls int
}

// due reports whether the history stream should re-read m this tick: a tracked
// timeline message of an eligible conversation not read since the tick started (a
// last read in the future means the clock was set back: due), not backing off, not
// waiting for locate, not tried already this tick.
func (tr *tailRanges) due(m *rm.Message) bool {
	if !m.IsTracked() || !m.InTimeline() {
		return false
	}
	t := tr.h.t
	ref := rm.Ref{Channel: m.Channel, TS: m.TS}
	if !t.convs.has(m.Channel) || tr.tried[ref] || t.work.awaitingLocate(ref) || t.p.mem.backoff.waiting(ref, t.p.mem.tickNo) {
		return false
	}
	return m.LastPolledAt == nil || m.LastPolledAt.Before(t.start) || m.LastPolledAt.After(t.now())
}

// anchor returns the tracked timeline message due for a history re-read whose own
// read is the oldest. Entries past the tracking horizon met on the way are retired
// (they leave the index).
func (tr *tailRanges) anchor() (rm.Message, bool, error) {
	t := tr.h.t
	now := t.slackNow() // for the horizon: ages of ts values are Slack's
	var retire []rm.Ref
	m, ok, err := t.stalestInTail(func(m *rm.Message) bool {
		if !tr.due(m) {
			return false
		}
		if t.pastHorizon(m, now) {
			retire = append(retire, rm.Ref{Channel: m.Channel, TS: m.TS})
			return false
		}
		return true
	}, func(m *rm.Message) *time.Time { return m.LastPolledAt })
	if err != nil {
		return rm.Message{}, false, err
	}
	return m, ok, t.p.w.Retire(retire)
}

// watchedAnchor returns the least recently read watched timeline message due for a
// history re-read.
func (tr *tailRanges) watchedAnchor() (rm.Message, bool, error) {
	t := tr.h.t
	now := t.now()
	return t.stalestOf(t.watched, tr.due, func(a, b *rm.Message) bool { return age(a, now) > age(b, now) })
}

// pick chooses the tail range that contains anchor: the anchor's tile, the page
// of consecutive stored timeline messages that Tx.TimelineTile numbers from the
// conversation's oldest (with watchedFirst, the window of a page that contains the
// anchor and fixes the most watched staleness, when it fixes more than the tile: the
// watched class's share). Tiles are fixed by the store's contents, not by when their messages
// were last read: a rotation reads each tile whole once, whatever else (thread reads
// refreshing parents, head reads, watched ranges) refreshed parts of it meanwhile.
// Ranges cut by read times drifted after such refreshes and overlapped their
// neighbours, an extra call per rotation.
func (tr *tailRanges) pick(anchor rm.Message, watchedFirst bool) (span, error) {
	t := tr.h.t
	p := tr.h.pageSize()
	var tile rm.Tile
	var near []rm.Message
	err := t.p.store.View(func(tx rm.Tx) error {
		var err error
		if tile, err = tx.TimelineTile(anchor.Channel, anchor.TS, p); err != nil || !watchedFirst {
			return err
		}
		near, err = around(tx, anchor, p-1)
		return err
	})
	if err != nil {
		return span{}, rm.StoreErr(err)
	}
	list := tile.Messages
	// The tile's bounds, not its first and last decodable messages: a stored record
	// that cannot be decoded at its edge is read again with it.
	oldest, latest := tile.Oldest, tile.Latest
	if !slices.ContainsFunc(list, func(m rm.Message) bool { return m.TS == anchor.TS }) {
		// Not in the timeline (a placeholder is), or undecodable: read it alone.
		list = []rm.Message{anchor}
		oldest, latest = anchor.TS, anchor.TS
	} else if watchedFirst {
		if w, v := tr.mostWatched(near, anchor.TS, p); v > sum(tr.watchedValues(list, anchor.TS)) {
			list = w
			oldest, latest = w[0].TS, w[len(w)-1].TS
		}
	}
	now := t.now()
	sp := span{ch: anchor.Channel, oldest: oldest, latest: latest, anchor: rm.Ref{Channel: anchor.Channel, TS: anchor.TS}}
	for i := range list {
		m := &list[i]
		sp.refs = append(sp.refs, rm.Ref{Channel: m.Channel, TS: m.TS})
		if m.TS == anchor.TS || tr.due(m) {
			sp.dueRefs = append(sp.dueRefs, rm.Ref{Channel: m.Channel, TS: m.TS})
			sp.value += age(m, now).Seconds()
		}
	}
	return sp, nil
}

// around returns the stored timeline messages within n of anchor either way, and the
// anchor, ascending by ts.
func around(tx rm.Tx, anchor rm.Message, n int) ([]rm.Message, error) {
	list, err := tx.TimelineBefore(anchor.Channel, anchor.TS, n)
	if err != nil {
		return nil, err
	}
	slices.Reverse(list)
	list = append(list, anchor)
	after := 0
	err = tx.Timeline(anchor.Channel, anchor.TS, "", func(m rm.Message) error {
		if m.TS == anchor.TS {
			return nil
		}
		if after++; after > n {
			return rm.ErrStopIteration
		}
		list = append(list, m)
		return nil
	})
	return list, err
}

// mostWatched returns the window of p consecutive messages of list containing the
// message ts that fixes the most watched staleness, the earliest of equals, and that
// staleness. Each message's part is worked out once: the windows overlap, and with
// a page of 999 a window-by-window look repeated it a million times a call.
func (tr *tailRanges) mostWatched(list []rm.Message, ts rm.TS, p int) ([]rm.Message, float64) {
	a := slices.IndexFunc(list, func(m rm.Message) bool { return m.TS == ts })
	vals := tr.watchedValues(list, ts)
	var best []rm.Message
	most := -1.0
	for i := max(0, a-p+1); i <= a; i++ {
		end := min(i+p, len(list))
		if v := sum(vals[i:end]); v > most {
			best, most = list[i:end], v
		}
	}
	return best, most
}

// watchedValues returns, for each of msgs, the staleness a read of it fixes in the
// watched class: its age in seconds if it is watched and due (the anchor, ts, counts
// as due), else 0. Windows are compared by their sums; a count of the watched
// messages instead made a window over the part of a cluster read a tick ago as good
// as one reaching the rest, the earliest of equals won, and a cluster of two pages
// was read one new message a call.
func (tr *tailRanges) watchedValues(msgs []rm.Message, anchor rm.TS) []float64 {
	t := tr.h.t
	now := t.now()
	vals := make([]float64, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		if t.watched[rm.Ref{Channel: m.Channel, TS: m.TS}] && (m.TS == anchor || tr.due(m)) {
			vals[i] = age(m, now).Seconds()
		}
	}
	return vals
}

// sum adds vals in order.
func sum(vals []float64) float64 {
	v := 0.0
	for _, x := range vals {
		v += x
	}
	return v
}

// read re-reads a tail range: conversations.history from oldest to latest,
// inclusive, a page at a time to the empty cursor. Every message returned is applied,
// replaced whole. A read to its empty cursor is complete for the range: a stored
// message in it that did not come back is marked missing, or, if it was never read,
// handed to locate (README, "Replace on read"). A page cut short of the limit teaches
// the page cap and ends the read (what came back is applied; the next range is sized
// to the cap). A read cut short otherwise applies what it read and marks nothing.
func (tr *tailRanges) read(sp *span) error {
	h, t := tr.h, tr.h.t
	tr.tried[sp.anchor] = true
	before, err := t.readTimes(sp.dueRefs)
	if err != nil {
		return err
	}
	r := historyRead{
		req:  rm.HistoryRequest{Channel: sp.ch, Oldest: sp.oldest, Latest: sp.latest, Inclusive: true, Limit: h.pageSize()},
		call: call{ch: sp.ch, what: fmt.Sprintf("%s: re-reading %s to %s", sp.ch, sp.oldest, sp.latest)},
		// An undecodable message the store holds stays as it is (not absent); one
		// it does not hold is not tracked from here: a range covers old messages
		// the store never had, and the next range over them meets it again.
		incomplete: "range", seen: map[rm.TS]bool{},
		keep: func(msgs []rm.Message) []rm.Message { return inSpan(msgs, sp) },
	}
	r.each = func(*rm.Page, []rm.Applied) (bool, error) { return !r.learned, nil }
	resumed := false
	cut, ok := h.mem.rangeResume[sp.ch]
	delete(h.mem.rangeResume, sp.ch)
	if ok && cut.oldest == sp.oldest && cut.latest == sp.latest && cut.limit == r.req.Limit {
		// The pages before cursor were read by an earlier tick: this read cannot
		// prove a message absent, but it reaches the range's oldest messages.
		r.req.Cursor, resumed = cut.cursor, true
		for ref, at := range cut.before {
			if _, due := before[ref]; due {
				before[ref] = at
			}
		}
	}
	o, complete, err := h.pages(&r)
	tr.calls += r.pages
	switch o {
	case stopped, fatal:
		if o == stopped && r.req.Cursor != "" {
			// Cut between pages by the tick's end (cap, soft deadline): the next
			// read of the range goes on from here. Begun again, it would read the
			// same newest page (Slack's order) and end at the same place, tick
			// after tick: the oldest messages of the range never read, its anchor
			// never reached, and the calls of every other range spent on it.
			h.mem.rangeResume[sp.ch] = rangeCut{sp.oldest, sp.latest, r.req.Limit, r.req.Cursor, before}
		}
		tr.count(sp, r.seen, false)
		return stepErr(o, err)
	case failed:
		return nil
	}
	provable := complete && !resumed && !r.gap
	if provable {
		placeholders, err := t.p.w.MarkMissing(sp.ch, sp.oldest, sp.latest, true, r.seen, true, t.now())
		if err != nil {
			return err
		}
		t.work.queueLocate(placeholders)
	}
	tr.count(sp, r.seen, provable)
	if err := t.retirePastHorizon(sp.refs); err != nil {
		return err
	}
	if r.learned {
		return nil // sized for a larger page: the anchor was not reached, not failed
	}
	return tr.noteProgress(before)
}

// inSpan keeps the messages of a page inside the range: Slack honours oldest and
// latest, but a message outside them would be a read the range did not ask for.
func inSpan(msgs []rm.Message, sp *span) []rm.Message {
	out := msgs[:0:0]
	for _, m := range msgs {
		if m.Channel == sp.ch && !m.TS.Before(sp.oldest) && !sp.latest.Before(m.TS) {
			out = append(out, m)
		}
	}
	return out
}

// count adds the tracked messages a range re-read to the stream's throughput.
func (tr *tailRanges) count(sp *span, seen map[rm.TS]bool, complete bool) {
	h := tr.h
	for _, r := range sp.refs {
		if complete || seen[r.TS] {
			h.reads++
			if h.t.watched[r] {
				h.watchedReads++
			}
		}
	}
	h.t.report.add(func(s *rm.TickSummary) { s.TailRead += len(sp.refs) })
}

// noteProgress backs off each tail entry of a range read (before: their last_polled_at
// before it) that the read advanced nothing for — still in the rotation and not read
// since (an undecodable message, a failing read) — for 2, 4, … up to 64 ticks, so that
// it cannot take a history call on every tick; a read that advances it ends the
// backoff. All of the range's due entries are noted, not its anchor alone: after a
// failed read each of them, the stalest in turn, anchored the same range again, as
// many calls in a tick as the tile has messages.
func (tr *tailRanges) noteProgress(before map[rm.Ref]*time.Time) error {
	t := tr.h.t
	now := map[rm.Ref]rm.Message{}
	err := t.p.store.View(func(tx rm.Tx) error {
		for r := range before {
			m, ok, err := tx.Message(r.Channel, r.TS)
			if err != nil {
				return err
			}
			if ok {
				now[r] = m
			}
		}
		return nil
	})
	if err != nil {
		return rm.StoreErr(err)
	}
	for ref, was := range before {
		m, ok := now[ref]
		stuck := ok && m.IsTracked() && sameTime(m.LastPolledAt, was)
		switch {
		case !stuck:
			t.p.mem.backoff.end(ref)
		case !t.work.awaitingLocate(ref):
			t.p.mem.backoff.lengthen(ref, t.p.mem.tickNo)
		}
		// Waiting for locate, it keeps its run: locate backs it off again if its
		// answer leaves it unread, and ending the run here would hold that backoff
		// at 2 ticks.
	}
	return nil
}
