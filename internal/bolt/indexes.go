package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	bberrors "go.etcd.io/bbolt/errors"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// The tail index and the watched set are derived from the stored messages (and the
// record keys): one flipped bit in them must not stop the daemon. A read that meets
// an entry it cannot decode skips it, reports it (Tx.Undecodable) and marks its
// index damaged; the next write transaction rebuilds every damaged index from the
// messages before it does anything else (Store.update), and the report drops out.
// Check, for status, also compares every entry with its message.

// Index names, for reports and for badRecords' damaged marks.
const (
	indexTail    = "tail index"
	indexWatched = "watched set"
)

// addIndex records the undecodable entry (or chunk) under key k of an index and
// marks the index for rebuilding. The report holds until the key is gone or holds
// a value that decodes (a rebuild rewrites the whole bucket).
func (t *tx) addIndex(index string, bucket, k []byte, err error, decodes func(k, v []byte) bool) {
	key := bytes.Clone(k)
	_ = t.bad.damage(index)
	t.bad.add(fmt.Sprintf("%s entry %x", index, key), fmt.Errorf("%w (derived from the messages: rebuilt by the daemon's next write)", err), func(t *tx) bool {
		b := t.btx.Bucket(bucket)
		if b == nil {
			return false
		}
		v := b.Get(key)
		return v != nil && !decodes(key, v)
	})
}

// tailChunkOK reports whether a tail chunk key and value decode.
func tailChunkOK(k, v []byte) bool { return checkTailChunk(k, v) == nil }

// checkTailChunk checks a tail chunk's key and every entry of its value (each ts
// matching its key), without allocating.
func checkTailChunk(k, v []byte) error {
	if len(k) < 8+1+1+tsKeyLen || k[len(k)-tsKeyLen-1] != 0 {
		return errors.New("malformed tail chunk key")
	}
	p, err := chunkEntries(v)
	for err == nil && len(p) > 0 {
		var it tailItem
		if it, p, err = nextChunkEntry(p); err == nil && !tsMatches(it) {
			err = fmt.Errorf("ts %q does not match its key", it.ts)
		}
	}
	return err
}

// tsMatches reports whether a tail entry's ts is valid and has its key.
func tsMatches(it tailItem) bool {
	key := tsKeyOf(it.ts)
	return bytes.Equal(key[:], it.tsKey) && (key != zeroKey || readmodel.TS(it.ts).Valid())
}

// decodeTailChunk checks a tail chunk and appends its entries to items.
func decodeTailChunk(k, v []byte, items []tailItem) ([]tailItem, error) {
	if err := checkTailChunk(k, v); err != nil {
		return items, err
	}
	return decodeChunk(v, items)
}

// watchedEntry decodes a watched set entry.
func watchedEntry(k, v []byte) (readmodel.Ref, error) {
	i := bytes.IndexByte(k, 0)
	if i <= 0 || len(k)-i-1 != tsKeyLen {
		return readmodel.Ref{}, errors.New("malformed key")
	}
	ref := readmodel.Ref{Channel: string(k[:i]), TS: readmodel.TS(v)}
	if key := ref.TS.Key(); !bytes.Equal(key[:], k[i+1:]) || !ref.TS.Valid() {
		return readmodel.Ref{}, fmt.Errorf("ts %q does not match its key", v)
	}
	return ref, nil
}

func watchedOK(k, v []byte) bool { _, err := watchedEntry(k, v); return err == nil }

// rebuildIndexes rebuilds the indexes reads found damaged, and returns what it did,
// one line each, for the log.
func (t *tx) rebuildIndexes(damaged []string) ([]string, error) {
	var done []string
	for _, index := range damaged {
		switch index {
		case indexTail:
			n, err := t.rebuildTail()
			if err != nil {
				return nil, fmt.Errorf("store: rebuild the tail index: %w", err)
			}
			done = append(done, fmt.Sprintf("tail index rebuilt from the messages: %d entries", n))
		case indexWatched:
			n, lost, err := t.rebuildWatched()
			if err != nil {
				return nil, fmt.Errorf("store: rebuild the watched set: %w", err)
			}
			line := fmt.Sprintf("watched set rebuilt from its readable entries, the record keys and the messages: %d entries", n)
			if len(lost) > 0 {
				line += fmt.Sprintf("; %d entries named no stored message and were dropped (track them again if they were tracked without a record key): %v", len(lost), lost)
			}
			done = append(done, line)
		}
	}
	return done, nil
}

// rebuildTail replaces the tail index with one entry per tracked message, and each
// channel's tracked counter with their number. A message that does not decode has
// no entry (it is reported as such; its next read from Slack writes it, with one).
func (t *tx) rebuildTail() (int, error) {
	if err := t.btx.DeleteBucket(bTail); err != nil && !errors.Is(err, bberrors.ErrBucketNotFound) {
		return 0, err
	}
	if _, err := t.btx.CreateBucket(bTail); err != nil {
		return 0, err
	}
	t.tail.puts, t.tail.dels = t.tail.puts[:0], t.tail.dels[:0] // queued for the old index
	all, err := t.bucket(bChan)
	if err != nil {
		return 0, err
	}
	total := 0
	err = all.ForEachBucket(func(name []byte) error {
		ch := string(name)
		cb, err := t.channel(ch, false)
		if err != nil || cb == nil {
			return err
		}
		var d counts
		c := cb.msgs.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			m, err := decodeMessage(ch, v)
			if err != nil {
				t.addMessage(ch, k, err)
				continue
			}
			if m.IsTracked() {
				t.tailPut(&d, polledKeyOf(m.RotatedAt()), ch, k, m.TS)
			}
		}
		if err := t.flushTail(); err != nil {
			return err
		}
		total += int(d.tracked)
		n, err := readCounts(cb)
		if err != nil {
			return nil // unreadable counters are flushCounts' to report; the index is whole
		}
		n.tracked = d.tracked
		return putCounts(cb, ch, n)
	})
	return total, err
}

// rebuildWatched rewrites the watched set from what can be known of it: every entry
// that decodes, as it is; an entry that does not decode, repaired from the message
// its key names, else from the one message of that ts in any channel; and every
// message a record key is attached to. It returns the number of
// entries, and the entries it could not place (dropped).
func (t *tx) rebuildWatched() (int, []string, error) {
	b, err := t.bucket(bWatched)
	if err != nil {
		return 0, nil, err
	}
	refs := map[readmodel.Ref]bool{}
	var lost []string
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if ref, err := watchedEntry(k, v); err == nil {
			refs[ref] = true // intact: kept as it is
		} else if ref, ok := t.placeWatched(k, v); ok {
			refs[ref] = true
		} else {
			lost = append(lost, fmt.Sprintf("%q", v))
		}
	}
	if recs := t.btx.Bucket(bRecords); recs != nil {
		rc := recs.Cursor()
		for k, v := rc.First(); k != nil; k, v = rc.Next() {
			ref, err := decodeRef(v)
			if err != nil {
				continue // reported when the record is read
			}
			if _, ok, err := t.Message(ref.Channel, ref.TS); err == nil && ok {
				refs[ref] = true
			}
		}
	}
	if err := t.btx.DeleteBucket(bWatched); err != nil {
		return 0, nil, err
	}
	if _, err := t.btx.CreateBucket(bWatched); err != nil {
		return 0, nil, err
	}
	for ref := range refs {
		if err := t.PutWatched(ref); err != nil {
			return 0, nil, err
		}
	}
	return len(refs), lost, nil
}

// placeWatched returns the message a watched entry stands for: the one its key
// names, else (a damaged key) the only stored message with the entry's ts.
func (t *tx) placeWatched(k, v []byte) (readmodel.Ref, bool) {
	if i := bytes.IndexByte(k, 0); i > 0 && len(k)-i-1 == tsKeyLen && checkChannel(string(k[:i])) == nil {
		if cb, err := t.channel(string(k[:i]), false); err == nil && cb != nil {
			if mv := cb.msgs.Get(k[i+1:]); mv != nil {
				if m, err := decodeMessage(string(k[:i]), mv); err == nil {
					return readmodel.Ref{Channel: m.Channel, TS: m.TS}, true
				}
			}
		}
	}
	ts := readmodel.TS(v)
	if !ts.Valid() {
		return readmodel.Ref{}, false
	}
	key := ts.Key()
	var found []readmodel.Ref
	all := t.btx.Bucket(bChan)
	if all == nil {
		return readmodel.Ref{}, false
	}
	_ = all.ForEachBucket(func(name []byte) error {
		if cb, err := t.channel(string(name), false); err == nil && cb != nil && cb.msgs.Get(key[:]) != nil {
			found = append(found, readmodel.Ref{Channel: string(name), TS: ts})
		}
		return nil
	})
	if len(found) != 1 {
		return readmodel.Ref{}, false
	}
	return found[0], true
}

// checkIndexes compares the tail index and the watched set with the messages, for
// Check: every entry decodes; a tail entry names a tracked message at its RotatedAt,
// and every tracked message has its tail entry (tracked counts how many decodable
// tracked messages each channel holds).
func (t *tx) checkIndexes(tracked map[string]int) error {
	tail, err := t.bucket(bTail)
	if err != nil {
		return err
	}
	entries := map[string]int{}
	c := tail.Cursor()
	var items []tailItem
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if items, err = decodeTailChunk(k, v, items[:0]); err != nil {
			t.addIndex(indexTail, bTail, k, err, tailChunkOK)
			continue
		}
		polled, ch := binary.BigEndian.Uint64(k[:8]), string(k[8:len(k)-tsKeyLen-1])
		for _, it := range items {
			m, ok, undecodable := t.messageByKey(ch, it.tsKey)
			switch {
			case undecodable: // reported as a message; its entry cannot be judged
			case !ok || !m.IsTracked() || polledKeyOf(m.RotatedAt()) != polled:
				t.addStale(indexTail, fmt.Sprintf("%s entry %s/%s at %d", indexTail, ch, it.ts, polled), "does not match a tracked message")
			default:
				entries[ch]++
			}
		}
	}
	for ch, n := range tracked {
		if entries[ch] < n {
			t.addStale(indexTail, fmt.Sprintf("%s of %s", indexTail, ch), fmt.Sprintf("%d tracked messages have no entry", n-entries[ch]))
		}
	}
	w, err := t.bucket(bWatched)
	if err != nil {
		return err
	}
	// A watched entry may outlive its message (a reply tracked without a record key
	// that its thread no longer returns): only an entry that does not decode is
	// damage.
	wc := w.Cursor()
	for k, v := wc.First(); k != nil; k, v = wc.Next() {
		if _, err := watchedEntry(k, v); err != nil {
			t.addIndex(indexWatched, bWatched, k, err, watchedOK)
		}
	}
	return nil
}

// addStale records an index that disagrees with the messages (found by Check) and
// marks it for rebuilding; the report holds until the index is rebuilt.
func (t *tx) addStale(index, name, what string) {
	gen := t.bad.damage(index)
	t.bad.add(name, fmt.Errorf("%s (derived from the messages: rebuilt by the daemon's next write)", what), func(t *tx) bool {
		return t.bad.generation(index) == gen
	})
}

// messageByKey returns the message stored under (channel, tskey); undecodable is set
// when there is one that does not decode.
func (t *tx) messageByKey(channel string, tsKey []byte) (m readmodel.Message, ok, undecodable bool) {
	cb, err := t.channel(channel, false)
	if err != nil || cb == nil {
		return m, false, false
	}
	v := cb.msgs.Get(tsKey)
	if v == nil {
		return m, false, false
	}
	m, err = decodeMessage(channel, v)
	return m, err == nil, err != nil
}
