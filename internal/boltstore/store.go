package boltstore

import (
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

var _ readmodel.Store = (*Store)(nil)

// Store is a readmodel.Store in one bbolt file. It is safe for concurrent use: Update
// calls are serialized by bbolt, View calls run concurrently.
type Store struct {
	db    *bolt.DB
	path  string
	bad   badRecords
	stale staleTiles
	// written counts the message values committed with changed content.
	written atomic.Uint64
	// opened is the file bbolt opened, to notice it deleted or replaced under us;
	// file is its descriptor (bbolt's own), read by Check's page walk.
	opened os.FileInfo
	file   *os.File
	// damaged is set by the first damage any transaction met (see guard): from then
	// on every transaction fails with it at once, without entering bbolt, whose locks
	// a panic may have left held. failed is closed when it is set.
	damaged    atomic.Pointer[damagedError]
	failed     chan struct{}
	failedOnce sync.Once
	// mark is the feed mark of a store opened for writing (nil when read-only);
	// restored is the restore Open found. closing is set by Close's last write
	// transaction; mark and closing are used under bbolt's writer lock only.
	mark     *feedMark
	restored *readmodel.FeedRestore
	closing  bool
	// log gets what the store repairs by itself (a rebuilt index).
	log *slog.Logger
}

// Failed is closed when a transaction met damage: every later one fails with Err.
// The daemon stops on it.
func (s *Store) Failed() <-chan struct{} { return s.failed }

// Err returns the damage a transaction met (matching ErrDamaged), or nil.
func (s *Store) Err() error {
	if d := s.damaged.Load(); d != nil {
		return d
	}
	return nil
}

// guard runs fn at the store boundary: it fails at once on a store already found
// damaged, and marks the store damaged when fn meets damage.
func (s *Store) guard(fn func() error) error {
	if d := s.damaged.Load(); d != nil {
		return d
	}
	err := guard(s.path, fn)
	var d *damagedError
	if errors.As(err, &d) {
		s.damaged.CompareAndSwap(nil, d)
		s.failedOnce.Do(func() { close(s.failed) })
	}
	return err
}

// Path returns the file path the store was opened with.
func (s *Store) Path() string { return s.path }

// DB returns the underlying bbolt handle, for tests (tx.Check) and maintenance tools.
// Writing through it bypasses the indexes.
func (s *Store) DB() *bolt.DB { return s.db }

// View runs fn in a read-only transaction. Do not call View or Update from inside fn:
// bbolt deadlocks on nested transactions in one goroutine.
// A damaged file fails with an error matching ErrDamaged.
func (s *Store) View(fn func(readmodel.Tx) error) error {
	if err := s.checkIdentity(); err != nil {
		return err
	}
	return s.guard(func() error {
		return s.db.View(func(btx *bolt.Tx) error {
			t := newTx(btx, nil, &s.bad)
			t.stale = &s.stale
			return fn(t)
		})
	})
}

// Update runs fn in a read-write transaction and commits it, with the queued tail
// index changes and counters fn made, if fn returns nil; otherwise nothing fn wrote is
// kept.
// A damaged file fails with an error matching ErrDamaged.
func (s *Store) Update(fn func(readmodel.Tx) error) error {
	if err := s.checkIdentity(); err != nil {
		return err
	}
	return s.guard(func() error { return s.update(fn) })
}

// MessagesWritten returns how many message values committed write transactions have
// put since the store was opened: new messages and changed content, not a read that
// found a message as stored (which updates its read times only). See
// readmodel.WriteCounter.
func (s *Store) MessagesWritten() uint64 { return s.written.Load() }

func (s *Store) update(fn func(readmodel.Tx) error) error {
	var written int
	rebuild := s.bad.toRebuild()
	var rebuilt []string
	// The scratch goes back to the pool once bbolt has committed (it keeps Put's
	// values until then).
	sc := scratches.Get().(*scratch)
	defer scratches.Put(sc)
	err := s.db.Update(func(btx *bolt.Tx) error {
		sc.reset()
		t := newTx(btx, sc, &s.bad)
		t.stale = &s.stale
		if len(rebuild) > 0 {
			var err error
			if rebuilt, err = t.rebuildIndexes(rebuild); err != nil {
				return err
			}
		}
		if err := fn(t); err != nil {
			return err
		}
		if err := t.flushTail(); err != nil {
			return err
		}
		if err := t.flushTiles(); err != nil {
			return err
		}
		written = t.written
		if err := t.flushCounts(); err != nil {
			return err
		}
		return s.reserveSeqs(btx)
	})
	if err == nil {
		s.written.Add(uint64(written))
	}
	if err == nil && len(rebuild) > 0 {
		s.bad.rebuilt(rebuild)
		for _, line := range rebuilt {
			s.log.Warn("store: "+line, "store", s.path)
		}
	}
	return err
}

// Close waits for open transactions to finish, then releases the file and its lock.
// A store found damaged is not closed through bbolt, whose locks the damage may have
// left held (its Close would wait for ever): its file lock is released and its file
// closed, and the memory map stays until the process exits.
// Closing a store opened for writing first brings its feed mark down to the last
// seq committed; writes after that fail.
func (s *Store) Close() error {
	if s.damaged.Load() != nil {
		releaseFile(s.file)
		return nil
	}
	var markErr error
	if s.mark != nil {
		markErr = s.guard(s.closeMark)
		if s.damaged.Load() != nil {
			releaseFile(s.file)
			return markErr
		}
	}
	if err := s.db.Close(); err != nil {
		return err
	}
	return markErr
}

// Check walks every page of the file in a read transaction: first through the file
// (walkPages: pages past the end, loops, offsets out of their page), then with bbolt's
// consistency check, which runs in a goroutine of its own where a fault would kill
// the process and so only starts once the walk found nothing that could fault. A
// damaged file fails with an error matching ErrDamaged naming the first problem
// found. Its cost grows with the file: for status, not for every tick.
// Check then decodes every message, conversation and user record, and compares the
// tail index and the watched set with the messages: what does not decode, or does not
// match, is listed by Tx.Undecodable from then on.
func (s *Store) Check() error {
	return s.guard(func() error {
		return s.db.View(func(btx *bolt.Tx) error {
			if s.file != nil {
				if err := walkPages(s.file, uint64(btx.ID())); err != nil {
					return &damagedError{path: s.path, cause: err}
				}
			}
			// The check's goroutine reads the memory map until it ends: it must end
			// before the transaction does, and Close unmaps the file. So every error
			// is received, the first one reported.
			var first error
			for err := range btx.Check() {
				if first == nil {
					// bbolt's check reports what its assertions hit as "panic: …".
					first = &damagedError{path: s.path, cause: strings.TrimPrefix(err.Error(), "panic: ")}
				}
			}
			if first != nil {
				return first
			}
			t := newTx(btx, nil, &s.bad)
			tracked, err := t.decodeAll()
			if err != nil {
				return err
			}
			return t.checkIndexes(tracked)
		})
	})
}
