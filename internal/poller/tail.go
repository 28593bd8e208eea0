package poller

import (
	"cmp"
	"slices"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

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
			if !t.convs.has(e.Channel) {
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

// stalestOf reads the messages of set (one of the tick's watched sets) and returns
// the one take accepts that ranks first by older; ties go to the first by channel and
// ts, whatever the map order.
func (t *tick) stalestOf(set map[rm.Ref]bool, take func(*rm.Message) bool, older func(a, b *rm.Message) bool) (rm.Message, bool, error) {
	refs := make([]rm.Ref, 0, len(set))
	for r := range set {
		refs = append(refs, r)
	}
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

// age is how stale m is, for comparing ranges and heads.
func age(m *rm.Message, now time.Time) time.Duration {
	if m.LastPolledAt == nil || m.LastPolledAt.After(now) {
		return neverAge
	}
	return now.Sub(*m.LastPolledAt)
}

// pastHorizon reports whether the tracking policy retires m: not watched and older
// than the horizon (by its ts, Slack's clock; now is Slack's time, tick.slackNow).
func (t *tick) pastHorizon(m *rm.Message, now time.Time) bool {
	h := t.p.cfg.Tracking.Horizon
	if h <= 0 || t.watched[rm.Ref{Channel: m.Channel, TS: m.TS}] {
		return false
	}
	sec, _, ok := m.TS.Parts()
	return ok && now.Sub(time.Unix(int64(min(sec, 1<<62)), 0)) > h
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

// sortRefs sorts refs by channel, then ts.
func sortRefs(refs []rm.Ref) { slices.SortFunc(refs, rm.Ref.Compare) }

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
