package boltstore

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// trackedStore returns a store with n tracked messages of C1, never read: one tail
// group, in chunks of tailChunkMax.
func trackedStore(t *testing.T, n int) *Store {
	t.Helper()
	s := openTemp(t)
	var ms []readmodel.Message
	for i := range n {
		ms = append(ms, msg(fmt.Sprintf("17%08d.000100", i)))
	}
	putAll(t, s, ms...)
	return s
}

// flipInBucket flips bit 2 of byte at of the value under the i-th key of bucket
// (at < 0 counts from the end).
func flipInBucket(t *testing.T, s *Store, bucket []byte, i, at int) {
	t.Helper()
	err := s.DB().Update(func(btx *bolt.Tx) error {
		b := btx.Bucket(bucket)
		c := b.Cursor()
		k, v := c.First()
		for range i {
			k, v = c.Next()
		}
		if k == nil {
			return fmt.Errorf("no key %d in %s", i, bucket)
		}
		nv := bytes.Clone(v)
		if at < 0 {
			at += len(nv)
		}
		nv[at] ^= 0x04
		return b.Put(k, nv)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// misplaceFirstChunk flips a bit of the first tail chunk's key, in its poll time.
func misplaceFirstChunk(t *testing.T, s *Store) {
	t.Helper()
	err := s.DB().Update(func(btx *bolt.Tx) error {
		b := btx.Bucket(bTail)
		k, v := b.Cursor().First()
		k, v = bytes.Clone(k), bytes.Clone(v)
		if err := b.Delete(k); err != nil {
			return err
		}
		k[7] ^= 0x04
		return b.Put(k, v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func tailAll(t *testing.T, s *Store) (entries []readmodel.TailEntry, undecodable []string) {
	t.Helper()
	view(t, s, func(tx readmodel.Tx) error {
		var err error
		if entries, err = tx.TailOldest(1<<20, nil); err != nil {
			t.Fatalf("TailOldest: %v, want the entries it can read", err)
		}
		undecodable = tx.Undecodable()
		return nil
	})
	return entries, undecodable
}

func watchedAll(t *testing.T, s *Store) (refs []readmodel.Ref, undecodable []string) {
	t.Helper()
	view(t, s, func(tx readmodel.Tx) error {
		if err := tx.Watched(func(r readmodel.Ref) error { refs = append(refs, r); return nil }); err != nil {
			t.Fatalf("Watched: %v, want the entries it can read", err)
		}
		undecodable = tx.Undecodable()
		return nil
	})
	return refs, undecodable
}

// One flipped bit in a chunk of the tail index (here in an entry's ts) made every
// tail read fail, and with it every tick: the daemon stopped at every start. The
// chunk is skipped and reported; the next write rebuilds the index from the
// messages, with every entry and the tracked counter right.
func TestDamagedTailChunkIsSkippedReportedAndRebuilt(t *testing.T) {
	s := trackedStore(t, 200)
	flipInBucket(t, s, bTail, 1, 1+tsKeyLen+1+3) // the second chunk's first ts
	entries, bad := tailAll(t, s)
	if len(entries) == 0 || len(entries) >= 200 {
		t.Errorf("TailOldest read %d entries, want all but the damaged chunk's", len(entries))
	}
	if len(bad) != 1 || !strings.Contains(bad[0], "tail index entry") || !strings.Contains(bad[0], "rebuilt") {
		t.Errorf("Undecodable = %q, want the tail chunk, saying it is rebuilt", bad)
	}
	putAll(t, s, msg("1800000000.000100")) // the next write
	entries, bad = tailAll(t, s)
	if len(entries) != 201 || len(bad) != 0 {
		t.Errorf("after the next write: %d entries, undecodable %q; want 201 and none", len(entries), bad)
	}
	view(t, s, func(tx readmodel.Tx) error {
		if n, err := tx.Counts("C1"); err != nil || n.Tracked != 201 || n.Messages != 201 {
			t.Errorf("Counts = %+v, %v; want 201 tracked", n, err)
		}
		return nil
	})
}

// A write that meets a damaged chunk where it must merge its changes does not fail:
// the chunk is dropped and reported, and the write after rebuilds the index.
func TestDamagedTailChunkMetByAWriteIsRebuilt(t *testing.T) {
	s := trackedStore(t, 200)
	flipInBucket(t, s, bTail, 1, 1+tsKeyLen+1+3)
	putAll(t, s, msg(fmt.Sprintf("17%08d.000050", 60))) // inside the damaged chunk's range
	if got := s.bad.toRebuild(); !slices.Equal(got, []string{indexTail}) {
		t.Fatalf("after a write into the damaged chunk, indexes to rebuild = %v, want the tail index", got)
	}
	putAll(t, s, msg("1800000000.000100"))
	if entries, bad := tailAll(t, s); len(entries) != 202 || len(bad) != 0 {
		t.Errorf("%d entries, undecodable %q; want 202 and none", len(entries), bad)
	}
}

// A flipped bit in the watched set (a ts, a key's separator) made loadWatched fail
// every tick. The entry is skipped and reported; the next write rebuilds the set,
// each entry placed from its key, or its ts, and the messages.
func TestDamagedWatchedEntriesAreSkippedReportedAndRebuilt(t *testing.T) {
	s := trackedStore(t, 5)
	var want []readmodel.Ref
	update(t, s, func(tx readmodel.Tx) error {
		for i := range 3 {
			ref := readmodel.Ref{Channel: "C1", TS: readmodel.TS(fmt.Sprintf("17%08d.000100", i))}
			want = append(want, ref)
			if err := tx.PutWatched(ref); err != nil {
				return err
			}
		}
		return nil
	})
	flipInBucket(t, s, bWatched, 0, 3) // a digit of the first entry's ts
	err := s.DB().Update(func(btx *bolt.Tx) error {
		b := btx.Bucket(bWatched)
		k := watchedKey(want[1])
		v := b.Get(k)
		bad := bytes.Clone(k)
		bad[len("C1")] = 1 // the separator
		if err := b.Delete(k); err != nil {
			return err
		}
		return b.Put(bad, v)
	})
	if err != nil {
		t.Fatal(err)
	}
	refs, bad := watchedAll(t, s)
	if !slices.Equal(refs, want[2:]) || len(bad) != 2 {
		t.Errorf("Watched = %v, undecodable %q; want %v and two reported", refs, bad, want[2:])
	}
	putAll(t, s, msg("1800000000.000100"))
	if refs, bad := watchedAll(t, s); !slices.Equal(refs, want) || len(bad) != 0 {
		t.Errorf("after the next write: Watched = %v, undecodable %q; want %v and none", refs, bad, want)
	}
}

// Check (status, on a store no daemon holds) sees a damaged index: an entry that
// does not decode, and one that decodes but no longer matches its message.
func TestCheckComparesTheIndexesWithTheMessages(t *testing.T) {
	s := trackedStore(t, 200)
	flipInBucket(t, s, bTail, 1, 1+tsKeyLen+1+3)
	misplaceFirstChunk(t, s) // it decodes, at the wrong place
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	var bad []string
	view(t, s, func(tx readmodel.Tx) error { bad = tx.Undecodable(); return nil })
	all := strings.Join(bad, "\n")
	if !strings.Contains(all, "ts \"") || !strings.Contains(all, "does not match a tracked message") {
		t.Errorf("Check reported %q; want the undecodable chunk and the misplaced entries", bad)
	}
	putAll(t, s, msg("1800000000.000100"))
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	view(t, s, func(tx readmodel.Tx) error { bad = tx.Undecodable(); return nil })
	if entries, _ := tailAll(t, s); len(bad) != 0 || len(entries) != 201 {
		t.Errorf("after the rebuild: undecodable %q, %d entries; want none and 201", bad, len(entries))
	}
}

// A flipped bit in a chunk's key (its poll time) leaves a chunk that decodes but
// stands where no message puts its entries: read in every rotation, for ever, while
// the messages had no entry of their own. TailOldest skips such entries and reports
// them; the next write rebuilds the index.
func TestMisplacedTailEntriesAreSkippedAndRebuilt(t *testing.T) {
	s := trackedStore(t, 200)
	misplaceFirstChunk(t, s)
	entries, bad := tailAll(t, s)
	if len(entries) == 0 || len(entries) >= 200 || len(bad) == 0 || !strings.Contains(bad[0], "does not match a tracked message") {
		t.Errorf("TailOldest read %d entries, undecodable %q; want the misplaced ones skipped and reported", len(entries), bad)
	}
	putAll(t, s, msg("1800000000.000100"))
	if entries, bad := tailAll(t, s); len(entries) != 201 || len(bad) != 0 {
		t.Errorf("after the next write: %d entries, undecodable %q; want 201 and none", len(entries), bad)
	}
}
