package boltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// The webhooks' outbox: one nested bucket per webhook name under outbox/, holding
//
//	seq (8 bytes)              → readmodel.OutboxRow (JSON, format 1), parked or not
//	"c"/ channel|0x00|seq      → due (8) | enqueued (8), unix nanoseconds (0: none):
//	                             the pending rows, by conversation then seq; the first
//	                             of each conversation is its head (OutboxHeads)
//	"p"/ seq                   → 1: the parked rows
//	"n"                        → pending, parked, dropped, last dropped seq (4 × 8)
//
// The index and the counts are kept by PutOutbox, DeleteOutbox and TrimOutbox in the
// row's own transaction, so a claim reads a conversation's head, not the whole
// outbox, and status reads four numbers. A store made before them gets them on open
// (indexOutbox).
var (
	// parkedMark is the value of a parked row's entry: bbolt's Get does not tell an
	// empty value from none.
	parkedMark    = []byte{1}
	bOutboxChans  = []byte("c")
	bOutboxParked = []byte("p")
	kOutboxCounts = []byte("n")
)

// outboxBuckets are one webhook's buckets, valid for the transaction.
type outboxBuckets struct {
	root, chans, parked *bolt.Bucket
}

// outboxCounts are the "n" value of a webhook's bucket.
type outboxCounts struct {
	pending, parked, dropped, lastDropped uint64
}

func readOutboxCounts(root *bolt.Bucket) (outboxCounts, bool) {
	v := root.Get(kOutboxCounts)
	if len(v) != 32 {
		return outboxCounts{}, false
	}
	return outboxCounts{binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:]),
		binary.BigEndian.Uint64(v[16:]), binary.BigEndian.Uint64(v[24:])}, true
}

func (c outboxCounts) put(root *bolt.Bucket) error {
	v := make([]byte, 0, 32)
	for _, n := range []uint64{c.pending, c.parked, c.dropped, c.lastDropped} {
		v = binary.BigEndian.AppendUint64(v, n)
	}
	return root.Put(kOutboxCounts, v)
}

// outbox returns webhook's buckets; nil, nil when it has none and !create.
func (t *tx) outbox(webhook string, create bool) (*outboxBuckets, error) {
	if err := checkKey("webhook name", webhook); err != nil {
		return nil, err
	}
	top := t.btx.Bucket(bOutbox)
	if top == nil {
		if !create {
			return nil, nil
		}
		return nil, fmt.Errorf("store: bucket %s missing", bOutbox)
	}
	root := top.Bucket([]byte(webhook))
	if root == nil && !create {
		return nil, nil
	}
	var err error
	if root == nil {
		if root, err = top.CreateBucket([]byte(webhook)); err != nil {
			return nil, fmt.Errorf("store: outbox bucket %q: %w", webhook, err)
		}
	}
	return outboxIndex(root, create)
}

// outboxIndex returns the buckets of a webhook's root, creating the index buckets and
// the counts when create.
func outboxIndex(root *bolt.Bucket, create bool) (*outboxBuckets, error) {
	ob := &outboxBuckets{root: root, chans: root.Bucket(bOutboxChans), parked: root.Bucket(bOutboxParked)}
	if !create || ob.chans != nil && ob.parked != nil {
		return ob, nil
	}
	var err error
	if ob.chans, err = root.CreateBucketIfNotExists(bOutboxChans); err != nil {
		return nil, err
	}
	if ob.parked, err = root.CreateBucketIfNotExists(bOutboxParked); err != nil {
		return nil, err
	}
	if _, ok := readOutboxCounts(root); !ok {
		return ob, outboxCounts{}.put(root)
	}
	return ob, nil
}

// chanKey is a pending row's index key: channel | 0x00 | seq.
func chanKey(channel string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(channel), 0), seq)
}

// splitChanKey is the inverse of chanKey; ok is false for a malformed key.
func splitChanKey(k []byte) (channel string, seq uint64, ok bool) {
	if len(k) < 9 || k[len(k)-9] != 0 {
		return "", 0, false
	}
	return string(k[:len(k)-9]), binary.BigEndian.Uint64(k[len(k)-8:]), true
}

func timeKey(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return polledKey(t)
}

func keyTime(n uint64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(n)).UTC()
}

// chanValue is a pending row's index value: due | enqueued.
func chanValue(r *readmodel.OutboxRow) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(make([]byte, 0, 16), timeKey(r.DueAt())), timeKey(r.Enqueued))
}

// PutOutbox replaces the row (r.Webhook, r.Seq), creating the webhook's bucket, and
// keeps its index entry and the counts.
func (t *tx) PutOutbox(r readmodel.OutboxRow) error {
	if err := t.writable(); err != nil {
		return err
	}
	ob, err := t.outbox(r.Webhook, true)
	if err != nil {
		return err
	}
	key, ck := seqKey(r.Seq), chanKey(r.Change.Channel, r.Seq)
	counts, _ := readOutboxCounts(ob.root)
	if ob.chans.Get(ck) != nil {
		counts.pending--
	}
	if ob.parked.Get(key) != nil {
		counts.parked--
	}
	if err := putJSONIn(ob.root, bOutbox, key, r); err != nil {
		return err
	}
	if r.Parked {
		counts.parked++
		err = errorsJoin(ob.chans.Delete(ck), ob.parked.Put(key, parkedMark))
	} else {
		counts.pending++
		err = errorsJoin(ob.chans.Put(ck, chanValue(&r)), ob.parked.Delete(key))
	}
	if err != nil {
		return fmt.Errorf("store: outbox %q/%d index: %w", r.Webhook, r.Seq, err)
	}
	return counts.put(ob.root)
}

// errorsJoin returns the first non-nil error.
func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// DeleteOutbox removes the row (webhook, seq) and its index entry.
func (t *tx) DeleteOutbox(webhook string, seq uint64) error {
	if err := t.writable(); err != nil {
		return err
	}
	ob, err := t.outbox(webhook, false)
	if err != nil || ob == nil {
		return err
	}
	if ob.chans == nil { // made before the index, opened read-write since: indexOutbox ran
		if ob, err = outboxIndex(ob.root, true); err != nil {
			return err
		}
	}
	_, err = deleteOutboxRow(ob, seq)
	return err
}

// deleteOutboxRow deletes the row seq of ob and its index entry, keeping the counts,
// and reports whether there was a row.
func deleteOutboxRow(ob *outboxBuckets, seq uint64) (bool, error) {
	key := seqKey(seq)
	v := ob.root.Get(key)
	if v == nil {
		return false, nil
	}
	counts, _ := readOutboxCounts(ob.root)
	var r readmodel.OutboxRow
	if decodeJSON(v, &r) == nil {
		if ck := chanKey(r.Change.Channel, seq); ob.chans.Get(ck) != nil {
			if err := ob.chans.Delete(ck); err != nil {
				return true, err
			}
			counts.pending--
		}
	} else if ck := findChanKey(ob.chans, seq); ck != nil {
		// Undecodable (a flipped bit): its conversation is not known; its index
		// entry is found by its seq.
		if err := ob.chans.Delete(ck); err != nil {
			return true, err
		}
		counts.pending--
	}
	if ob.parked.Get(key) != nil {
		if err := ob.parked.Delete(key); err != nil {
			return true, err
		}
		counts.parked--
	}
	if err := ob.root.Delete(key); err != nil {
		return true, err
	}
	return true, counts.put(ob.root)
}

// findChanKey returns the index key of seq, walking the whole index: only for a row
// that no longer decodes.
func findChanKey(chans *bolt.Bucket, seq uint64) []byte {
	c := chans.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if _, s, ok := splitChanKey(k); ok && s == seq {
			return bytes.Clone(k)
		}
	}
	return nil
}

// Outbox calls fn for the rows of one webhook ("" for all), by seq ascending.
func (t *tx) Outbox(webhook string, fn func(readmodel.OutboxRow) error) error {
	root := t.btx.Bucket(bOutbox)
	if root == nil {
		return nil
	}
	if webhook != "" {
		b := root.Bucket([]byte(webhook))
		if b == nil {
			return nil
		}
		return stopped(t.outboxRows(webhook, b, fn))
	}
	return stopped(root.ForEachBucket(func(name []byte) error { return t.outboxRows(string(name), root.Bucket(name), fn) }))
}

// outboxRows walks one webhook's rows; a callback's ErrStopIteration is passed up
// unchanged, so that a walk over every webhook stops too. An undecodable row is
// skipped and reported, so that it stops neither its webhook's claims nor the status.
func (t *tx) outboxRows(webhook string, b *bolt.Bucket, fn func(readmodel.OutboxRow) error) error {
	team := teamOf(t)
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(k) != 8 {
			continue // the index buckets and the counts
		}
		var r readmodel.OutboxRow
		if err := decodeJSON(v, &r); err != nil {
			t.addOutbox(webhook, k, err)
			continue
		}
		r.Change.TeamID = team // as the feed's reads: a delivery says its workspace
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// OutboxRow returns the row (webhook, seq).
func (t *tx) OutboxRow(webhook string, seq uint64) (readmodel.OutboxRow, bool, error) {
	var r readmodel.OutboxRow
	root := t.btx.Bucket(bOutbox)
	if root == nil || webhook == "" {
		return r, false, nil
	}
	b := root.Bucket([]byte(webhook))
	if b == nil {
		return r, false, nil
	}
	return t.outboxRow(webhook, b, seq)
}

func (t *tx) outboxRow(webhook string, b *bolt.Bucket, seq uint64) (readmodel.OutboxRow, bool, error) {
	var r readmodel.OutboxRow
	v := b.Get(seqKey(seq))
	if v == nil {
		return r, false, nil
	}
	if err := decodeJSON(v, &r); err != nil {
		t.addOutbox(webhook, seqKey(seq), err) // absent, as every read of it
		return readmodel.OutboxRow{}, false, nil
	}
	r.Change.TeamID = teamOf(t)
	return r, true, nil
}

// OutboxHeads calls fn with each conversation's first pending row of webhook: one
// seek per conversation.
func (t *tx) OutboxHeads(webhook string, fn func(readmodel.OutboxEntry) error) error {
	ob, err := t.outbox(webhook, false)
	if err != nil || ob == nil || ob.chans == nil {
		return err
	}
	c := ob.chans.Cursor()
	for k, v := c.First(); k != nil; {
		h, ok := outboxEntry(k, v)
		if !ok {
			k, v = c.Next() // not an index key: passed over
			continue
		}
		if err := fn(h); err != nil {
			return stopped(err)
		}
		k, v = c.Seek(append([]byte(h.Channel), 1)) // the next conversation
	}
	return nil
}

// OutboxPending calls fn with the index entries of channel's pending rows of
// webhook, by seq.
func (t *tx) OutboxPending(webhook, channel string, fn func(readmodel.OutboxEntry) error) error {
	ob, err := t.outbox(webhook, false)
	if err != nil || ob == nil || ob.chans == nil {
		return err
	}
	prefix := append([]byte(channel), 0)
	c := ob.chans.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if e, ok := outboxEntry(k, v); ok {
			if err := fn(e); err != nil {
				return stopped(err)
			}
		}
	}
	return nil
}

// outboxEntry decodes an index entry; ok is false for a malformed key.
func outboxEntry(k, v []byte) (readmodel.OutboxEntry, bool) {
	ch, seq, ok := splitChanKey(k)
	if !ok {
		return readmodel.OutboxEntry{}, false
	}
	e := readmodel.OutboxEntry{Channel: ch, Seq: seq}
	if len(v) == 16 {
		e.DueAt, e.Enqueued = keyTime(binary.BigEndian.Uint64(v)), keyTime(binary.BigEndian.Uint64(v[8:]))
	}
	return e, true
}

// OutboxParked calls fn for the parked rows of webhook, by seq.
func (t *tx) OutboxParked(webhook string, fn func(readmodel.OutboxRow) error) error {
	ob, err := t.outbox(webhook, false)
	if err != nil || ob == nil {
		return err
	}
	if ob.parked == nil { // a store made before the index, opened read-only
		return t.Outbox(webhook, func(r readmodel.OutboxRow) error {
			if r.Parked {
				return fn(r)
			}
			return nil
		})
	}
	c := ob.parked.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) != 8 {
			continue
		}
		r, found, err := t.outboxRow(webhook, ob.root, binary.BigEndian.Uint64(k))
		if err != nil {
			return err
		}
		if !found {
			continue
		}
		if err := fn(r); err != nil {
			return stopped(err)
		}
	}
	return nil
}

// OutboxCounts calls fn with the counts of every webhook bucket.
func (t *tx) OutboxCounts(fn func(string, readmodel.OutboxCounts) error) error {
	top := t.btx.Bucket(bOutbox)
	if top == nil {
		return nil
	}
	return stopped(top.ForEachBucket(func(name []byte) error {
		root := top.Bucket(name)
		c, ok := readOutboxCounts(root)
		if !ok {
			// A store made before the counts, opened read-only: counted the long way.
			if err := t.outboxRows(string(name), root, func(r readmodel.OutboxRow) error {
				if r.Parked {
					c.parked++
				} else {
					c.pending++
				}
				return nil
			}); err != nil {
				return err
			}
		}
		return fn(string(name), readmodel.OutboxCounts{Pending: int(c.pending), Parked: int(c.parked), Dropped: c.dropped, LastDropped: c.lastDropped})
	}))
}

// TrimOutbox drops webhook's oldest rows while it holds more than maxRows.
func (t *tx) TrimOutbox(webhook string, maxRows int) (readmodel.OutboxDrop, error) {
	var d readmodel.OutboxDrop
	if err := t.writable(); err != nil {
		return d, err
	}
	ob, err := t.outbox(webhook, false)
	if err != nil || ob == nil || maxRows < 0 {
		return d, err
	}
	if ob.chans == nil {
		if ob, err = outboxIndex(ob.root, true); err != nil {
			return d, err
		}
	}
	counts, _ := readOutboxCounts(ob.root)
	over := int(counts.pending+counts.parked) - maxRows
	if over <= 0 {
		return d, nil
	}
	var seqs []uint64
	c := ob.root.Cursor()
	for k, _ := c.First(); k != nil && len(seqs) < over; k, _ = c.Next() {
		if len(k) == 8 {
			seqs = append(seqs, binary.BigEndian.Uint64(k))
		}
	}
	for _, seq := range seqs {
		if _, err := deleteOutboxRow(ob, seq); err != nil {
			return d, err
		}
	}
	if len(seqs) == 0 {
		return d, nil
	}
	counts, _ = readOutboxCounts(ob.root)
	counts.dropped += uint64(len(seqs))
	counts.lastDropped = seqs[len(seqs)-1]
	d = readmodel.OutboxDrop{N: len(seqs), First: seqs[0], Last: seqs[len(seqs)-1]}
	return d, counts.put(ob.root)
}

// indexOutbox builds the index and the counts of every webhook bucket that lacks
// them (a store made before them), from its rows. An undecodable row is left out of
// both; reads report it as before.
func indexOutbox(btx *bolt.Tx) error {
	top := btx.Bucket(bOutbox)
	if top == nil {
		return nil
	}
	var names [][]byte
	if err := top.ForEachBucket(func(name []byte) error {
		if _, ok := readOutboxCounts(top.Bucket(name)); !ok {
			names = append(names, bytes.Clone(name))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, name := range names {
		root := top.Bucket(name)
		ob, err := outboxIndex(root, true)
		if err != nil {
			return err
		}
		var counts outboxCounts
		c := root.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			var r readmodel.OutboxRow
			if len(k) != 8 || decodeJSON(v, &r) != nil {
				continue
			}
			if r.Parked {
				counts.parked++
				err = ob.parked.Put(k, parkedMark)
			} else {
				counts.pending++
				err = ob.chans.Put(chanKey(r.Change.Channel, r.Seq), chanValue(&r))
			}
			if err != nil {
				return err
			}
		}
		if err := counts.put(root); err != nil {
			return err
		}
	}
	return nil
}
