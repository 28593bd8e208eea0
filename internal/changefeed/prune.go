package changefeed

import (
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Prune deletes the changes observed before now − retention, oldest first, at most
// limit of them (one transaction; call again while it returns limit), and returns
// how many it deleted. It stops at the first change observed later, or observed
// "after now" (a clock that moved back): retention never reorders the feed. Outbox
// rows carry their own copy of the change and are not touched.
func Prune(store rm.Store, now time.Time, retention time.Duration, limit int) (int, error) {
	cut := now.Add(-retention)
	n := 0
	err := store.Update(func(tx rm.Tx) error {
		var old []uint64
		err := tx.Changes(0, func(c rm.Change) error {
			if len(old) >= limit || !c.ObservedAt.Before(cut) {
				return rm.ErrStopIteration
			}
			old = append(old, c.Seq)
			return nil
		})
		if err != nil {
			return err
		}
		for _, seq := range old {
			if err := tx.DeleteChange(seq); err != nil {
				return err
			}
		}
		n = len(old)
		return nil
	})
	return n, err
}
