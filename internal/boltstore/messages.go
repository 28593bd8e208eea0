package boltstore

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// Message returns the record of (channel, ts). An invalid ts is an error.
func (t *tx) Message(channel string, ts readmodel.TS) (readmodel.Message, bool, error) {
	if err := checkTS("ts", ts); err != nil {
		return readmodel.Message{}, false, err
	}
	cb, err := t.channel(channel, false)
	if err != nil || cb == nil {
		return readmodel.Message{}, false, err
	}
	k := ts.Key()
	v := cb.msgs.Get(k[:])
	if v == nil {
		return readmodel.Message{}, false, nil
	}
	m, err := cb.decode(channel, k[:], v)
	if err != nil {
		t.addMessage(channel, k[:], err)
		return readmodel.Message{}, false, nil
	}
	return m, true, nil
}

func msgDecodeError(channel string, k []byte, err error) error {
	return fmt.Errorf("store: decode message %s/%s: %w", channel, keyString(k), err)
}

// PutMessage replaces the record of (m.Channel, m.TS) and moves its index entries: the
// thread index entry follows m.ThreadTS, the tail entry follows m.RotatedAt(). It reads
// only the header of the old record. m.TS must be valid, m.ThreadTS empty or valid.
// After an error the transaction's indexes may be half updated: return the error from
// the Update callback so that it rolls back.
func (t *tx) PutMessage(m readmodel.Message) error {
	if err := t.writable(); err != nil {
		return err
	}
	// Keys live in the scratch: as locals they would escape (bbolt may log them) and
	// cost an allocation each. Each ts is parsed once: Key is all zeros for an invalid
	// ts, and only then is it worth asking Valid which it was.
	t.key, t.parent = m.TS.Key(), [tsKeyLen]byte{}
	if t.key == zeroKey {
		if err := checkTS("ts", m.TS); err != nil {
			return err
		}
	}
	if m.IsReply() {
		if t.parent = m.ThreadTS.Key(); t.parent == zeroKey {
			if err := checkTS("thread_ts", m.ThreadTS); err != nil {
				return err
			}
		}
		if t.parent == t.key {
			return fmt.Errorf("store: message %s/%s: thread_ts %q is the same time as ts but not the same string", m.Channel, m.TS, m.ThreadTS)
		}
	}
	k, parent := t.key[:], t.parent[:]
	cb, err := t.channel(m.Channel, true)
	if err != nil {
		return err
	}

	// What the old record indexed, decided before Put replaces it. An undecodable
	// old record is replaced, its index entries found by a scan.
	var old header
	var oldValue, oldReads []byte
	had, known, oldTimeline := false, false, false
	if v := cb.get(k); v != nil {
		had, oldTimeline, oldValue = true, inTimeline(v), v
		if v[0] == formatMessage {
			oldReads = cb.readTimes(k)
		}
		if old, err = readHeader(v, oldReads); err != nil {
			if err := t.forgetIndexes(cb, t.delta(m.Channel), m.Channel, k); err != nil {
				return err
			}
		} else {
			known = true
		}
	}
	sameThread := known && old.isReply() && m.IsReply() && string(old.threadTS) == string(m.ThreadTS)
	oldParent := t.oldParent[:]
	if known && old.isReply() && !sameThread {
		t.oldParent = tsKeyOf(old.threadTS)
	}
	polled := polledKeyOf(m.RotatedAt())
	sameTail := known && old.tracked() && m.IsTracked() && old.polled == polled

	// The content is put only when its bytes change (a read that found the message
	// as stored changes its read times only); the read times beside it when theirs do.
	v := t.arena.alloc(messageSizeBound(&m))
	v = appendMessage(v, &m)
	// Read before the read times are encoded: an unchanged v is not committed to the
	// arena, which hands its memory out again.
	newTimeline := inTimeline(v)
	if !known || !bytes.Equal(v, oldValue) {
		t.arena.commit(v)
		if err := cb.msgs.Put(k, v); err != nil {
			return fmt.Errorf("store: put message %s/%s: %w", m.Channel, m.TS, err)
		}
		t.written++
	}
	rt := t.arena.alloc(readTimesBound)
	rt = appendReadTimes(rt, &m)
	cb.readLast = nil // a write moves the pages under the cursor: Seek, not Next
	switch {
	case len(rt) == 0 && oldReads != nil:
		if err := cb.reads.Delete(k); err != nil {
			return fmt.Errorf("store: delete read times %s/%s: %w", m.Channel, m.TS, err)
		}
	case len(rt) > 0 && !bytes.Equal(rt, oldReads):
		t.arena.commit(rt)
		if err := cb.reads.Put(k, rt); err != nil {
			return fmt.Errorf("store: put read times %s/%s: %w", m.Channel, m.TS, err)
		}
	}
	d := t.delta(m.Channel)
	if !had {
		d.messages++
	}
	if newTimeline != oldTimeline {
		delta := int8(-1)
		if newTimeline {
			delta = 1
		}
		t.tileQueue(m.Channel, k, delta)
	}
	if known && old.isReply() && !sameThread {
		if err := t.removeReply(cb, d, oldParent, k); err != nil {
			return err
		}
	}
	if m.IsReply() && !sameThread {
		if err := t.addReply(cb, d, parent, k); err != nil {
			return err
		}
	}
	if known && old.tracked() && !sameTail {
		t.tailDelete(d, old.polled, m.Channel, k)
	}
	if m.IsTracked() && !sameTail {
		t.tailPut(d, polled, m.Channel, k, m.TS)
	}
	return nil
}

// DeleteMessage removes the record of (channel, ts) with its thread and tail entries.
// The replies of a deleted parent stay (they are records of their own).
func (t *tx) DeleteMessage(channel string, ts readmodel.TS) error {
	if err := t.writable(); err != nil {
		return err
	}
	if err := checkTS("ts", ts); err != nil {
		return err
	}
	cb, err := t.channel(channel, false)
	if err != nil || cb == nil {
		return err
	}
	t.key = ts.Key()
	k := t.key[:]
	v := cb.msgs.Get(k)
	if v == nil {
		return nil
	}
	old, err := cb.header(k, v)
	if err != nil {
		return msgDecodeError(channel, k, err)
	}
	if cb.readTimes(k) != nil {
		cb.readLast = nil // see PutMessage
		if err := cb.reads.Delete(k); err != nil {
			return fmt.Errorf("store: delete read times %s/%s: %w", channel, ts, err)
		}
	}
	oldParent := t.oldParent[:]
	if old.isReply() {
		t.oldParent = tsKeyOf(old.threadTS)
	}
	if err := cb.msgs.Delete(k); err != nil {
		return fmt.Errorf("store: delete message %s/%s: %w", channel, ts, err)
	}
	d := t.delta(channel)
	d.messages--
	if inTimeline(v) {
		t.tileQueue(channel, k, -1)
	}
	if old.isReply() {
		if err := t.removeReply(cb, d, oldParent, k); err != nil {
			return err
		}
	}
	if old.tracked() {
		t.tailDelete(d, old.polled, channel, k)
	}
	return nil
}

// addReply lists reply under parent in the thread index, counting a new thread when
// parent had no reply yet.
func (t *tx) addReply(cb *chanBuckets, d *counts, parent, reply []byte) error {
	if !hasPrefixKey(cb, parent) {
		d.threads++
	}
	t.kbuf = appendThreadKey(t.kbuf[:0], parent, reply)
	if err := cb.threads.Put(t.kbuf, []byte{}); err != nil {
		return fmt.Errorf("store: put thread index %s: %w", keyString(parent), err)
	}
	return nil
}

// removeReply unlists reply from parent, uncounting the thread when it was the last.
func (t *tx) removeReply(cb *chanBuckets, d *counts, parent, reply []byte) error {
	t.kbuf = appendThreadKey(t.kbuf[:0], parent, reply)
	if err := cb.threads.Delete(t.kbuf); err != nil {
		return fmt.Errorf("store: delete thread index %s: %w", keyString(parent), err)
	}
	if !hasPrefixKey(cb, parent) {
		d.threads--
	}
	return nil
}

// hasPrefixKey reports whether the thread index lists any reply under parent.
func hasPrefixKey(cb *chanBuckets, parent []byte) bool {
	k, _ := cb.threads.Cursor().Seek(parent)
	return k != nil && bytes.HasPrefix(k, parent)
}

// Replies returns the replies listed under (channel, threadTS), ascending by ts,
// without the parent. A listed reply without a record is an error (a broken index).
func (t *tx) Replies(channel string, threadTS readmodel.TS) ([]readmodel.Message, error) {
	if err := checkTS("thread_ts", threadTS); err != nil {
		return nil, err
	}
	cb, err := t.channel(channel, false)
	if err != nil || cb == nil {
		return nil, err
	}
	parent := threadTS.Key()
	var out []readmodel.Message
	c := cb.threadCursor()
	for k, _ := c.Seek(parent[:]); k != nil && bytes.HasPrefix(k, parent[:]); k, _ = c.Next() {
		rk := k[tsKeyLen:]
		v := cb.get(rk)
		if v == nil {
			return nil, fmt.Errorf("store: thread index of %s/%s lists %s, which has no record", channel, threadTS, keyString(rk))
		}
		m, err := cb.decode(channel, rk, v)
		if err != nil {
			t.addMessage(channel, rk, err)
			continue
		}
		out = append(out, m)
	}
	return out, nil
}

// TimelineBefore returns up to n timeline messages with ts < latest, newest first.
// It walks backwards, which bbolt does reliably only over pages not emptied in the
// same write transaction: call it in View transactions.
func (t *tx) TimelineBefore(channel string, latest readmodel.TS, n int) ([]readmodel.Message, error) {
	if err := checkTS("latest", latest); err != nil {
		return nil, err
	}
	cb, err := t.channel(channel, false)
	if err != nil || cb == nil || n <= 0 {
		return nil, err
	}
	lk := latest.Key()
	c := cb.msgs.Cursor()
	k, v := c.Seek(lk[:])
	if k == nil {
		k, v = c.Last()
	}
	var out []readmodel.Message
	for ; k != nil && len(out) < n; k, v = c.Prev() {
		if bytes.Compare(k, lk[:]) >= 0 {
			continue
		}
		if !inTimeline(v) {
			continue
		}
		m, err := cb.decode(channel, k, v)
		if err != nil {
			t.addMessage(channel, k, err)
			continue
		}
		out = append(out, m)
	}
	return out, nil
}

// TimelineTile returns the tile of channel's timeline holding ts (see readmodel.Tx), by
// the tile index (see tiles.go) or, when that cannot answer, by a walk from the oldest
// record that reads keys and flag bytes only; the tile's messages are decoded from its
// first key. A record that cannot be decoded keeps its number (it is still in the
// timeline Slack returns) and is left out of the tile.
func (t *tx) TimelineTile(channel string, ts readmodel.TS, size int) (readmodel.Tile, error) {
	if err := checkTS("ts", ts); err != nil {
		return readmodel.Tile{}, err
	}
	cb, err := t.channel(channel, false)
	if err != nil || cb == nil || size <= 0 {
		return readmodel.Tile{}, err
	}
	tk := ts.Key()
	tile, ok, err := t.indexedTile(cb, channel, tk[:], size)
	if err == nil {
		if !ok {
			return readmodel.Tile{}, nil
		}
		return tile, nil
	}
	if !errors.Is(err, errTilesPending) && t.stale != nil {
		t.stale.add(channel)
	}
	return t.walkedTile(cb, channel, tk[:], size)
}

// walkedTile is TimelineTile by a walk from the channel's oldest record, for when the
// tile index cannot answer.
func (t *tx) walkedTile(cb *chanBuckets, channel string, tk []byte, size int) (readmodel.Tile, error) {
	c := cb.msgs.Cursor()
	var start []byte
	n := 0
	found := false
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if !inTimeline(v) {
			continue
		}
		if n%size == 0 {
			start = k
		}
		n++
		if cmp := bytes.Compare(k, tk); cmp >= 0 {
			found = cmp == 0
			break
		}
	}
	if !found {
		return readmodel.Tile{}, nil
	}
	tile := readmodel.Tile{Oldest: readmodel.TS(keyString(start))}
	var last []byte
	left := size
	for k, v := c.Seek(start); k != nil && left > 0; k, v = c.Next() {
		if !inTimeline(v) {
			continue
		}
		left--
		last = k
		m, err := cb.decode(channel, k, v)
		if err != nil {
			t.addMessage(channel, k, err)
			continue
		}
		tile.Messages = append(tile.Messages, m)
	}
	tile.Latest = readmodel.TS(keyString(last))
	return tile, nil
}

// inTimeline reports whether a record may be a timeline message: only a value whose
// flags can be read is known not to be one.
func inTimeline(v []byte) bool {
	return len(v) < 2 || !isMessageFormat(v[0]) || v[1]&flagTimeline != 0
}

// Timeline calls fn for each timeline message of channel with oldest <= ts <= latest
// ("" leaves an end open), ascending by ts; plain replies are skipped undecoded. fn must
// not write to the same channel during the walk (a bbolt cursor does not survive it).
func (t *tx) Timeline(channel string, oldest, latest readmodel.TS, fn func(readmodel.Message) error) error {
	for _, e := range []struct {
		what string
		ts   readmodel.TS
	}{{"oldest", oldest}, {"latest", latest}} {
		if e.ts != "" {
			if err := checkTS(e.what, e.ts); err != nil {
				return err
			}
		}
	}
	cb, err := t.channel(channel, false)
	if err != nil || cb == nil {
		return err
	}
	lk := latest.Key()
	c := cb.msgs.Cursor()
	var k, v []byte
	if oldest == "" {
		k, v = c.First()
	} else {
		ok := oldest.Key()
		k, v = c.Seek(ok[:])
	}
	for ; k != nil; k, v = c.Next() {
		if latest != "" && bytes.Compare(k, lk[:]) > 0 {
			break
		}
		// Only a value we can read the flags of is skipped undecoded.
		if !inTimeline(v) {
			continue
		}
		m, err := cb.decode(channel, k, v)
		if err != nil {
			t.addMessage(channel, k, err)
			continue
		}
		if err := fn(m); err != nil {
			return stopped(err)
		}
	}
	return nil
}
