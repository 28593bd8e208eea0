package poller

import (
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// applyReads writes messages just read through the writer and does the tick's
// bookkeeping: threads whose latest_reply moved are queued for the replies stream, the
// users they name for the users stream; seen, if not nil, collects their ts.
func (t *tick) applyReads(msgs []rm.Message, seen map[rm.TS]bool, started time.Time) ([]rm.Applied, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	// Seen whether or not it is written: a newer read stored meanwhile, or a parent
	// deferred to its thread read, is not absence.
	for i := range msgs {
		if seen != nil {
			seen[msgs[i].TS] = true
		}
	}
	msgs, err := t.deferNewParents(msgs)
	if err != nil {
		return nil, err
	}
	out, err := t.p.w.ApplyReads(msgs, t.p.identity, started)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range out {
		m := &out[i].Message
		t.queueThreadLocked(m, out[i].Unverified)
		t.noteUsersLocked(m)
	}
	t.sum.MessagesWritten += len(out)
	return out, nil
}

// noteUsersLocked queues the users a stored message refers to for resolution; called
// with mu held.
func (t *tick) noteUsersLocked(m *rm.Message) {
	added := false
	for _, id := range m.UserIDs() {
		if _, ok := t.p.pendingUsers[id]; !ok {
			t.p.pendingUsers[id] = struct{}{}
			added = true
		}
	}
	if added {
		t.wake()
	}
}

// queueThreadLocked schedules a thread sync for a parent whose latest_reply moved, or
// whose stored replies need a whole-thread read to be confirmed (force); called with
// mu held.
func (t *tick) queueThreadLocked(m *rm.Message, force bool) {
	if m.IsReply() || (!force && !m.NeedsThreadSync()) {
		return
	}
	ref := rm.Ref{Channel: m.Channel, TS: m.TS}
	if t.queued[ref] {
		return
	}
	t.queued[ref] = true
	t.threadQueue = append(t.threadQueue, threadCandidate{Ref: ref, latestReply: m.LatestReply})
	t.wake()
}

// queueLocate hands a never-read tracked message that a complete history read did not
// return to the replies stream, which finds its thread; history does not read it
// again meanwhile.
func (t *tick) queueLocate(refs []rm.Ref) {
	if len(refs) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ref := range refs {
		if !t.p.unlocated[ref] {
			t.p.unlocated[ref] = true
			t.locateQueue = append(t.locateQueue, ref)
		}
	}
	t.wake()
}

// deferNewParents takes out of msgs the thread parents with replies that the store does
// not hold read (absent, or a never-read placeholder) and queues their threads, each
// with the parent as read: a read reaches parents the store never had (a range covers
// old messages; a head read, new ones), and a parent stored now would stand without
// its replies until its thread is read. The replies stream stores the parent and its
// replies in one transaction.
func (t *tick) deferNewParents(msgs []rm.Message) ([]rm.Message, error) {
	if t.p.cfg.Budget.RepliesCalls == 0 {
		return msgs, nil // no thread read will come: the parent is stored as read
	}
	var keep, later []rm.Message
	err := t.p.store.View(func(tx rm.Tx) error {
		for _, m := range msgs {
			if m.IsReply() || m.LatestReply == "" {
				keep = append(keep, m)
				continue
			}
			old, had, err := tx.Message(m.Channel, m.TS)
			if err != nil {
				return err
			}
			if had && old.LastPolledAt != nil {
				keep = append(keep, m)
			} else {
				later = append(later, m)
			}
		}
		return nil
	})
	if err != nil {
		return nil, rm.StoreErr(err)
	}
	if len(later) == 0 {
		return msgs, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range later {
		m := later[i]
		ref := rm.Ref{Channel: m.Channel, TS: m.TS}
		if t.queued[ref] {
			continue
		}
		t.queued[ref] = true
		t.threadQueue = append(t.threadQueue, threadCandidate{Ref: ref, latestReply: m.LatestReply, first: &m})
		t.wake()
	}
	return keep, nil
}
