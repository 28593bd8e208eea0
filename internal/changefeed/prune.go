package changefeed

import (
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Prune deletes the changes observed before now − retention, oldest first, at most
// limit of them (one transaction; call again while it returns limit), and returns
// how many it deleted. It stops at the first change observed within retention:
// retention never reorders the feed. A change stamped after now was stamped by a
// clock that was ahead; it is not trusted to be recent, and goes with the first
// later change found past retention (seqs are in the order of real time). Outbox
// rows carry their own copy of the change and are not touched.
func Prune(store rm.Store, now time.Time, retention time.Duration, limit int) (int, error) {
	cut := now.Add(-retention)
	n := 0
	err := store.Update(func(tx rm.Tx) error {
		var old, ahead []uint64
		err := tx.Changes(0, func(c rm.Change) error {
			switch {
			case len(old) >= limit:
				return rm.ErrStopIteration
			case c.ObservedAt.After(now):
				ahead = append(ahead, c.Seq)
			case c.ObservedAt.Before(cut):
				old = append(append(old, ahead...), c.Seq)
				ahead = ahead[:0]
			default:
				return rm.ErrStopIteration
			}
			return nil
		})
		if err != nil {
			return err
		}
		// Every seq up to each old one goes: a change no read can decode (skipped, so
		// not in old) would otherwise stay forever as the oldest held, and hide the
		// pruning from a consumer behind it.
		from, _, err := tx.ChangeBounds()
		if err != nil {
			return err
		}
		for _, seq := range old {
			for s := from; s <= seq; s++ {
				if err := tx.DeleteChange(s); err != nil {
					return err
				}
			}
			from = seq + 1
		}
		n = len(old)
		return nil
	})
	return n, err
}
