package boltstore

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// formatJSON1 marks a value encoded as format byte + encoding/json. It serves the values
// written a few times per tick, where speed does not matter and readability does.
const formatJSON1 = 1

// putJSON stores v under key in the top-level bucket named bucket.
func (t *tx) putJSON(bucket, key []byte, v any) error {
	if err := t.writable(); err != nil {
		return err
	}
	b, err := t.bucket(bucket)
	if err != nil {
		return err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store: encode %s/%q: %w", bucket, key, err)
	}
	if err := b.Put(key, append([]byte{formatJSON1}, data...)); err != nil {
		return fmt.Errorf("store: put %s/%q: %w", bucket, key, err)
	}
	return nil
}

// getJSON decodes the value under key in bucket into out; false when there is none.
func (t *tx) getJSON(bucket, key []byte, out any) (bool, error) {
	b, err := t.bucket(bucket)
	if err != nil {
		return false, err
	}
	v := b.Get(key)
	if v == nil {
		return false, nil
	}
	if err := decodeJSON(v, out); err != nil {
		t.addJSON(bucket, key, out, err)
		return false, nil
	}
	return true, nil
}

// decodeJSON decodes a formatJSON1 value. json.Unmarshal copies what it keeps.
func decodeJSON(v []byte, out any) error {
	if len(v) == 0 {
		return errTruncated
	}
	if v[0] != formatJSON1 {
		return fmt.Errorf("unknown value format %d", v[0])
	}
	return json.Unmarshal(v[1:], out)
}

// forEachJSON decodes every value of bucket, in key order, into a fresh T and calls fn.
// fn returning readmodel.ErrStopIteration ends the walk with nil.
func forEachJSON[T any](t *tx, bucket []byte, fn func(T) error) error {
	b, err := t.bucket(bucket)
	if err != nil {
		return err
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var item T
		if err := decodeJSON(v, &item); err != nil {
			t.addJSON(bucket, k, &item, err)
			continue
		}
		if err := fn(item); err != nil {
			return stopped(err)
		}
	}
	return nil
}

// checkKey rejects keys bbolt cannot store.
func checkKey(what, key string) error {
	switch {
	case key == "":
		return fmt.Errorf("store: empty %s", what)
	case len(key) > bolt.MaxKeySize:
		return fmt.Errorf("store: %s %.20q… is longer than %d bytes", what, key, bolt.MaxKeySize)
	}
	return nil
}
