package boltstore

import (
	"fmt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// tailPut adds the tail entry of a tracked message; the value is its exact ts.
func (t *tx) tailPut(d *counts, polled uint64, channel string, tsKey []byte, ts readmodel.TS) error {
	b, err := t.bucket(bTail)
	if err != nil {
		return err
	}
	t.kbuf = appendTailKey(t.kbuf[:0], polled, channel, tsKey)
	// The value must outlive this call (bbolt keeps it until commit); ts is immutable.
	v := t.arena.alloc(len(ts))
	v = append(v, ts...)
	t.arena.commit(v)
	if err := b.Put(t.kbuf, v); err != nil {
		return fmt.Errorf("store: put tail entry %s/%s: %w", channel, ts, err)
	}
	d.tracked++
	return nil
}

// tailDelete removes the tail entry of a tracked message polled at polled.
func (t *tx) tailDelete(d *counts, polled uint64, channel string, tsKey []byte) error {
	b, err := t.bucket(bTail)
	if err != nil {
		return err
	}
	t.kbuf = appendTailKey(t.kbuf[:0], polled, channel, tsKey)
	if err := b.Delete(t.kbuf); err != nil {
		return fmt.Errorf("store: delete tail entry %s/%s: %w", channel, keyString(tsKey), err)
	}
	d.tracked--
	return nil
}

// TailOldest returns up to n tracked messages, never polled first, then least recently
// polled, ties by channel then ts, skipping those skip (if non-nil) rejects. It walks
// the tail index from its start: O(log size) to position, then one step per entry
// returned or skipped. LastPolledAt in the result is in UTC at nanosecond precision.
func (t *tx) TailOldest(n int, skip func(readmodel.TailEntry) bool) ([]readmodel.TailEntry, error) {
	if n <= 0 {
		return nil, nil
	}
	b, err := t.bucket(bTail)
	if err != nil {
		return nil, err
	}
	out := make([]readmodel.TailEntry, 0, min(n, 64))
	c := b.Cursor()
	for k, v := c.First(); k != nil && len(out) < n; k, v = c.Next() {
		e, err := parseTailKey(k, v)
		if err != nil {
			return nil, fmt.Errorf("store: tail entry %x: %w", k, err)
		}
		if skip != nil && skip(e) {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}
