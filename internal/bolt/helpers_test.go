package boltstore

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// openTemp opens a new store in t.TempDir and closes it (after a consistency check)
// when the test ends.
func openTemp(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "slackpoll.db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		checkConsistent(t, s)
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// checkConsistent runs the page walk of Check and bbolt's page-level check: the walk
// must pass every store the tests write.
func checkConsistent(t testing.TB, s *Store) {
	t.Helper()
	err := s.DB().View(func(btx *bolt.Tx) error {
		if err := walkPages(s.file, uint64(btx.ID())); err != nil {
			t.Errorf("page walk: %v", err)
		}
		// The indexes match the messages (no false report from Check's comparison).
		t2 := newTx(btx, nil, &badRecords{})
		tracked, err := t2.decodeAll()
		if err == nil {
			err = t2.checkIndexes(tracked)
		}
		for _, b := range t2.Undecodable() {
			if strings.Contains(b, indexTail) || strings.Contains(b, indexWatched) {
				t.Errorf("index check: %s", b)
			}
		}
		if err != nil {
			t.Errorf("index check: %v", err)
		}
		for err := range btx.Check() {
			t.Errorf("bbolt check: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func update(t testing.TB, s *Store, fn func(readmodel.Tx) error) {
	t.Helper()
	if err := s.Update(fn); err != nil {
		t.Fatal(err)
	}
}

func view(t testing.TB, s *Store, fn func(readmodel.Tx) error) {
	t.Helper()
	if err := s.View(fn); err != nil {
		t.Fatal(err)
	}
}

func putAll(t testing.TB, s *Store, ms ...readmodel.Message) {
	t.Helper()
	update(t, s, func(tx readmodel.Tx) error {
		for _, m := range ms {
			if err := tx.PutMessage(m); err != nil {
				return err
			}
		}
		return nil
	})
}

func at(sec int64) *time.Time {
	t := time.Unix(sec, 0).UTC()
	return &t
}

// msg is a top-level message of channel C1.
func msg(ts string) readmodel.Message {
	return readmodel.Message{Channel: "C1", TS: readmodel.TS(ts), User: "U1", Text: "m " + ts}
}

// reply is a plain reply of channel C1 under parent.
func reply(ts, parent string) readmodel.Message {
	m := msg(ts)
	m.ThreadTS = readmodel.TS(parent)
	return m
}

// tsList returns the ts of messages, in order.
func tsList(ms []readmodel.Message) []readmodel.TS {
	out := []readmodel.TS{}
	for _, m := range ms {
		out = append(out, m.TS)
	}
	return out
}

// bucketLen counts the keys of a bucket path, e.g. ("chan", "C1", "t").
func bucketLen(t testing.TB, s *Store, path ...string) int {
	t.Helper()
	n := 0
	err := s.DB().View(func(btx *bolt.Tx) error {
		b := btx.Bucket([]byte(path[0]))
		for _, p := range path[1:] {
			if b == nil {
				return nil
			}
			b = b.Bucket([]byte(p))
		}
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if v != nil {
				n++
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// tailLen counts the entries of the tail index, reading its chunks directly, and
// checks the chunk invariants: non-empty, at most tailChunkMax entries, ascending, keyed
// by the last entry, entries across chunks in ascending order.
func tailLen(t testing.TB, s *Store) int {
	t.Helper()
	n := 0
	err := s.DB().View(func(btx *bolt.Tx) error {
		var prev []byte
		return btx.Bucket(bTail).ForEach(func(k, v []byte) error {
			items, err := decodeChunk(v, nil)
			if err != nil {
				return fmt.Errorf("chunk %x: %w", k, err)
			}
			if len(items) == 0 || len(items) > tailChunkMax {
				t.Errorf("chunk %x has %d entries", k, len(items))
			}
			prefix := k[:len(k)-tsKeyLen]
			if last := items[len(items)-1].tsKey; !bytes.Equal(k[len(prefix):], last) {
				t.Errorf("chunk key %x does not name its last entry %x", k, last)
			}
			for _, it := range items {
				full := append(append([]byte(nil), prefix...), it.tsKey...)
				if prev != nil && bytes.Compare(prev, full) >= 0 {
					t.Errorf("tail entries out of order: %x then %x", prev, full)
				}
				prev = full
				n++
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
