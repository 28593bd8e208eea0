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

// Retention prunes the change feed by changes.retention, by Slack's clock: the local
// clock can jump (a wrong RTC at boot, a resumed VM), and a jump ahead past the
// retention, measured by it, would take the whole feed at once and send every
// consumer a 410.
type Retention struct {
	Store     rm.Store
	Retention time.Duration
	// SlackNow is Slack's time and whether it is known: false until a Slack answer
	// of this run has told the skew (slackapi.Client.SlackNow). Until then nothing
	// is pruned.
	SlackNow func() (time.Time, bool)
	// Batch is how many changes one transaction deletes (default 1000).
	Batch int
}

// Pass is one retention pass. It prunes nothing before Slack's time is known
// (ok false), and never more than half of the changes held: a feed older than
// retention (a daemon stopped for longer) goes in a few passes, while a clock that
// is wrong in a way no answer has shown yet cannot take it all at once. held is the
// number of changes held before the pass; more is set when changes past retention
// were left for the next pass by that bound.
func (r *Retention) Pass() (pruned, held int, more, ok bool, err error) {
	now, ok := r.SlackNow()
	if !ok {
		return 0, 0, false, false, nil
	}
	err = r.Store.View(func(tx rm.Tx) error {
		oldest, last, err := tx.ChangeBounds()
		if oldest > 0 && last >= oldest {
			held = int(last - oldest + 1)
		}
		return err
	})
	if err != nil || held == 0 {
		return 0, held, false, true, err
	}
	batch := r.Batch
	if batch <= 0 {
		batch = 1000
	}
	bound := max(1, held/2)
	for pruned < bound {
		limit := min(batch, bound-pruned)
		n, err := Prune(r.Store, now, r.Retention, limit)
		pruned += n
		if err != nil || n < limit {
			return pruned, held, false, true, err
		}
	}
	// The bound was reached: one more change past retention means more to do.
	more, err = r.pastRetention(now)
	return pruned, held, more, true, err
}

// pastRetention reports whether the oldest change held is past retention at now.
func (r *Retention) pastRetention(now time.Time) (bool, error) {
	past := false
	err := r.Store.View(func(tx rm.Tx) error {
		return tx.Changes(0, func(c rm.Change) error {
			past = c.ObservedAt.Before(now.Add(-r.Retention))
			return rm.ErrStopIteration
		})
	})
	return past, err
}
