package boltstore

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// The watched set (bucket watched/): channel | 0x00 | tskey → exact ts, one entry per
// watched message. It is small (what users track and record-key), so it is a plain
// bucket with no chunking; the order is channel then time.

// bWatched is created with the schema, and added to stores made before it existed by
// addWatched when they are opened for writing.
var bWatched = []byte("watched")

func watchedKey(ref readmodel.Ref) []byte {
	k := ref.TS.Key()
	return append(append([]byte(ref.Channel), 0), k[:]...)
}

func checkRef(ref readmodel.Ref) error {
	if err := checkChannel(ref.Channel); err != nil {
		return err
	}
	return checkTS("ts", ref.TS)
}

// Watched calls fn for every watched message, by channel then ts. A store opened
// read-only before its first write by this version has no watched bucket: then the set
// is empty. An entry that does not decode is skipped and reported, and the set is
// rebuilt by the next write (see indexes.go).
func (t *tx) Watched(fn func(readmodel.Ref) error) error {
	b := t.btx.Bucket(bWatched)
	if b == nil {
		return nil
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		ref, err := watchedEntry(k, v)
		if err != nil {
			t.addIndex(indexWatched, bWatched, k, err, watchedOK)
			continue
		}
		if err := fn(ref); err != nil {
			return stopped(err)
		}
	}
	return nil
}

// IsWatched reports whether ref is in the watched set.
func (t *tx) IsWatched(ref readmodel.Ref) (bool, error) {
	if err := checkRef(ref); err != nil {
		return false, err
	}
	b := t.btx.Bucket(bWatched)
	return b != nil && b.Get(watchedKey(ref)) != nil, nil
}

// PutWatched adds ref to the watched set.
func (t *tx) PutWatched(ref readmodel.Ref) error {
	if err := t.writable(); err != nil {
		return err
	}
	if err := checkRef(ref); err != nil {
		return err
	}
	b, err := t.bucket(bWatched)
	if err != nil {
		return err
	}
	if err := b.Put(watchedKey(ref), []byte(ref.TS)); err != nil {
		return fmt.Errorf("store: put watched %s/%s: %w", ref.Channel, ref.TS, err)
	}
	return nil
}

// DeleteWatched removes ref from the watched set; an absent ref is not an error.
func (t *tx) DeleteWatched(ref readmodel.Ref) error {
	if err := t.writable(); err != nil {
		return err
	}
	if err := checkRef(ref); err != nil {
		return err
	}
	b, err := t.bucket(bWatched)
	if err != nil {
		return err
	}
	return b.Delete(watchedKey(ref))
}

// addWatched creates the watched bucket in a store made before it existed, and fills
// it with the record-keyed messages: before it, only a record key said that a message
// was watched (a message tracked without a record stays tracked, in the rotation).
func addWatched(btx *bolt.Tx, path string) error {
	if btx.Bucket(bWatched) != nil {
		return nil
	}
	b, err := btx.CreateBucket(bWatched)
	if err != nil {
		return fmt.Errorf("store %s: create bucket %s: %w", path, bWatched, err)
	}
	recs := btx.Bucket(bRecords)
	if recs == nil {
		return nil
	}
	return recs.ForEach(func(k, v []byte) error {
		r := reader{s: string(v)}
		if f := r.byte(); r.err != nil || f != formatRef1 {
			return nil // reported when the record is read
		}
		ref := readmodel.Ref{Channel: r.string(), TS: readmodel.TS(r.string())}
		if r.end() != nil || checkRef(ref) != nil {
			return nil
		}
		return b.Put(watchedKey(ref), []byte(ref.TS))
	})
}
