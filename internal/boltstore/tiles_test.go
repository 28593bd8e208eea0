package boltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

var tileSizes = []int{1, 7, 15, 100, 999}

// checkTiles asserts that the tile index of channel answers every lookup itself (no
// fallback to the walk) and as the walk does, for every stored record and the given
// sizes, and that each block counts exactly the timeline records it covers.
func checkTiles(t *testing.T, s *Store, channel string) {
	t.Helper()
	view(t, s, func(rtx readmodel.Tx) error {
		tx := rtx.(*tx)
		cb, err := tx.channel(channel, false)
		if err != nil || cb == nil {
			t.Fatalf("channel %s: %v", channel, err)
		}
		idx := cb.root.Bucket(bTiles)
		if idx == nil {
			t.Fatalf("channel %s has no tile index", channel)
		}
		// Each block's count is the timeline records from its first key to the next's.
		var firsts [][]byte
		var want []uint64
		ic := idx.Cursor()
		for k, v := ic.First(); len(k) == tsKeyLen; k, v = ic.Next() {
			n, err := blockCount(v)
			if err != nil {
				t.Fatal(err)
			}
			firsts = append(firsts, slices.Clone(k))
			want = append(want, n)
		}
		for i, first := range firsts {
			n := uint64(0)
			c := cb.msgs.Cursor()
			for k, v := c.Seek(first); k != nil && (i+1 == len(firsts) || bytes.Compare(k, firsts[i+1]) < 0); k, v = c.Next() {
				if inTimeline(v) {
					n++
				}
			}
			if n != want[i] || n == 0 || n > blockSplit {
				t.Errorf("block %d (%s) counts %d, holds %d timeline records", i, keyString(first), want[i], n)
			}
		}
		// A sample of the records (the walk each is compared with costs the records
		// below it), with the first and last.
		var keys [][]byte
		c := cb.msgs.Cursor()
		i := 0
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if i%97 == 0 {
				keys = append(keys, slices.Clone(k))
			}
			i++
		}
		k, _ := c.Last()
		keys = append(keys, slices.Clone(k))
		// Not stored: between two records, and past the newest.
		past := readmodel.TS("1900000000.000000").Key()
		keys = append(keys, append(slices.Clone(keys[0][:8]), 0, 0, 0, 1), past[:])
		for _, k := range keys {
			for _, size := range tileSizes {
				got, ok, err := tx.indexedTile(cb, channel, k, size)
				if err != nil {
					t.Fatalf("indexedTile(%s, %d): %v", keyString(k), size, err)
				}
				want, err := tx.walkedTile(cb, channel, k, size)
				if err != nil {
					t.Fatal(err)
				}
				if ok != (want.Oldest != "") || !slices.Equal(tsList(got.Messages), tsList(want.Messages)) ||
					got.Oldest != want.Oldest || got.Latest != want.Latest {
					t.Fatalf("tile of %s, size %d: index %v from %s to %s, walk %v from %s to %s", keyString(k), size,
						tsList(got.Messages), got.Oldest, got.Latest, tsList(want.Messages), want.Oldest, want.Latest)
				}
			}
		}
		return nil
	})
}

// The tile index follows every kind of write: backfill below the oldest record (a
// first sync), messages newer than the newest, replies (not counted), replies
// broadcast to the channel (counted), deletions, and blocks growing past blockSplit.
func TestTileIndexAgreesWithTheWalk(t *testing.T) {
	s := openTemp(t)
	rng := rand.New(rand.NewPCG(23, 1))
	stored := map[int]bool{}
	ts := func(i int) readmodel.TS { return readmodel.TS(fmt.Sprintf("%d.000100", 1700000000+i)) }
	put := func(tx readmodel.Tx, i int) error {
		m := msg(string(ts(i)))
		switch rng.IntN(10) {
		case 0, 1: // a reply to the record below, if any
			if stored[i-1] {
				m.ThreadTS = ts(i - 1)
			}
		case 2:
			if stored[i-1] {
				m.ThreadTS, m.Subtype = ts(i-1), "thread_broadcast"
			}
		}
		stored[i] = true
		return tx.PutMessage(m)
	}
	// A first sync: pages newest first, each below the last.
	for top := 6000; top > 0; top -= 999 {
		update(t, s, func(tx readmodel.Tx) error {
			for i := top; i > max(top-999, 0); i-- {
				if err := put(tx, i); err != nil {
					return err
				}
			}
			return nil
		})
	}
	checkTiles(t, s, "C1")
	// Head reads, random re-reads and deletions, a transaction at a time.
	for round := range 8 {
		update(t, s, func(tx readmodel.Tx) error {
			for range 300 {
				i := rng.IntN(6000+round*100) + 1
				if stored[i] && rng.IntN(3) == 0 {
					delete(stored, i)
					if err := tx.DeleteMessage("C1", ts(i)); err != nil {
						return err
					}
					continue
				}
				if err := put(tx, i); err != nil {
					return err
				}
			}
			return nil
		})
		checkTiles(t, s, "C1")
	}
}

// A store written before the tile index (no chan/<channel>/i bucket: the layout of the
// previous release) gets one on open; a stamp that does not match the records (a write
// by a build that did not keep the index) makes it be rebuilt, not used.
func TestTileIndexBuiltForAnOldStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	var ms []readmodel.Message
	for i := range 3000 {
		ms = append(ms, msg(fmt.Sprintf("%d.000000", 1700000000+i)))
	}
	putAll(t, s, ms...)
	// The previous release's layout: no tile index.
	if err := s.DB().Update(func(btx *bolt.Tx) error {
		return btx.Bucket(bChan).Bucket([]byte("C1")).DeleteBucket(bTiles)
	}); err != nil {
		t.Fatal(err)
	}
	view(t, s, func(rtx readmodel.Tx) error {
		tile, err := rtx.TimelineTile("C1", "1700002999.000000", 15)
		if err != nil || len(tile.Messages) != 15 || tile.Oldest != "1700002985.000000" {
			t.Errorf("tile without an index: %v from %s, %v", tsList(tile.Messages), tile.Oldest, err)
		}
		return nil
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	checkTiles(t, s, "C1")

	// A write that bypassed the index: one more record below the oldest, the stamp
	// left behind. Trusted, the index would put 1700000013 in the tile from 1700000000.
	k := readmodel.TS("1699999999.000000").Key()
	if err := s.DB().Update(func(btx *bolt.Tx) error {
		root := btx.Bucket(bChan).Bucket([]byte("C1"))
		m := msg("1699999999.000000")
		if err := root.Bucket(bMsgs).Put(k[:], appendMessage(nil, &m)); err != nil {
			return err
		}
		c, _ := readCounts(&chanBuckets{root: root})
		c.messages++
		v := make([]byte, 24)
		v[7] = byte(c.messages)
		v[6] = byte(c.messages >> 8)
		return root.Put(kCounts, v)
	}); err != nil {
		t.Fatal(err)
	}
	view(t, s, func(rtx readmodel.Tx) error {
		tile, err := rtx.TimelineTile("C1", "1700000013.000000", 15)
		if err != nil || tile.Oldest != "1699999999.000000" || tile.Latest != "1700000013.000000" {
			t.Errorf("tile over a stale index from %s to %s, %v; want the walk's: 1699999999.000000 to 1700000013.000000", tile.Oldest, tile.Latest, err)
		}
		return nil
	})
	putAll(t, s, msg("1700010000.000000")) // the next write rebuilds it
	checkTiles(t, s, "C1")
}

// A damaged block count is caught by the stamp's sum: the lookup answers by the walk,
// and the next write transaction rebuilds the index.
func TestTileIndexDamagedCountIsNotTrusted(t *testing.T) {
	s := openTemp(t)
	var ms []readmodel.Message
	for i := range 3000 {
		ms = append(ms, msg(fmt.Sprintf("%d.000000", 1700000000+i)))
	}
	putAll(t, s, ms...)
	if err := s.DB().Update(func(btx *bolt.Tx) error {
		idx := btx.Bucket(bChan).Bucket([]byte("C1")).Bucket(bTiles)
		k, v := idx.Cursor().First()
		n, _ := blockCount(v)
		return idx.Put(slices.Clone(k), binary.AppendUvarint(nil, n+5))
	}); err != nil {
		t.Fatal(err)
	}
	view(t, s, func(rtx readmodel.Tx) error {
		tile, err := rtx.TimelineTile("C1", "1700002999.000000", 7)
		// 3000 = 428×7 + 4: the last tile holds 4.
		if err != nil || tile.Oldest != "1700002996.000000" || len(tile.Messages) != 4 {
			t.Errorf("tile over a damaged index = %v from %s, %v; want 4 from 1700002996.000000", tsList(tile.Messages), tile.Oldest, err)
		}
		return nil
	})
	update(t, s, func(readmodel.Tx) error { return nil }) // any write: the rebuild
	checkTiles(t, s, "C1")
}

// A reply read again unchanged, with its read times, is still not counted: the tile
// change was once read from arena memory the read times had reused, which counted it
// as a timeline message (and a block split over the wrong count then used the index
// bucket it had just rebuilt: bbolt's "nodes map expected" in the crash test).
func TestTileIndexAfterUnchangedReadsOfReplies(t *testing.T) {
	s := openTemp(t)
	var ms []readmodel.Message
	for i := range 1500 {
		m := msg(fmt.Sprintf("%d.000000", 1700000000+2*i))
		r := reply(fmt.Sprintf("%d.000000", 1700000001+2*i), string(m.TS))
		m.LastPolledAt, r.LastPolledAt = at(100), at(100)
		ms = append(ms, m, r)
	}
	putAll(t, s, ms...)
	for round := range 3 {
		for i := range ms {
			ms[i].LastPolledAt = at(int64(200 + round))
		}
		putAll(t, s, ms...)
	}
	checkTiles(t, s, "C1")
}
