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
// cursor walks them in seq order. Changes are binary (format 2, codec_change.go; the
// seq is the key's, not repeated in the value), outbox rows JSON (format 1). The feed's seqs come
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
	k := seqKey(seq)
	if err := b.Put(k, appendChange(nil, c)); err != nil {
		return fmt.Errorf("store: put %s/%x: %w", bChanges, k, err)
	}
	return nil
}

// Changes calls fn for the stored changes after seq after, ascending. A store opened
// read-only before its first write by this version has no feed: then it is empty.
func (t *tx) Changes(after uint64, fn func(readmodel.Change) error) error {
	b := t.btx.Bucket(bChanges)
	if b == nil || after == math.MaxUint64 { // after+1 would wrap to the first change
		return nil
	}
	team := teamOf(t)
	c := b.Cursor()
	for k, v := c.Seek(seqKey(after + 1)); k != nil; k, v = c.Next() {
		ch, err := decodeChange(v)
		if err == nil && len(k) != 8 {
			err = fmt.Errorf("malformed key")
		}
		if err != nil {
			t.addChange(k, err) // skipped and reported: the feed after it stays readable
			continue
		}
		ch.Seq, ch.TeamID = binary.BigEndian.Uint64(k), team
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

// addFeed creates the feed's buckets in a store made before them, and the outbox's
// counts and index in one made before those.
func addFeed(btx *bolt.Tx, path string) error {
	for _, name := range [][]byte{bChanges, bOutbox} {
		if _, err := btx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("store %s: create bucket %s: %w", path, name, err)
		}
	}
	if err := indexOutbox(btx); err != nil {
		return fmt.Errorf("store %s: index the outbox: %w", path, err)
	}
	return nil
}

// teamOf is the workspace of the store t reads (its cached auth.test answer), ""
// before the first: no change is written before it.
func teamOf(t *tx) string {
	id, ok, err := t.Identity()
	if err != nil || !ok {
		return ""
	}
	return id.TeamID
}
