package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// The tile index: per channel, chan/<channel>/i/ cuts the timeline into blocks of
// consecutive timeline records and counts each (see doc.go):
//
//	tskey (12) → uvarint(count)   the timeline records with first ≤ key < next block's
//	"v"        → format(1) uvarint(messages counter) uvarint(timeline records): the stamp
//
// TimelineTile finds a record's number by adding the counts of the blocks below it and
// walking its own block, and the tile's first record by walking at most one block: it
// reads about messages/blockSplit/2 index entries, blockSplit records and the tile,
// instead of every record below ts. PutMessage and DeleteMessage queue count changes,
// applied before commit (flushTiles). The index is derived data: an index whose stamp
// is not the channel's messages counter (a store written before the index, or by a
// build that did not keep it) is rebuilt on open and on the next write to the channel,
// and never used in between; a lookup that finds it inconsistent answers by the full
// walk and asks for a rebuild.

const (
	formatTiles = 1
	// blockSplit is the largest block: a block that grows past it is cut in two.
	blockSplit = 1024
	// rebuildBlock is the size of the blocks a rebuild writes: half full, so that
	// inserts split them rarely.
	rebuildBlock = blockSplit / 2
)

var (
	bTiles     = []byte("i")
	kTileStamp = []byte("v")
)

// tileChange is one queued count change: a timeline record of channel added (+1) or
// removed (−1) at key.
type tileChange struct {
	channel string
	key     [tsKeyLen]byte
	delta   int8
}

// tileQueue adds a count change for flushTiles.
func (t *tx) tileQueue(channel string, key []byte, delta int8) {
	c := tileChange{channel: channel, delta: delta}
	copy(c.key[:], key)
	t.tiles = append(t.tiles, c)
}

// staleTiles are channels whose tile index a lookup found inconsistent: the next write
// transaction rebuilds them. Shared by a store's transactions.
type staleTiles struct {
	mu  sync.Mutex
	set map[string]struct{}
}

func (s *staleTiles) add(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set == nil {
		s.set = make(map[string]struct{})
	}
	s.set[channel] = struct{}{}
}

// take empties the set and returns what it held.
func (s *staleTiles) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for ch := range s.set {
		out = append(out, ch)
	}
	s.set = nil
	return out
}

// stamp is what a tile index was written for: the channel's messages counter, and the
// sum of its blocks' counts.
type stamp struct {
	messages, timeline uint64
}

// tileStamp reads the stamp of a tile index; ok is false for a missing or unreadable one.
func tileStamp(idx *bolt.Bucket) (stamp, bool) {
	if idx == nil {
		return stamp{}, false
	}
	v := idx.Get(kTileStamp)
	if len(v) < 3 || v[0] != formatTiles {
		return stamp{}, false
	}
	var st stamp
	var k, k2 int
	st.messages, k = binary.Uvarint(v[1:])
	if k > 0 {
		st.timeline, k2 = binary.Uvarint(v[1+k:])
	}
	if k <= 0 || k2 <= 0 || 1+k+k2 != len(v) {
		return stamp{}, false
	}
	return st, true
}

func putTileStamp(idx *bolt.Bucket, st stamp) error {
	v := binary.AppendUvarint([]byte{formatTiles}, st.messages)
	return idx.Put(kTileStamp, binary.AppendUvarint(v, st.timeline))
}

// tilesCurrent returns the stamp of cb's tile index, and whether it describes cb's
// stored records, as far as the stamp can tell.
func tilesCurrent(cb *chanBuckets, c counts) (stamp, bool) {
	st, ok := tileStamp(cb.root.Bucket(bTiles))
	return st, ok && c.messages >= 0 && st.messages == uint64(c.messages)
}

// flushTiles applies the queued count changes to the channels' tile indexes, and
// rebuilds those found stale; Update calls it before flushCounts, whose counters it
// stamps.
func (t *tx) flushTiles() error {
	if t.stale != nil {
		for _, ch := range t.stale.take() {
			cb, err := t.channel(ch, false)
			if err != nil || cb == nil {
				continue
			}
			if err := t.rebuildTiles(cb, ch); err != nil {
				return err
			}
		}
	}
	if err := t.stampTiles(); err != nil {
		return err
	}
	if len(t.tiles) == 0 {
		return nil
	}
	changes := t.tiles
	t.tiles = changes[:0] // a rebuild drops a channel's queued changes: none are left
	slices.SortFunc(changes, func(a, b tileChange) int {
		if a.channel != b.channel {
			if a.channel < b.channel {
				return -1
			}
			return 1
		}
		return bytes.Compare(a.key[:], b.key[:])
	})
	for i := 0; i < len(changes); {
		j := i + 1
		for j < len(changes) && changes[j].channel == changes[i].channel {
			j++
		}
		if err := t.flushChannelTiles(changes[i].channel, changes[i:j]); err != nil {
			return err
		}
		i = j
	}
	clear(changes)
	return nil
}

// stampTiles moves the stamp of each channel whose messages counter this transaction
// changes without a queued tile change (a reply added or deleted), so that the index
// stays current; flushChannelTiles stamps the others.
func (t *tx) stampTiles() error {
	for ch, d := range t.deltas {
		if d.messages == 0 || slices.ContainsFunc(t.tiles, func(c tileChange) bool { return c.channel == ch }) {
			continue
		}
		cb, err := t.channel(ch, true)
		if err != nil {
			return err
		}
		stored, err := readCounts(cb)
		if err != nil {
			return fmt.Errorf("store: channel %s: %w", ch, err)
		}
		idx := cb.root.Bucket(bTiles)
		st, ok := tilesCurrent(cb, stored)
		if idx == nil || !ok {
			if err := t.rebuildTiles(cb, ch); err != nil {
				return err
			}
			continue
		}
		st.messages = uint64(stored.messages + d.messages)
		if err := putTileStamp(idx, st); err != nil {
			return fmt.Errorf("store: channel %s: tile index: %w", ch, err)
		}
	}
	return nil
}

// messagesAfter is the channel's messages counter once this transaction commits.
func (t *tx) messagesAfter(cb *chanBuckets, channel string) (int64, error) {
	c, err := readCounts(cb)
	if err != nil {
		return 0, fmt.Errorf("store: channel %s: %w", channel, err)
	}
	if d := t.deltas[channel]; d != nil {
		c.messages += d.messages
	}
	return c.messages, nil
}

// flushChannelTiles applies one channel's changes, sorted by key.
func (t *tx) flushChannelTiles(channel string, changes []tileChange) error {
	cb, err := t.channel(channel, true)
	if err != nil {
		return err
	}
	stored, err := readCounts(cb)
	if err != nil {
		return fmt.Errorf("store: channel %s: %w", channel, err)
	}
	idx := cb.root.Bucket(bTiles)
	// Incremental only over an index that matched the records before this
	// transaction; a new channel (no records, no index) starts one.
	st, ok := tilesCurrent(cb, stored)
	if (idx != nil || stored.messages != 0) && !ok {
		return t.rebuildTiles(cb, channel)
	}
	total := int64(st.timeline)
	if idx == nil {
		if idx, err = cb.root.CreateBucket(bTiles); err != nil {
			return fmt.Errorf("store: channel %s: create tile index: %w", channel, err)
		}
	}
	for i := 0; i < len(changes); {
		k := changes[i].key[:]
		// A fresh cursor each round: the puts below move the pages under an old one.
		c := idx.Cursor()
		bk, bv := blockAt(c, k)
		var first []byte
		var n uint64
		if bk == nil {
			// Below every block (or none yet): the first block starts lower.
			fk, fv := c.First()
			if len(fk) == tsKeyLen {
				if n, err = blockCount(fv); err != nil {
					return t.rebuildTiles(cb, channel)
				}
				if err := idx.Delete(fk); err != nil {
					return fmt.Errorf("store: channel %s: tile index: %w", channel, err)
				}
			}
			first = slices.Clone(k)
		} else {
			if n, err = blockCount(bv); err != nil {
				return t.rebuildTiles(cb, channel)
			}
			first = slices.Clone(bk)
		}
		// Every change below the next block's first key falls in this block.
		c = idx.Cursor()
		nk, _ := c.Seek(k)
		if nk != nil && bytes.Equal(nk, k) {
			nk, _ = c.Next()
		}
		var next []byte
		if len(nk) == tsKeyLen {
			next = slices.Clone(nk)
		}
		sum := int64(n)
		for ; i < len(changes) && (next == nil || bytes.Compare(changes[i].key[:], next) < 0); i++ {
			sum += int64(changes[i].delta)
			total += int64(changes[i].delta)
		}
		if sum < 0 {
			return t.rebuildTiles(cb, channel)
		}
		rebuilt, err := t.putBlock(cb, idx, channel, first, next, uint64(sum))
		if err != nil || rebuilt {
			return err // a rebuild replaced idx and counted every change
		}
	}
	messages, err := t.messagesAfter(cb, channel)
	if err != nil {
		return err
	}
	if total < 0 {
		return t.rebuildTiles(cb, channel)
	}
	return putTileStamp(idx, stamp{messages: uint64(messages), timeline: uint64(total)})
}

// blockAt returns the block holding k: the last whose first key is ≤ k, or nil. The
// stamp, the one key that is not a tskey, sorts after every block.
func blockAt(c *bolt.Cursor, k []byte) ([]byte, []byte) {
	bk, bv := c.Seek(k)
	switch {
	case bk == nil:
		bk, bv = c.Last()
	case len(bk) == tsKeyLen && bytes.Equal(bk, k):
		return bk, bv
	default:
		bk, bv = c.Prev()
	}
	if bk != nil && len(bk) != tsKeyLen {
		bk, bv = c.Prev()
	}
	if bk != nil && bytes.Compare(bk, k) > 0 {
		return nil, nil
	}
	return bk, bv
}

// putBlock writes a block's count, deleting an empty block and cutting one larger than
// blockSplit in two (walking its records to the middle one).
func (t *tx) putBlock(cb *chanBuckets, idx *bolt.Bucket, channel string, first, next []byte, n uint64) (rebuilt bool, _ error) {
	if n == 0 {
		if err := idx.Delete(first); err != nil {
			return false, fmt.Errorf("store: channel %s: tile index: %w", channel, err)
		}
		return false, nil
	}
	for n > blockSplit {
		half := n / 2
		var mid []byte
		seen := uint64(0)
		c := cb.msgs.Cursor()
		for k, v := c.Seek(first); k != nil && (next == nil || bytes.Compare(k, next) < 0); k, v = c.Next() {
			if !inTimeline(v) {
				continue
			}
			if seen == half {
				mid = slices.Clone(k)
				break
			}
			seen++
		}
		if mid == nil {
			// Fewer records than counted: the index is wrong. The rebuild drops idx:
			// the caller must not use it again.
			return true, t.rebuildTiles(cb, channel)
		}
		if err := idx.Put(first, binary.AppendUvarint(nil, half)); err != nil {
			return false, fmt.Errorf("store: channel %s: tile index: %w", channel, err)
		}
		first, n = mid, n-half
	}
	if err := idx.Put(first, binary.AppendUvarint(nil, n)); err != nil {
		return false, fmt.Errorf("store: channel %s: tile index: %w", channel, err)
	}
	return false, nil
}

func blockCount(v []byte) (uint64, error) {
	n, k := binary.Uvarint(v)
	if k <= 0 || k != len(v) {
		return 0, errors.New("unreadable tile block count")
	}
	return n, nil
}

// rebuildTiles writes cb's tile index anew from its records, stamped with the counter
// this transaction commits.
func (t *tx) rebuildTiles(cb *chanBuckets, channel string) error {
	if cb.root.Bucket(bTiles) != nil {
		if err := cb.root.DeleteBucket(bTiles); err != nil {
			return fmt.Errorf("store: channel %s: drop tile index: %w", channel, err)
		}
	}
	idx, err := cb.root.CreateBucket(bTiles)
	if err != nil {
		return fmt.Errorf("store: channel %s: create tile index: %w", channel, err)
	}
	var first []byte
	n, total := uint64(0), uint64(0)
	c := cb.msgs.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if !inTimeline(v) {
			continue
		}
		if n == rebuildBlock {
			if err := idx.Put(first, binary.AppendUvarint(nil, n)); err != nil {
				return fmt.Errorf("store: channel %s: tile index: %w", channel, err)
			}
			n = 0
		}
		if n == 0 {
			first = slices.Clone(k)
		}
		n++
		total++
	}
	if n > 0 {
		if err := idx.Put(first, binary.AppendUvarint(nil, n)); err != nil {
			return fmt.Errorf("store: channel %s: tile index: %w", channel, err)
		}
	}
	// This transaction's queued changes are in the records already.
	t.dropTileChanges(channel)
	messages, err := t.messagesAfter(cb, channel)
	if err != nil {
		return err
	}
	return putTileStamp(idx, stamp{messages: uint64(messages), timeline: total})
}

// dropTileChanges forgets the queued changes of channel (a rebuild counted them).
func (t *tx) dropTileChanges(channel string) {
	t.tiles = slices.DeleteFunc(t.tiles, func(c tileChange) bool { return c.channel == channel })
}

// rebuildStaleTiles rebuilds, in one write transaction, every channel's tile index
// whose stamp does not match its records (Open calls it: stores made before the index,
// or written by a build without it). It walks the records of those channels only.
func rebuildStaleTiles(btx *bolt.Tx) error {
	all := btx.Bucket(bChan)
	if all == nil {
		return nil
	}
	var stale [][]byte
	err := all.ForEachBucket(func(name []byte) error {
		root := all.Bucket(name)
		if root == nil || root.Bucket(bMsgs) == nil {
			return nil
		}
		cb := &chanBuckets{root: root}
		c, err := readCounts(cb)
		if _, ok := tilesCurrent(cb, c); err != nil || !ok {
			stale = append(stale, slices.Clone(name))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(stale) == 0 {
		return nil
	}
	t := newTx(btx, nil, nil)
	for _, name := range stale {
		cb, err := t.channel(string(name), false)
		if err != nil || cb == nil {
			continue // not a valid channel ID: nothing reads it
		}
		if _, err := readCounts(cb); err != nil {
			continue // unreadable counters: nothing to stamp with
		}
		if err := t.rebuildTiles(cb, string(name)); err != nil {
			return err
		}
	}
	return nil
}

// block is one tile index block seen by a lookup: its first key and the number of its
// first record.
type block struct {
	first []byte
	start uint64
	count uint64
}

// errTilesInconsistent means the tile index disagreed with the records: the lookup
// falls back to the full walk.
var errTilesInconsistent = errors.New("tile index inconsistent")

// errTilesPending means this write transaction changed the channel's timeline: the
// index catches up at commit, and the lookup walks meanwhile.
var errTilesPending = errors.New("tile index has changes pending")

// indexedTile is TimelineTile by the tile index. It returns errTilesInconsistent (and
// no tile) when the index cannot be used or disagrees with the records, and ok false
// when ts is not a stored timeline message.
func (t *tx) indexedTile(cb *chanBuckets, channel string, tk []byte, size int) (readmodel.Tile, bool, error) {
	idx := cb.root.Bucket(bTiles)
	c, err := readCounts(cb)
	st, ok := tilesCurrent(cb, c)
	if err != nil || !ok {
		return readmodel.Tile{}, false, errTilesInconsistent
	}
	// Pending changes of this (write) transaction are not in the index yet.
	if slices.ContainsFunc(t.tiles, func(c tileChange) bool { return c.channel == channel }) {
		return readmodel.Tile{}, false, errTilesPending
	}
	// Every block is read, not only those below ts: their sum must be the stamp's, or
	// the counts were damaged.
	blocks := t.blocks[:0]
	defer func() { t.blocks = blocks[:0] }()
	start, below := uint64(0), 0
	ic := idx.Cursor()
	for k, v := ic.First(); len(k) == tsKeyLen; k, v = ic.Next() {
		n, err := blockCount(v)
		if err != nil || n == 0 {
			return readmodel.Tile{}, false, errTilesInconsistent
		}
		blocks = append(blocks, block{first: k, start: start, count: n})
		start += n
		if bytes.Compare(k, tk) <= 0 {
			below = len(blocks)
		}
	}
	if start != st.timeline {
		return readmodel.Tile{}, false, errTilesInconsistent
	}
	blocks = blocks[:below]
	mc := cb.msgs.Cursor()
	if len(blocks) == 0 {
		// Below the first block: no timeline record may be there.
		if k, v := mc.Seek(tk); k != nil && bytes.Equal(k, tk) && inTimeline(v) {
			return readmodel.Tile{}, false, errTilesInconsistent
		}
		return readmodel.Tile{}, false, nil
	}
	b := blocks[len(blocks)-1]
	// The number of ts: b's first, plus the timeline records of b below ts.
	rank := b.start
	found := false
	for k, v := mc.Seek(b.first); k != nil; k, v = mc.Next() {
		if !inTimeline(v) {
			continue
		}
		if cmp := bytes.Compare(k, tk); cmp >= 0 {
			found = cmp == 0
			break
		}
		rank++
	}
	if !found {
		return readmodel.Tile{}, false, nil
	}
	if rank >= b.start+b.count {
		return readmodel.Tile{}, false, errTilesInconsistent
	}
	first := rank - rank%uint64(size)
	j, _ := slices.BinarySearchFunc(blocks, first, func(b block, r uint64) int {
		switch {
		case b.start+b.count <= r:
			return -1
		case b.start > r:
			return 1
		}
		return 0
	})
	if j == len(blocks) {
		return readmodel.Tile{}, false, errTilesInconsistent
	}
	skip := first - blocks[j].start
	k, v := mc.Seek(blocks[j].first)
	for ; k != nil; k, v = mc.Next() {
		if !inTimeline(v) {
			continue
		}
		if skip == 0 {
			break
		}
		skip--
	}
	if k == nil {
		return readmodel.Tile{}, false, errTilesInconsistent
	}
	tile := readmodel.Tile{Oldest: readmodel.TS(keyString(k))}
	var last []byte
	left := size
	has := false
	for ; k != nil && left > 0; k, v = mc.Next() {
		if !inTimeline(v) {
			continue
		}
		left--
		last = k
		if bytes.Equal(k, tk) {
			has = true
		}
		m, err := cb.decode(channel, k, v)
		if err != nil {
			t.addMessage(channel, k, err)
			continue
		}
		tile.Messages = append(tile.Messages, m)
	}
	if !has {
		return readmodel.Tile{}, false, errTilesInconsistent
	}
	tile.Latest = readmodel.TS(keyString(last))
	return tile, true, nil
}
