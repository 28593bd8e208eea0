package boltstore

import (
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// kFeedRestores is state/"feed_restores": the store's restores, a JSON list of
// readmodel.FeedRestore (format 1), oldest first.
var kFeedRestores = []byte("feed_restores")

// Ways a restore is found (FeedRestore.By).
const (
	ByRestore = "slackpoll restore"
	ByOpen    = "open"
)

// FeedRestores implements readmodel.Tx.
func (t *tx) FeedRestores() ([]readmodel.FeedRestore, error) {
	if t.btx.Bucket(bState) == nil {
		return nil, nil
	}
	var out []readmodel.FeedRestore
	_, err := t.getJSON(bState, kFeedRestores, &out)
	return out, err
}

// skipFeed moves the feed's sequence of btx up to to and records the restore: the
// feed ends at the sequence's current value, and seqs up to to may have been handed
// out by the store this one replaced. It returns the restore, nil when the feed
// already reaches to.
func skipFeed(btx *bolt.Tx, to uint64, at time.Time, by string) (*readmodel.FeedRestore, error) {
	b := btx.Bucket(bChanges)
	if b == nil {
		var err error
		if b, err = btx.CreateBucket(bChanges); err != nil {
			return nil, err
		}
	}
	if b.Sequence() >= to {
		return nil, nil
	}
	r := readmodel.FeedRestore{Seq: b.Sequence(), SkippedTo: to, At: at.UTC(), By: by}
	if err := b.SetSequence(to); err != nil {
		return nil, fmt.Errorf("store: move the feed's sequence to %d: %w", to, err)
	}
	t := newTx(btx, new(scratch), &badRecords{})
	list, err := t.FeedRestores()
	if err != nil {
		return nil, err
	}
	if err := t.putJSON(bState, kFeedRestores, append(list, r)); err != nil {
		return nil, err
	}
	return &r, nil
}

// catchUpFeed runs at Open for writing: a store whose feed ends below the feed
// mark is older than what was handed out at this path (a backup copied into place,
// a store deleted and made again); its sequence moves up to the mark, so that no seq
// is assigned twice, and the restore is recorded. It returns the restore, if any.
func (s *Store) catchUpFeed(now time.Time) (*readmodel.FeedRestore, error) {
	if err := s.mark.load(); err != nil {
		return nil, err
	}
	if !s.mark.known {
		return nil, nil
	}
	behind := false
	err := s.db.View(func(btx *bolt.Tx) error {
		b := btx.Bucket(bChanges)
		behind = b == nil || b.Sequence() < s.mark.seq
		return nil
	})
	if err != nil || !behind {
		return nil, err // the usual start: no write, no sync
	}
	var r *readmodel.FeedRestore
	err = s.db.Update(func(btx *bolt.Tx) error {
		var err error
		r, err = skipFeed(btx, s.mark.seq, now, ByOpen)
		return err
	})
	return r, err
}

// reserveSeqs runs in every write transaction, before commit: when it assigned seqs
// above the feed mark, the mark moves past them (synced) first; a failure fails the
// transaction. The write transactions are serialized, so the mark is only read and
// written under bbolt's writer lock.
func (s *Store) reserveSeqs(btx *bolt.Tx) error {
	if s.mark == nil {
		return nil
	}
	if s.closing {
		return errClosing
	}
	b := btx.Bucket(bChanges)
	if b == nil {
		return nil
	}
	if seq := b.Sequence(); seq > s.mark.seq || !s.mark.known && seq > 0 {
		return s.mark.write(seq + markAhead)
	}
	return nil
}

// errClosing fails a write that comes after Close wrote the final feed mark.
var errClosing = errors.New("store: closing: no more writes")

// closeMark brings the feed mark down to the last seq committed, in a last write
// transaction (rolled back: it writes nothing to the store) after which every write
// fails: Close runs when the daemon is done writing.
func (s *Store) closeMark() error {
	errDone := errors.New("done")
	err := s.db.Update(func(btx *bolt.Tx) error {
		s.closing = true
		if b := btx.Bucket(bChanges); b != nil && (b.Sequence() != s.mark.seq || !s.mark.known && b.Sequence() > 0) {
			if err := s.mark.write(b.Sequence()); err != nil {
				return err
			}
		}
		return errDone
	})
	if errors.Is(err, errDone) {
		return nil
	}
	return err
}

// Restored returns the restore Open found (the store older than its feed mark), nil
// when none: the daemon logs it.
func (s *Store) Restored() *readmodel.FeedRestore { return s.restored }
