package boltstore

import (
	"fmt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// Record value, format 1: format(1) channel ts, strings as uvarint length + bytes.
const formatRef1 = 1

// Record returns the message the record key is attached to (bucket records).
func (t *tx) Record(key string) (readmodel.Ref, bool, error) {
	if err := checkKey("record key", key); err != nil {
		return readmodel.Ref{}, false, err
	}
	b, err := t.bucket(bRecords)
	if err != nil {
		return readmodel.Ref{}, false, err
	}
	v := b.Get([]byte(key))
	if v == nil {
		return readmodel.Ref{}, false, nil
	}
	ref, err := decodeRef(v)
	if err != nil {
		// Read as absent, and reported (Tx.Undecodable): tracking the key again
		// replaces it.
		t.bad.add(fmt.Sprintf("records/%s", key), err, func(t *tx) bool {
			b := t.btx.Bucket(bRecords)
			if b == nil {
				return false
			}
			v := b.Get([]byte(key))
			if v == nil {
				return false
			}
			_, err := decodeRef(v)
			return err != nil
		})
		return readmodel.Ref{}, false, nil
	}
	return ref, true, nil
}

// decodeRef decodes a record value.
func decodeRef(v []byte) (readmodel.Ref, error) {
	r := reader{s: string(v)}
	if f := r.byte(); r.err == nil && f != formatRef1 {
		return readmodel.Ref{}, fmt.Errorf("unknown record format %d", f)
	}
	ref := readmodel.Ref{Channel: r.string(), TS: readmodel.TS(r.string())}
	if err := r.end(); err != nil {
		return readmodel.Ref{}, err
	}
	return ref, nil
}

// PutRecord attaches key to ref, replacing any earlier attachment. Whether a different
// earlier one is a conflict is the caller's rule (README, "Commands", track).
func (t *tx) PutRecord(key string, ref readmodel.Ref) error {
	if err := t.writable(); err != nil {
		return err
	}
	if err := checkKey("record key", key); err != nil {
		return err
	}
	if err := checkChannel(ref.Channel); err != nil {
		return err
	}
	if err := checkTS("ts", ref.TS); err != nil {
		return err
	}
	b, err := t.bucket(bRecords)
	if err != nil {
		return err
	}
	v := appendString(appendString([]byte{formatRef1}, ref.Channel), string(ref.TS))
	if err := b.Put([]byte(key), v); err != nil {
		return fmt.Errorf("store: put record %q: %w", key, err)
	}
	return nil
}

// DeleteRecord detaches key; a key not attached is not an error.
func (t *tx) DeleteRecord(key string) error {
	if err := t.writable(); err != nil {
		return err
	}
	if err := checkKey("record key", key); err != nil {
		return err
	}
	b, err := t.bucket(bRecords)
	if err != nil {
		return err
	}
	if err := b.Delete([]byte(key)); err != nil {
		return fmt.Errorf("store: delete record %q: %w", key, err)
	}
	return nil
}
