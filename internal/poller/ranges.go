package poller

import (
	"cmp"
	"errors"
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

// historyDue reports whether the history stream should re-read m this tick: a tracked
// timeline message of an eligible conversation not read since the tick started (a
// last read in the future means the clock was set back: due), not backing off, not
// waiting for locate, not tried already this tick.
func (t *tick) historyDue(m *rm.Message) bool {
	if !m.IsTracked() || !m.InTimeline() {
		return false
	}
	ref := rm.Ref{Channel: m.Channel, TS: m.TS}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.eligible[m.Channel] || t.tried[ref] || t.p.unlocated[ref] || t.p.tailBackoff[ref].until > t.p.tickNo {
		return false
	}
	return m.LastPolledAt == nil || m.LastPolledAt.Before(t.start) || m.LastPolledAt.After(t.now())
}

// age is how stale m is, for comparing ranges and heads.
func (t *tick) age(m *rm.Message, now time.Time) time.Duration {
	if m.LastPolledAt == nil || m.LastPolledAt.After(now) {
		return neverAge
	}
	return now.Sub(*m.LastPolledAt)
}

// pastHorizon reports whether the tracking policy retires m: not watched and older
// than the horizon (by its ts, Slack's clock; now is Slack's time, tick.slackNow).
func (t *tick) pastHorizon(m *rm.Message, now time.Time) bool {
	h := t.p.cfg.Tracking.Horizon
	if h <= 0 || t.isWatched(rm.Ref{Channel: m.Channel, TS: m.TS}) {
		return false
	}
	sec, _, ok := m.TS.Parts()
	return ok && now.Sub(time.Unix(int64(min(sec, 1<<62)), 0)) > h
}

func (t *tick) isWatched(ref rm.Ref) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.watched[ref]
}

// retirePastHorizon retires the messages of refs the tracking policy no longer
// rotates: whatever read them, they leave the rotation from here.
func (t *tick) retirePastHorizon(refs []rm.Ref) error {
	if t.p.cfg.Tracking.Horizon <= 0 {
		return nil
	}
	now := t.slackNow() // ages of ts values are Slack's
	var old []rm.Ref
	for _, r := range refs {
		if t.pastHorizon(&rm.Message{Channel: r.Channel, TS: r.TS}, now) {
			old = append(old, r)
		}
	}
	return t.p.w.Retire(old)
}

// tailAnchor returns the tracked timeline message due for a history re-read whose own
// read is the oldest. Entries past the tracking horizon met on the way are retired
// (they leave the index).
func (t *tick) tailAnchor() (rm.Message, bool, error) {
	now := t.slackNow() // for the horizon: ages of ts values are Slack's
	var retire []rm.Ref
	m, ok, err := t.stalestInTail(func(m *rm.Message) bool {
		if !t.historyDue(m) {
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

// stalestInTail walks the tail index from its oldest entry and returns the stored
// message of an eligible conversation that take accepts with the oldest readAt (nil,
// or a time in the future, counts as never read: oldest of all). A parent's place in
// the index is the older of its own read and its thread's, so an entry's readAt is
// never older than its place, and the walk stops at the first entry placed after the
// best found. Taking the first accepted entry instead would spend a history call on
// a parent whose thread alone is stale (and a replies call on a thread whose parent
// alone is): a call that fixes little, and a range read out of its turn.
//
// Entries placed in the future (read while the clock was ahead; it has been set back
// since) sit at the index's end, after every entry read since: unless a never-read
// one comes first, they are looked for there (Tx.TailAfter now). A walk from the
// start alone stopped long before them, and left them unread until the clock caught
// up with their read times.
func (t *tick) stalestInTail(take func(*rm.Message) bool, readAt func(*rm.Message) *time.Time) (rm.Message, bool, error) {
	now := t.now()
	var best rm.Message
	var bestAt time.Time // zero: never read
	var ok bool
	future := func(e rm.TailEntry) bool { return e.RotatedAt != nil && e.RotatedAt.After(now) }
	err := t.p.store.View(func(tx rm.Tx) error {
		var ierr error
		// consider reads e's message and keeps it if it is the stalest so far.
		consider := func(e rm.TailEntry) {
			if !t.isEligible(e.Channel) {
				return
			}
			m, has, err := tx.Message(e.Channel, e.TS)
			if err != nil {
				ierr = err
				return
			}
			if !has || !take(&m) {
				return
			}
			var at time.Time
			if r := readAt(&m); r != nil && !r.After(now) {
				at = *r
			}
			if !ok || at.Before(bestAt) {
				best, bestAt, ok = m, at, true
			}
		}
		_, err := tx.TailOldest(1, func(e rm.TailEntry) bool {
			if ierr != nil || future(e) || ok && (bestAt.IsZero() || e.RotatedAt != nil && !e.RotatedAt.Before(bestAt)) {
				return false // nothing further on is older, or the future part: end the walk
			}
			consider(e)
			return true
		})
		if err != nil || ierr != nil || ok && bestAt.IsZero() {
			return cmp.Or(err, ierr)
		}
		_, err = tx.TailAfter(now, 1, func(e rm.TailEntry) bool {
			if ierr != nil || ok && bestAt.IsZero() {
				return false // end the walk
			}
			consider(e)
			return true
		})
		return cmp.Or(err, ierr)
	})
	return best, ok, rm.StoreErr(err)
}

// watchedAnchor returns the least recently read watched timeline message due for a
// history re-read.
func (t *tick) watchedAnchor() (rm.Message, bool, error) {
	now := t.now()
	return t.stalestOf(t.watched, t.historyDue, func(a, b *rm.Message) bool { return t.age(a, now) > t.age(b, now) })
}

// stalestOf reads the messages of set (a map of the tick's, guarded by mu) and returns
// the one take accepts that ranks first by older; ties go to the first by channel and
// ts, whatever the map order.
func (t *tick) stalestOf(set map[rm.Ref]bool, take func(*rm.Message) bool, older func(a, b *rm.Message) bool) (rm.Message, bool, error) {
	t.mu.Lock()
	refs := make([]rm.Ref, 0, len(set))
	for r := range set {
		refs = append(refs, r)
	}
	t.mu.Unlock()
	sortRefs(refs)
	var best rm.Message
	var ok bool
	err := t.p.store.View(func(tx rm.Tx) error {
		for _, r := range refs {
			m, has, err := tx.Message(r.Channel, r.TS)
			if err != nil {
				return err
			}
			if has && take(&m) && (!ok || older(&m, &best)) {
				best, ok = m, true
			}
		}
		return nil
	})
	return best, ok, rm.StoreErr(err)
}

// pickRange chooses the tail range that contains anchor: the anchor's tile, the page
// of consecutive stored timeline messages that Tx.TimelineTile numbers from the
// conversation's oldest (with watchedFirst, the window of a page that contains the
// anchor and fixes the most watched staleness, when it fixes more than the tile: the
// watched class's share). Tiles are fixed by the store's contents, not by when their messages
// were last read: a rotation reads each tile whole once, whatever else (thread reads
// refreshing parents, head reads, watched ranges) refreshed parts of it meanwhile.
// Ranges cut by read times drifted after such refreshes and overlapped their
// neighbours, an extra call per rotation.
func (t *tick) pickRange(anchor rm.Message, watchedFirst bool) (span, error) {
	p := t.pageSize()
	var tile rm.Tile
	var near []rm.Message
	err := t.p.store.View(func(tx rm.Tx) error {
		var err error
		if tile, err = tx.TimelineTile(anchor.Channel, anchor.TS, p); err != nil || !watchedFirst {
			return err
		}
		near, err = t.around(tx, anchor, p-1)
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
		if w, v := t.mostWatched(near, anchor.TS, p); v > sum(t.watchedValues(list, anchor.TS)) {
			list = w
			oldest, latest = w[0].TS, w[len(w)-1].TS
		}
	}
	now := t.now()
	sp := span{ch: anchor.Channel, oldest: oldest, latest: latest, anchor: rm.Ref{Channel: anchor.Channel, TS: anchor.TS}}
	for i := range list {
		m := &list[i]
		sp.refs = append(sp.refs, rm.Ref{Channel: m.Channel, TS: m.TS})
		if m.TS == anchor.TS || t.historyDue(m) {
			sp.dueRefs = append(sp.dueRefs, rm.Ref{Channel: m.Channel, TS: m.TS})
			sp.value += t.age(m, now).Seconds()
		}
	}
	return sp, nil
}

// around returns the stored timeline messages within n of anchor either way, and the
// anchor, ascending by ts.
func (t *tick) around(tx rm.Tx, anchor rm.Message, n int) ([]rm.Message, error) {
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
func (t *tick) mostWatched(list []rm.Message, ts rm.TS, p int) ([]rm.Message, float64) {
	a := slices.IndexFunc(list, func(m rm.Message) bool { return m.TS == ts })
	vals := t.watchedValues(list, ts)
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
func (t *tick) watchedValues(msgs []rm.Message, anchor rm.TS) []float64 {
	now := t.now()
	vals := make([]float64, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		if t.isWatched(rm.Ref{Channel: m.Channel, TS: m.TS}) && (m.TS == anchor || t.historyDue(m)) {
			vals[i] = t.age(m, now).Seconds()
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

// readRange re-reads a tail range: conversations.history from oldest to latest,
// inclusive, a page at a time to the empty cursor. Every message returned is applied
// (rule 1). A read to its empty cursor is complete for the range: a stored message in
// it that did not come back is marked missing (rule 4), or, if it was never read,
// handed to locate. A page cut short of the limit teaches the page cap and ends the
// read (what came back is applied; the next range is sized to the cap). A read cut
// short otherwise applies what it read and marks nothing.
func (t *tick) readRange(sp *span) error {
	t.mu.Lock()
	t.tried[sp.anchor] = true
	t.mu.Unlock()
	before, err := t.readTimes(sp.dueRefs)
	if err != nil {
		return err
	}
	req := rm.HistoryRequest{Channel: sp.ch, Oldest: sp.oldest, Latest: sp.latest, Inclusive: true, Limit: t.pageSize()}
	seen := map[rm.TS]bool{}
	provable, complete, learned := true, false, false
	t.mu.Lock()
	cut, resumed := t.p.rangeResume[sp.ch]
	delete(t.p.rangeResume, sp.ch)
	t.mu.Unlock()
	if resumed && cut.oldest == sp.oldest && cut.latest == sp.latest && cut.limit == req.Limit {
		// The pages before cursor were read by an earlier tick: this read cannot
		// prove a message absent, but it reaches the range's oldest messages.
		req.Cursor, provable = cut.cursor, false
		for r, at := range cut.before {
			if _, due := before[r]; due {
				before[r] = at
			}
		}
	}
	for {
		var page rm.Page
		started := t.now()
		err := t.do(t.history, func() (err error) {
			page, err = t.p.src.History(t.ctx, req)
			return err
		})
		if err != nil {
			if ends(err) {
				if req.Cursor != "" && errors.Is(err, errStreamStop) {
					// Cut between pages by the tick's end (cap, soft deadline): the
					// next read of the range goes on from here. Begun again, it
					// would read the same newest page (Slack's order) and end at
					// the same place, tick after tick: the oldest messages of the
					// range never read, its anchor never reached, and the calls
					// of every other range spent on it.
					t.mu.Lock()
					t.p.rangeResume[sp.ch] = rangeCut{sp.oldest, sp.latest, req.Limit, req.Cursor, before}
					t.mu.Unlock()
				}
				t.countRange(sp, seen, false)
				return err
			}
			if rm.ClassOf(err) == rm.ClassConversation {
				return t.conversationFailed(sp.ch, err)
			}
			t.skip("%s: re-reading %s to %s: %v", sp.ch, sp.oldest, sp.latest, err)
			break
		}
		t.mu.Lock()
		t.rangeCalls++
		t.mu.Unlock()
		started = t.readAt(started, &page)
		learned = t.learnPageCap(req.Limit, &page)
		t.vetPage(sp.ch, &page, rm.PageHistory, "")
		for _, s := range page.Skipped {
			if s.TS == "" {
				provable = false
				continue
			}
			seen[s.TS] = true // unreadable, not absent
		}
		if len(page.Skipped) > 0 {
			t.skip("%s: %d undecodable message(s): %s", sp.ch, len(page.Skipped), joinErrs(page.Skipped))
		}
		// An undecodable message the store holds stays as it is (not absent); one it
		// does not hold is not tracked from here: a range covers old messages the
		// store never had, and the next range over them meets it again.
		if _, err := t.applyReads(inSpan(page.Messages, sp), seen, started); err != nil {
			return err
		}
		if page.NextCursor == "" {
			complete = true
			break
		}
		if learned {
			break
		}
		if page.NextCursor == req.Cursor {
			t.skip("%s: conversations.history returned the cursor it was given; range left incomplete", sp.ch)
			break
		}
		req.Cursor = page.NextCursor
	}
	if complete && provable {
		placeholders, err := t.p.w.MarkMissing(sp.ch, sp.oldest, sp.latest, true, seen, true, t.now())
		if err != nil {
			return err
		}
		t.queueLocate(placeholders)
	}
	t.countRange(sp, seen, complete && provable)
	if err := t.retirePastHorizon(sp.refs); err != nil {
		return err
	}
	if learned {
		return nil // sized for a larger page: the anchor was not reached, not failed
	}
	return t.noteProgress(before)
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

// countRange adds the tracked messages a range re-read to the tick's throughput.
func (t *tick) countRange(sp *span, seen map[rm.TS]bool, complete bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range sp.refs {
		if complete || seen[r.TS] {
			t.reads++
			if t.watched[r] {
				t.watchedReads++
			}
		}
	}
	t.sum.TailRead += len(sp.refs)
}

// message reads the stored message ref in a read transaction of its own.
func (t *tick) message(ref rm.Ref) (rm.Message, bool, error) {
	var m rm.Message
	var ok bool
	err := t.p.store.View(func(tx rm.Tx) error {
		var err error
		m, ok, err = tx.Message(ref.Channel, ref.TS)
		return err
	})
	return m, ok, rm.StoreErr(err)
}

// readTimes returns the stored last_polled_at of each of refs (nil: never read, or
// not stored).
func (t *tick) readTimes(refs []rm.Ref) (map[rm.Ref]*time.Time, error) {
	out := make(map[rm.Ref]*time.Time, len(refs))
	err := t.p.store.View(func(tx rm.Tx) error {
		for _, r := range refs {
			m, _, err := tx.Message(r.Channel, r.TS)
			if err != nil {
				return err
			}
			out[r] = m.LastPolledAt
		}
		return nil
	})
	return out, rm.StoreErr(err)
}

// noteProgress backs off each tail entry of a range read (before: their last_polled_at
// before it) that the read advanced nothing for — still in the rotation and not read
// since (an undecodable message, a failing read) — for 2, 4, … up to 64 ticks, so that
// it cannot take a history call on every tick; a read that advances it ends the
// backoff. All of the range's due entries are noted, not its anchor alone: after a
// failed read each of them, the stalest in turn, anchored the same range again, as
// many calls in a tick as the tile has messages.
func (t *tick) noteProgress(before map[rm.Ref]*time.Time) error {
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
	t.mu.Lock()
	defer t.mu.Unlock()
	for ref, was := range before {
		m, ok := now[ref]
		stuck := ok && m.IsTracked() && sameTime(m.LastPolledAt, was)
		switch {
		case !stuck:
			delete(t.p.tailBackoff, ref)
		case !t.p.unlocated[ref]:
			t.backOffLocked(ref)
		}
		// Waiting for locate, it keeps its run: locate backs it off again if its
		// answer leaves it unread, and ending the run here would hold that backoff
		// at 2 ticks.
	}
	return nil
}

// backOffLocked lengthens ref's run of tail reads that advanced nothing: it is
// skipped for 2, 4, … up to 64 ticks. t.mu must be held.
func (t *tick) backOffLocked(ref rm.Ref) {
	b := t.p.tailBackoff[ref]
	b.fails++
	b.until = t.p.tickNo + 1<<min(b.fails, 6)
	t.p.tailBackoff[ref] = b
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
