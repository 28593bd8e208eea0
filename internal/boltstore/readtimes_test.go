package boltstore

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// rawValue returns a copy of the stored message value of (C1, ts).
func rawValue(t *testing.T, s *Store, ts string) []byte {
	t.Helper()
	var out []byte
	k := readmodel.TS(ts).Key()
	if err := s.DB().View(func(btx *bolt.Tx) error {
		out = bytes.Clone(btx.Bucket(bChan).Bucket([]byte("C1")).Bucket(bMsgs).Get(k[:]))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// A read that finds a message as stored writes its read times, not the message: the
// stored content keeps its bytes, MessagesWritten does not count it, and the message
// reads back with the new read time and moves in the tail.
func TestReadOfAnUnchangedMessageWritesOnlyItsReadTimes(t *testing.T) {
	s := openTemp(t)
	m, n := msg("1700000001.000000"), msg("1700000002.000000")
	m.LastPolledAt, n.LastPolledAt = at(100), at(150)
	putAll(t, s, m, n)
	if got := s.MessagesWritten(); got != 2 {
		t.Fatalf("MessagesWritten after two new messages = %d, want 2", got)
	}
	before := rawValue(t, s, "1700000001.000000")

	m.LastPolledAt = at(200) // read again, unchanged
	putAll(t, s, m)
	if after := rawValue(t, s, "1700000001.000000"); !bytes.Equal(before, after) {
		t.Errorf("the content of an unchanged message was rewritten:\nbefore %x\nafter  %x", before, after)
	}
	if got := s.MessagesWritten(); got != 2 {
		t.Errorf("MessagesWritten after an unchanged read = %d, want 2", got)
	}
	view(t, s, func(tx readmodel.Tx) error {
		got, ok, err := tx.Message("C1", m.TS)
		if err != nil || !ok || cmp.Diff(m, got) != "" {
			t.Errorf("message after the read: ok=%v err=%v diff=%s", ok, err, cmp.Diff(m, got))
		}
		tail, err := tx.TailOldest(5, nil)
		if err != nil {
			return err
		}
		var order []readmodel.TS
		for _, e := range tail {
			order = append(order, e.TS)
		}
		if want := []readmodel.TS{n.TS, m.TS}; !slices.Equal(order, want) {
			t.Errorf("tail order = %v, want %v (m read at 200, after n at 150)", order, want)
		}
		return nil
	})
	if got := tailLen(t, s); got != 2 {
		t.Errorf("tail holds %d entries, want 2", got)
	}

	m.Text = "edited"
	putAll(t, s, m)
	if got := s.MessagesWritten(); got != 3 {
		t.Errorf("MessagesWritten after an edit = %d, want 3", got)
	}
	// A rolled back write counts nothing.
	m.Text = "edited again"
	_ = s.Update(func(tx readmodel.Tx) error {
		if err := tx.PutMessage(m); err != nil {
			return err
		}
		return fmt.Errorf("roll back")
	})
	if got := s.MessagesWritten(); got != 3 {
		t.Errorf("MessagesWritten after a rollback = %d, want 3", got)
	}
}

// downgrade rewrites a store into the layout of the previous release: every message
// value in format 2 (read times inline), no read-times or tile index buckets.
func downgrade(t *testing.T, s *Store) {
	t.Helper()
	err := s.DB().Update(func(btx *bolt.Tx) error {
		all := btx.Bucket(bChan)
		return all.ForEachBucket(func(ch []byte) error {
			root := all.Bucket(ch)
			cb := &chanBuckets{root: root, msgs: root.Bucket(bMsgs), reads: root.Bucket(bReads)}
			var keys, vals [][]byte
			if err := cb.msgs.ForEach(func(k, v []byte) error {
				m, err := cb.decode(string(ch), k, v)
				if err != nil {
					return err
				}
				keys, vals = append(keys, bytes.Clone(k)), append(vals, appendMessageTimed(nil, &m))
				return nil
			}); err != nil {
				return err
			}
			for i := range keys {
				if err := cb.msgs.Put(keys[i], vals[i]); err != nil {
					return err
				}
			}
			for _, b := range [][]byte{bReads, bTiles} {
				if root.Bucket(b) != nil {
					if err := root.DeleteBucket(b); err != nil {
						return err
					}
				}
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A store written by the previous release (format-2 messages with their read times
// inline, no read-times records, no tile index) opens and works: its messages read
// back whole, a read of one moves its tail entry from the time format 2 keyed it by,
// a deletion cleans its indexes, and the first write of each message moves it to
// format 3.
func TestStoreOfThePreviousReleaseOpensAndWorks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	var ms []readmodel.Message
	for i := range 40 {
		m := msg(fmt.Sprintf("%d.000000", 1700000000+i))
		m.LastPolledAt = at(int64(1000 + i))
		if i%5 == 0 { // a parent whose thread was read
			m.ThreadTS, m.ReplyCount, m.LatestReply = m.TS, 1, readmodel.TS(fmt.Sprintf("%d.500000", 1700000000+i))
			m.ThreadSyncedAt = at(int64(900 + i))
		}
		ms = append(ms, m)
		if i%5 == 0 {
			r := reply(string(m.LatestReply), string(m.TS))
			r.LastPolledAt = at(int64(1000 + i))
			ms = append(ms, r)
		}
	}
	putAll(t, s, ms...)
	downgrade(t, s)
	if v := rawValue(t, s, "1700000003.000000"); v[0] != formatMessageTimed {
		t.Fatalf("downgraded value has format %d", v[0])
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatalf("open a store of the previous release: %v", err)
	}
	t.Cleanup(func() {
		checkConsistent(t, s)
		s.Close()
	})
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	view(t, s, func(tx readmodel.Tx) error {
		for _, want := range ms {
			got, ok, err := tx.Message("C1", want.TS)
			if err != nil || !ok || cmp.Diff(want, got) != "" {
				t.Errorf("%s: ok=%v err=%v diff=%s", want.TS, ok, err, cmp.Diff(want, got))
			}
		}
		return nil
	})
	tracked := tailLen(t, s)
	// Read every top-level message again, unchanged, later than all: each tail entry
	// moves from where format 2 put it.
	var again []readmodel.Message
	for _, m := range ms {
		if !m.IsReply() {
			m.LastPolledAt = at(5000)
			again = append(again, m)
		}
	}
	putAll(t, s, again...)
	if got := tailLen(t, s); got != tracked {
		t.Errorf("tail holds %d entries after the reads, want %d (an entry left behind or lost)", got, tracked)
	}
	view(t, s, func(tx readmodel.Tx) error {
		tail, err := tx.TailOldest(100, nil)
		if err != nil {
			return err
		}
		for _, e := range tail {
			m, _, _ := tx.Message(e.Channel, e.TS)
			if rot := m.RotatedAt(); (rot == nil) != (e.RotatedAt == nil) || rot != nil && !rot.Equal(*e.RotatedAt) {
				t.Errorf("tail entry %s at %v, message rotated at %v", e.TS, e.RotatedAt, rot)
			}
		}
		return nil
	})
	if v := rawValue(t, s, "1700000003.000000"); v[0] != formatMessage {
		t.Errorf("a message written again has format %d, want %d", v[0], formatMessage)
	}
	// Deleting a message still in format 2 (a reply: not read again) cleans its
	// thread entry.
	update(t, s, func(tx readmodel.Tx) error { return tx.DeleteMessage("C1", "1700000005.500000") })
	view(t, s, func(tx readmodel.Tx) error {
		rs, err := tx.Replies("C1", "1700000005.000000")
		if err != nil || len(rs) != 0 {
			t.Errorf("replies after deleting the only one: %v, %v", tsList(rs), err)
		}
		return nil
	})
	checkTiles(t, s, "C1")
}
