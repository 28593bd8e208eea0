package readmodel

import "time"

// tail is phase 2: tracked messages not read yet this tick are re-read least recently
// polled first (never polled first), up to tail_fetches. A thread parent is re-read
// with its whole thread (conversations.replies returns the parent and then the
// replies), even when its watermark has not moved: that bounds the changes the
// watermark cannot see — an edited or deleted older reply, a reaction on a reply.
// Other messages, and parents whose thread is gone, get the exact single-message
// history read.
func (t *tick) tail() error {
	if t.left.TailFetches <= 0 {
		return nil
	}
	var entries []TailEntry
	err := t.p.store.View(func(tx Tx) error {
		var err error
		entries, err = tx.TailOldest(t.left.TailFetches, func(e TailEntry) bool {
			return !t.eligible[e.Channel] || (e.RotatedAt != nil && !e.RotatedAt.Before(t.start)) ||
				t.p.tailBackoff[e.Ref].until > t.p.tickNo
		})
		return err
	})
	if err != nil {
		return storeErr(err)
	}
	for _, e := range entries {
		if !t.eligible[e.Channel] {
			continue // became ineligible during this phase (per-conversation error)
		}
		if t.pastDeadline() {
			return errStopTick
		}
		m, _, err := t.message(e.Ref)
		if err != nil {
			return err
		}
		unlocated := m.LastPolledAt == nil && t.p.unlocated[e.Ref]
		if unlocated && t.left.RepliesCalls <= 0 {
			continue // history is known to miss it: wait for a replies call
		}
		if !t.take(&t.left.TailFetches, "tail_fetches") {
			return nil
		}
		switch {
		case unlocated:
			err = t.locate(e.Ref)
		case m.IsParent() && !m.ThreadGone && t.left.RepliesCalls > 0:
			err = t.readThread(e.Ref, m.LatestReply)
		default:
			err = t.readOne(e.Ref)
		}
		if err != nil {
			return err
		}
		if err := t.noteProgress(e.Ref, &m); err != nil {
			return err
		}
		t.sum.TailRead++
		// A read that queued its thread (latest_reply moved, or stored replies
		// that only a thread read can confirm) gets it now: a tick that ends on
		// its deadline before the end of the tail would drop the queue, and the
		// parent's next read is a whole rotation away.
		if err := t.syncThreads(); err != nil {
			return err
		}
	}
	if len(entries) == t.p.cfg.Budget.TailFetches && t.left.TailFetches == 0 {
		t.noteStop("budget:tail_fetches")
	}
	// Each read above synced the threads it queued; what is left was queued by phase
	// 1 and not reached before the thread phase's share of the deadline.
	return t.syncThreads()
}

// noteProgress backs off a tail entry whose read advanced nothing — still in the
// rotation, neither the message nor its thread read since before (an undecodable
// message, a failing read) — for 2, 4, … up to 64 ticks, so that it cannot take a tail
// slot on every tick; a read that advances it ends the backoff. Entries waiting for
// locate are handled there. before is the message as stored before the read.
func (t *tick) noteProgress(ref Ref, before *Message) error {
	m, ok, err := t.message(ref)
	if err != nil {
		return err
	}
	stuck := ok && m.IsTracked() && !t.p.unlocated[ref] &&
		sameTime(m.LastPolledAt, before.LastPolledAt) && sameTime(m.ThreadSyncedAt, before.ThreadSyncedAt)
	if !stuck {
		delete(t.p.tailBackoff, ref)
		return nil
	}
	b := t.p.tailBackoff[ref]
	b.fails++
	b.until = t.p.tickNo + 1<<min(b.fails, 6)
	t.p.tailBackoff[ref] = b
	return nil
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
