// Package storetest opens stores for tests, after bbolt's internal/btesting: a store
// opened here is closed when its test ends, after bbolt's consistency check of every
// page (tx.Check: page reachability, the freelist, key order), and each problem the
// check finds fails the test. Every test that opens a store opens it here, so that a
// write that leaves the file inconsistent fails the test that made it, not a later
// read. (internal/boltstore's own tests, which this package imports, have their
// helper, openTemp, which runs the same check.)
package storetest

import (
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"

	"github.com/slackpoll/slackpoll/internal/boltstore"
)

// Open opens a new store in t's temporary directory, without fsync (a test's file
// outlives no crash), checked and closed when the test ends.
func Open(t testing.TB) *boltstore.Store {
	t.Helper()
	return OpenAt(t, filepath.Join(t.TempDir(), "slackpoll.db"), boltstore.Options{NoSync: true})
}

// OpenAt opens the store at path with opts, checked and closed when the test ends
// unless the test closed it first (with Close, which checks it, or with its own
// Close, which does not).
func OpenAt(t testing.TB, path string, opts boltstore.Options) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeChecked(t, s, true) })
	return s
}

// Close checks s and closes it now: for a test that goes on with the file (reopens
// it, damages it, hands it to a process).
func Close(t testing.TB, s *boltstore.Store) {
	t.Helper()
	closeChecked(t, s, false)
}

func closeChecked(t testing.TB, s *boltstore.Store, atCleanup bool) {
	t.Helper()
	problems, err := check(s.DB())
	if errors.Is(err, bberrors.ErrDatabaseNotOpen) && atCleanup {
		return // closed by the test
	}
	if err != nil {
		t.Errorf("bbolt check of %s: %v", s.Path(), err)
	}
	for _, p := range problems {
		t.Errorf("bbolt check of %s: %s", s.Path(), p)
	}
	if err := s.Close(); err != nil {
		t.Errorf("closing %s: %v", s.Path(), err)
	}
}

// Check runs bbolt's consistency check on db in a read transaction and returns what
// it found, one problem each (none for a sound file); a transaction that cannot begin
// is one problem too.
func Check(db *bolt.DB) []string {
	problems, err := check(db)
	if err != nil {
		problems = append(problems, err.Error())
	}
	return problems
}

func check(db *bolt.DB) (problems []string, err error) {
	err = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			problems = append(problems, err.Error())
		}
		return nil
	})
	return problems, err
}
