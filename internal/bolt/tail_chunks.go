package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// The tail index stores its entries in chunks. An entry is (polled, channel, tskey) →
// exact ts; entries sharing polled and channel form a group, and a group is stored as
// one or more chunks of at most tailChunkMax entries:
//
//	key   polled(8) | channel | 0x00 | tskey of the chunk's last entry (12)
//	value format(1) then, ascending by tskey, { tskey(12) uvarint(len(ts)) ts }
//
// A chunk is never empty and its key always names its last entry, so bucket order is
// entry order and a walk from First yields entries in tail order. Naming the last entry
// lets a forward Seek find the chunk an entry belongs in: bbolt's backward moves (Prev,
// Last) misbehave, even loop forever, over leaves emptied earlier in the same write
// transaction, which is exactly what rewriting chunks produces.
//
// Why chunks: with one bbolt key per entry, re-reading a 999-message page meant 999
// deletes and 999 puts in the tail bucket on top of the 999 message puts — more than the
// message writes themselves. A page polled at one time is one group, so it now costs
// about 2×999/tailChunkMax bbolt operations.
const (
	formatTail1  = 1
	tailChunkMax = 64
)

// tailItem is one entry inside a chunk.
type tailItem struct {
	tsKey, ts []byte
}

// appendTailPrefix appends a group prefix: polled(8) | channel | 0x00.
func appendTailPrefix(dst []byte, polled uint64, channel string) []byte {
	dst = binary.BigEndian.AppendUint64(dst, polled)
	dst = append(dst, channel...)
	return append(dst, 0)
}

// inGroup reports whether chunk key k belongs to the group with that prefix.
func inGroup(k, prefix []byte) bool {
	return len(k) == len(prefix)+tsKeyLen && bytes.HasPrefix(k, prefix)
}

// decodeChunk appends the entries of a chunk value to items. They point into v.
func decodeChunk(v []byte, items []tailItem) ([]tailItem, error) {
	p, err := chunkEntries(v)
	for err == nil && len(p) > 0 {
		var it tailItem
		if it, p, err = nextChunkEntry(p); err == nil {
			items = append(items, it)
		}
	}
	return items, err
}

// chunkEntries checks the format byte of a chunk value and returns its entries.
func chunkEntries(v []byte) ([]byte, error) {
	if len(v) < 1 || v[0] != formatTail1 {
		return nil, errors.New("unknown tail chunk format")
	}
	if len(v) == 1 {
		return nil, errors.New("empty tail chunk")
	}
	return v[1:], nil
}

// nextChunkEntry decodes the entry at the start of p and returns the rest.
func nextChunkEntry(p []byte) (tailItem, []byte, error) {
	if len(p) < tsKeyLen+1 {
		return tailItem{}, nil, errTruncated
	}
	l, n := binary.Uvarint(p[tsKeyLen:])
	if n <= 0 || l > uint64(len(p)-tsKeyLen-n) {
		return tailItem{}, nil, errTruncated
	}
	end := tsKeyLen + n + int(l)
	return tailItem{tsKey: p[:tsKeyLen], ts: p[tsKeyLen+n : end]}, p[end:], nil
}

func chunkSize(items []tailItem) int {
	n := 1
	for _, it := range items {
		n += tsKeyLen + maxVarint + len(it.ts)
	}
	return n
}

func appendChunk(dst []byte, items []tailItem) []byte {
	dst = append(dst, formatTail1)
	for _, it := range items {
		dst = append(dst, it.tsKey...)
		dst = binary.AppendUvarint(dst, uint64(len(it.ts)))
		dst = append(dst, it.ts...)
	}
	return dst
}

// flushTail applies the queued tail changes group by group.
func (t *tx) flushTail() error {
	if len(t.tail.puts) == 0 && len(t.tail.dels) == 0 {
		return nil
	}
	b, err := t.bucket(bTail)
	if err != nil {
		return err
	}
	ops := t.tail.pendingTail()
	for len(ops) > 0 {
		prefix := ops[0].key[:len(ops[0].key)-tsKeyLen]
		n := 1
		for n < len(ops) && inGroup(ops[n].key, prefix) {
			n++
		}
		if err := t.applyTailGroup(b, prefix, ops[:n]); err != nil {
			return fmt.Errorf("store: tail index group %x: %w", prefix, err)
		}
		ops = ops[n:]
	}
	return nil
}

// applyTailGroup applies ops (ascending, one group) chunk by chunk: Seek finds the
// first chunk whose last entry is at or after the first op; every op up to that last
// entry is merged into it, and the chunk is rewritten, split when it outgrows
// tailChunkMax. Ops after the group's last chunk form new chunks.
func (t *tx) applyTailGroup(b *bolt.Bucket, prefix []byte, ops []tailOp) error {
	for len(ops) > 0 {
		k, v := b.Cursor().Seek(ops[0].key)
		n := len(ops)
		if k != nil && inGroup(k, prefix) {
			n = 1
			for n < len(ops) && bytes.Compare(ops[n].key, k) <= 0 {
				n++
			}
		} else {
			k, v = nil, nil
		}
		// Copy the old chunk out: it is deleted or overwritten below.
		t.chunkBuf = append(t.chunkBuf[:0], v...)
		t.oldChunkKey = append(t.oldChunkKey[:0], k...)
		items := t.items[:0]
		if k != nil {
			var err error
			if items, err = decodeTailChunk(t.oldChunkKey, t.chunkBuf, items); err != nil {
				// Its entries are lost until the rebuild the report asks for.
				t.addIndex(indexTail, bTail, t.oldChunkKey, err, tailChunkOK)
				items = items[:0]
			}
		}
		merged := mergeTail(t.merged[:0], items, ops[:n])
		t.items, t.merged = items, merged
		if err := t.writeChunks(b, prefix, t.oldChunkKey, merged); err != nil {
			return err
		}
		ops = ops[n:]
	}
	return nil
}

// mergeTail merges ascending ops into ascending items: a put inserts or replaces, a
// delete removes.
func mergeTail(dst, items []tailItem, ops []tailOp) []tailItem {
	for len(items) > 0 || len(ops) > 0 {
		if len(ops) == 0 {
			return append(dst, items...)
		}
		opKey := ops[0].key[len(ops[0].key)-tsKeyLen:]
		c := 1
		if len(items) > 0 {
			c = bytes.Compare(items[0].tsKey, opKey)
		}
		switch {
		case c < 0:
			dst = append(dst, items[0])
			items = items[1:]
		default:
			if c == 0 {
				items = items[1:]
			}
			if ops[0].val != nil {
				dst = append(dst, tailItem{tsKey: opKey, ts: ops[0].val})
			}
			ops = ops[1:]
		}
	}
	return dst
}

// writeChunks replaces the chunk oldKey (nil: none) with items, split into chunks of
// at most tailChunkMax entries of even size.
func (t *tx) writeChunks(b *bolt.Bucket, prefix, oldKey []byte, items []tailItem) error {
	parts := (len(items) + tailChunkMax - 1) / tailChunkMax
	keepOld := false
	for i := 0; i < parts; i++ {
		part := items[i*len(items)/parts : (i+1)*len(items)/parts]
		k := append(append(t.kbuf[:0], prefix...), part[len(part)-1].tsKey...)
		t.kbuf = k
		if bytes.Equal(k, oldKey) {
			keepOld = true // overwritten in place
		}
		v := t.arena.alloc(chunkSize(part))
		v = appendChunk(v, part)
		t.arena.commit(v)
		if err := b.Put(k, v); err != nil {
			return fmt.Errorf("put chunk %x: %w", k, err)
		}
	}
	if len(oldKey) > 0 && !keepOld {
		if err := b.Delete(oldKey); err != nil {
			return fmt.Errorf("delete chunk %x: %w", oldKey, err)
		}
	}
	return nil
}

// TailOldest returns up to n tracked messages, never polled first, then least recently
// polled, ties by channel then ts, skipping those skip (if non-nil) rejects. It walks
// the tail index from its start: O(log size) to position, then one step per entry
// returned or skipped (and at most one partly read chunk of tailChunkMax entries).
// RotatedAt in the result is in UTC at nanosecond precision.
func (t *tx) TailOldest(n int, skip func(readmodel.TailEntry) bool) ([]readmodel.TailEntry, error) {
	return t.tailFrom(0, n, skip)
}

// TailAfter is TailOldest from the first entry polled after at (at nanosecond
// precision), at the same cost. It seeks rather than walking back from the end:
// bbolt's Cursor.Last loops forever once a transaction has emptied every leaf of a
// bucket (see TestTailRepollWholeStore).
func (t *tx) TailAfter(at time.Time, n int, skip func(readmodel.TailEntry) bool) ([]readmodel.TailEntry, error) {
	return t.tailFrom(polledKey(at)+1, n, skip)
}

// tailFrom walks the tail index from the first group polled at from (a polledKey) or
// later.
func (t *tx) tailFrom(from uint64, n int, skip func(readmodel.TailEntry) bool) ([]readmodel.TailEntry, error) {
	if n <= 0 {
		return nil, nil
	}
	if err := t.flushTail(); err != nil {
		return nil, err
	}
	b, err := t.bucket(bTail)
	if err != nil {
		return nil, err
	}
	out := make([]readmodel.TailEntry, 0, min(n, 64))
	c := b.Cursor()
	for k, v := c.Seek(binary.BigEndian.AppendUint64(nil, from)); k != nil && len(out) < n; k, v = c.Next() {
		// A chunk that does not decode is skipped whole (its entries read before the
		// fault are taken back) and reported; the next write rebuilds the index.
		start := len(out)
		if err := t.tailChunk(k, v, n, skip, &out); err != nil {
			out = out[:start]
			t.addIndex(indexTail, bTail, k, err, tailChunkOK)
		}
	}
	return out, nil
}

// tailEntryCurrent reports whether the tail entry (tsKey, polled) of channel cb
// stands for its message: a tracked one with that tail time. A flipped bit in a chunk
// key can move entries to where no message puts them (a poll time, a channel):
// those are stale, and would otherwise be read again in every rotation, for ever.
// A message whose header does not decode keeps its entry: its next read heals it.
func (t *tx) tailEntryCurrent(cb *chanBuckets, tsKey []byte, polled uint64) bool {
	if cb == nil {
		return false
	}
	v := cb.get(tsKey)
	if v == nil {
		return false
	}
	h, err := readHeader(v)
	return err != nil || h.tracked() && h.polled == polled
}

// tailChunk appends the entries of one chunk to out, up to n, skipping those skip
// rejects. Entries are decoded one at a time: most of a chunk may be past n.
func (t *tx) tailChunk(k, v []byte, n int, skip func(readmodel.TailEntry) bool, out *[]readmodel.TailEntry) error {
	if len(k) < 8+1+1+tsKeyLen || k[len(k)-tsKeyLen-1] != 0 {
		return errors.New("malformed tail chunk key")
	}
	p, err := chunkEntries(v)
	if err != nil {
		return err
	}
	var polled *time.Time
	if pk := binary.BigEndian.Uint64(k[:8]); pk != 0 {
		pt := time.Unix(0, int64(pk)).UTC()
		polled = &pt
	}
	channel := string(k[8 : len(k)-tsKeyLen-1])
	cb, _ := t.channel(channel, false) // nil: no such channel, every entry is stale
	for len(p) > 0 && len(*out) < n {
		var it tailItem
		if it, p, err = nextChunkEntry(p); err != nil {
			return err
		}
		ts := readmodel.TS(it.ts)
		if key := ts.Key(); !bytes.Equal(key[:], it.tsKey) || key == zeroKey && !ts.Valid() {
			return fmt.Errorf("ts %q does not match its key", it.ts)
		}
		if !t.tailEntryCurrent(cb, it.tsKey, binary.BigEndian.Uint64(k[:8])) {
			t.addStale(indexTail, fmt.Sprintf("%s entry %s/%s at %d", indexTail, channel, ts, binary.BigEndian.Uint64(k[:8])), "does not match a tracked message")
			continue
		}
		e := readmodel.TailEntry{Ref: readmodel.Ref{Channel: channel, TS: ts}, RotatedAt: polled}
		if skip == nil || !skip(e) {
			*out = append(*out, e)
		}
	}
	return nil
}
