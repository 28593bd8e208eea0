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
	out, err := t.p.w.ApplyReads(msgs, t.p.mem.identity, started)
	if err != nil {
		return nil, err
	}
	t.work.wrote(out)
	return out, nil
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
	for _, m := range later {
		t.work.queueNewParent(m)
	}
	return keep, nil
}
