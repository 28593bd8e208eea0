package boltstore

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// The change feed (bucket changes/) and the webhooks' outbox (bucket outbox/, one
// nested bucket per webhook name). Both are keyed by seq, 8 bytes big-endian, so a
// cursor walks them in seq order; values are JSON (format 1). The feed's seqs come
// from the changes bucket's own sequence (bbolt NextSequence), which survives the
// deletion of every key: a seq is never reused by this store.
var (
	bChanges = []byte("changes")
	bOutbox  = []byte("outbox")
)

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

// AppendChange assigns c.Seq from the feed's sequence and stores c.
func (t *tx) AppendChange(c *readmodel.Change) error {
	if err := t.writable(); err != nil {
		return err
	}
	b, err := t.bucket(bChanges)
	if err != nil {
		return err
	}
	seq, err := b.NextSequence()
	if err != nil {
		return fmt.Errorf("store: next change seq: %w", err)
	}
	c.Seq = seq
	return putJSONIn(b, bChanges, seqKey(seq), c)
}

// Changes calls fn for the stored changes after seq after, ascending. A store opened
// read-only before its first write by this version has no feed: then it is empty.
func (t *tx) Changes(after uint64, fn func(readmodel.Change) error) error {
	b := t.btx.Bucket(bChanges)
	if b == nil || after == math.MaxUint64 { // after+1 would wrap to the first change
		return nil
	}
	c := b.Cursor()
	for k, v := c.Seek(seqKey(after + 1)); k != nil; k, v = c.Next() {
		var ch readmodel.Change
		if err := decodeJSON(v, &ch); err != nil {
			t.addChange(k, err) // skipped and reported: the feed after it stays readable
			continue
		}
		if err := fn(ch); err != nil {
			return stopped(err)
		}
	}
	return nil
}

// ChangeBounds returns the oldest stored seq (0 when none) and the last assigned.
func (t *tx) ChangeBounds() (oldest, last uint64, err error) {
	b := t.btx.Bucket(bChanges)
	if b == nil {
		return 0, 0, nil
	}
	if k, _ := b.Cursor().First(); k != nil {
		if len(k) != 8 {
			return 0, 0, decodeError(string(bChanges), k, fmt.Errorf("malformed key"))
		}
		oldest = binary.BigEndian.Uint64(k)
	}
	return oldest, b.Sequence(), nil
}

// DeleteChange removes one change.
func (t *tx) DeleteChange(seq uint64) error {
	if err := t.writable(); err != nil {
		return err
	}
	b, err := t.bucket(bChanges)
	if err != nil {
		return err
	}
	return b.Delete(seqKey(seq))
}

// PutOutbox replaces the row (r.Webhook, r.Seq), creating the webhook's bucket.
func (t *tx) PutOutbox(r readmodel.OutboxRow) error {
	if err := t.writable(); err != nil {
		return err
	}
	if err := checkKey("webhook name", r.Webhook); err != nil {
		return err
	}
	root, err := t.bucket(bOutbox)
	if err != nil {
		return err
	}
	b, err := root.CreateBucketIfNotExists([]byte(r.Webhook))
	if err != nil {
		return fmt.Errorf("store: outbox bucket %q: %w", r.Webhook, err)
	}
	return putJSONIn(b, bOutbox, seqKey(r.Seq), r)
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
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var r readmodel.OutboxRow
		if err := decodeJSON(v, &r); err != nil {
			t.addOutbox(webhook, k, err)
			continue
		}
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
	v := b.Get(seqKey(seq))
	if v == nil {
		return r, false, nil
	}
	if err := decodeJSON(v, &r); err != nil {
		t.addOutbox(webhook, seqKey(seq), err) // absent, as every read of it
		return readmodel.OutboxRow{}, false, nil
	}
	return r, true, nil
}

// DeleteOutbox removes the row (webhook, seq).
func (t *tx) DeleteOutbox(webhook string, seq uint64) error {
	if err := t.writable(); err != nil {
		return err
	}
	root, err := t.bucket(bOutbox)
	if err != nil {
		return err
	}
	b := root.Bucket([]byte(webhook))
	if b == nil {
		return nil
	}
	return b.Delete(seqKey(seq))
}

// putJSONIn stores v under key in b (named name, for errors).
func putJSONIn(b *bolt.Bucket, name, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store: encode %s/%x: %w", name, key, err)
	}
	if err := b.Put(key, append([]byte{formatJSON1}, data...)); err != nil {
		return fmt.Errorf("store: put %s/%x: %w", name, key, err)
	}
	return nil
}

// addFeed creates the feed's buckets in a store made before them.
func addFeed(btx *bolt.Tx, path string) error {
	for _, name := range [][]byte{bChanges, bOutbox} {
		if _, err := btx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("store %s: create bucket %s: %w", path, name, err)
		}
	}
	return nil
}
