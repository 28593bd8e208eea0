package changefeed

import (
	"errors"
	"fmt"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// MaxScan is the most changes one Read examines. A filter that skips most of a long
// feed would otherwise hold one read transaction over all of it (and a long read
// transaction keeps the writer from growing the file); the page then ends early,
// maybe empty, and Next says where to read on.
const MaxScan = 10_000

// Page is one answer of the feed: the changes after a seq, and where the feed stands.
// Its JSON is the API's list shape, {"items", "next_cursor"}, plus the feed's bounds.
type Page struct {
	// Changes are the page's items, in seq order.
	Changes []rm.Change `json:"items"`
	// Next is the cursor of the following page: the seq of the last change examined
	// (filters may have skipped some), else after. In JSON it is next_cursor, that seq
	// as a decimal string, and never "": the feed has no last page, a consumer
	// follows it by passing next_cursor back (as cursor, or as after).
	Next uint64 `json:"next_cursor,string"`
	// Oldest is the oldest seq still held (changes before it were pruned); Last is
	// the last seq assigned. A feed with no change held yet has Oldest = Last + 1.
	Oldest uint64 `json:"oldest"`
	Last   uint64 `json:"last"`
}

// GoneError says the changes a consumer asked for were pruned: it is behind the
// oldest seq still held, and must resynchronise (an export) before it follows again.
type GoneError struct {
	After, Oldest uint64
}

func (e *GoneError) Error() string {
	return fmt.Sprintf("changes after seq %d are no longer held: the oldest kept is %d (changes.retention); resynchronise from an export, then follow from seq %d",
		e.After, e.Oldest, e.Oldest-1)
}

// ErrGone matches every *GoneError with errors.Is.
var ErrGone = errors.New("changes pruned")

// Is makes errors.Is(err, ErrGone) true for a *GoneError.
func (e *GoneError) Is(target error) bool { return target == ErrGone }

// AheadError says a consumer's cursor is past the last seq this store assigned: it
// was not handed out by this feed (another store's, or this one's before a restore
// the daemon has not opened yet). Served as it stands, the consumer would skip every
// change up to its cursor without knowing.
type AheadError struct {
	After, Last uint64
}

func (e *AheadError) Error() string {
	return fmt.Sprintf("after=%d is past the last seq of this feed, %d: the cursor is from another store, or from before a restore from a backup; resynchronise from an export, then follow from seq %d",
		e.After, e.Last, e.Last)
}

// RestoredError says a consumer's cursor was handed out before a restore, for
// changes the restored store does not hold: the store went back to Restore.Seq, and
// the seqs after it up to Restore.SkippedTo are never assigned again. The changes up
// to Restore.Seq are the same as before; what changed in Slack since is reported
// again, as new changes after Restore.SkippedTo.
type RestoredError struct {
	After   uint64
	Restore rm.FeedRestore
}

func (e *RestoredError) Error() string {
	return fmt.Sprintf("after=%d was handed out before the store was restored (%s, %s): the restored feed ends at seq %d, and seqs %d to %d are never used again; resynchronise from an export, then follow from seq %d — or follow from seq %d, and what changed since is reported again as new changes",
		e.After, e.Restore.By, e.Restore.At.Format(time.RFC3339), e.Restore.Seq, e.Restore.Seq+1, e.Restore.SkippedTo,
		e.Restore.SkippedTo, e.Restore.Seq)
}

// Is makes errors.Is(err, ErrGone) true for a *RestoredError: what the cursor
// followed is gone, as for a pruned feed.
func (e *RestoredError) Is(target error) bool { return target == ErrGone }

// Read returns up to limit changes with seq > after that pass f, in seq order, and
// the feed's bounds; it examines at most MaxScan changes. It fails with a
// *RestoredError when after was handed out before a restore, for changes the
// restored store does not hold, with a *GoneError when changes after after were
// pruned, and with an *AheadError when after is past the last seq.
func Read(tx rm.Tx, after uint64, limit int, f rm.ChangeFilter) (Page, error) {
	oldest, last, err := tx.ChangeBounds()
	if err != nil {
		return Page{}, err
	}
	if oldest == 0 {
		oldest = last + 1
	}
	p := Page{Changes: []rm.Change{}, Next: after, Oldest: oldest, Last: last}
	restores, err := tx.FeedRestores()
	if err != nil {
		return p, err
	}
	for _, r := range restores {
		if after > r.Seq && after <= r.SkippedTo {
			return p, &RestoredError{After: after, Restore: r}
		}
	}
	if after > last {
		return p, &AheadError{After: after, Last: last}
	}
	if after+1 < oldest && after < last {
		return p, &GoneError{After: after, Oldest: oldest}
	}
	examined := 0
	err = tx.Changes(after, func(c rm.Change) error {
		if len(p.Changes) >= limit || examined >= MaxScan {
			return rm.ErrStopIteration
		}
		examined++
		p.Next = c.Seq
		if f.Match(&c) {
			p.Changes = append(p.Changes, c)
		}
		return nil
	})
	return p, err
}
