package boltstore

import (
	"os"
	"strings"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

var _ readmodel.Store = (*Store)(nil)

// Store is a readmodel.Store in one bbolt file. It is safe for concurrent use: Update
// calls are serialized by bbolt, View calls run concurrently.
type Store struct {
	db   *bolt.DB
	path string
	// scratch is reused by the write transactions, which bbolt serializes.
	scratch scratch
	bad     badRecords
	stale   staleTiles
	// written counts the message values committed with changed content.
	written atomic.Uint64
	// opened is the file bbolt opened, to notice it deleted or replaced under us.
	opened os.FileInfo
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
	return guard(s.path, func() error {
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
	return guard(s.path, func() error { return s.update(fn) })
}

// MessagesWritten returns how many message values committed write transactions have
// put since the store was opened: new messages and changed content, not a read that
// found a message as stored (which updates its read times only). See
// readmodel.WriteCounter.
func (s *Store) MessagesWritten() uint64 { return s.written.Load() }

func (s *Store) update(fn func(readmodel.Tx) error) error {
	var written int
	err := s.db.Update(func(btx *bolt.Tx) error {
		// Inside Update we hold bbolt's writer lock, and the previous write
		// transaction has finished with the scratch.
		s.scratch.reset()
		t := newTx(btx, &s.scratch, &s.bad)
		t.stale = &s.stale
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
		return t.flushCounts()
	})
	if err == nil {
		s.written.Add(uint64(written))
	}
	return err
}

// Close waits for open transactions to finish, then releases the file and its lock.
func (s *Store) Close() error { return s.db.Close() }

// Check walks every page of the file (bbolt's consistency check) in a read
// transaction. A damaged file fails with an error matching ErrDamaged naming the first
// problem found. Its cost grows with the file: for status, not for every tick.
// Check then decodes every message, conversation and user record: those that do not
// decode are listed by Tx.Undecodable from then on.
func (s *Store) Check() error {
	return guard(s.path, func() error {
		return s.db.View(func(btx *bolt.Tx) error {
			for err := range btx.Check() {
				// bbolt's check reports what its assertions hit as "panic: …".
				return &damagedError{path: s.path, cause: strings.TrimPrefix(err.Error(), "panic: ")}
			}
			return newTx(btx, nil, &s.bad).decodeAll()
		})
	})
}
