package boltstore

import (
	"encoding/binary"
	"fmt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// counts are one channel's counters, stored as chan/<channel>/"n": messages, threads,
// tracked, each a big-endian uint64. In a tx they hold the not yet written changes.
type counts struct {
	messages, threads, tracked int64
}

// delta returns the pending counter changes of channel, for PutMessage and
// DeleteMessage to adjust.
func (t *tx) delta(channel string) *counts {
	if t.lastDelta != nil && t.lastDeltaChan == channel {
		return t.lastDelta
	}
	if t.deltas == nil {
		t.deltas = make(map[string]*counts)
	}
	d := t.deltas[channel]
	if d == nil {
		d = new(counts)
		t.deltas[channel] = d
	}
	t.lastDeltaChan, t.lastDelta = channel, d
	return d
}

func readCounts(cb *chanBuckets) (counts, error) {
	var c counts
	v := cb.root.Get(kCounts)
	if v == nil {
		return c, nil
	}
	if len(v) != 24 {
		return c, fmt.Errorf("counters: want 24 bytes, have %d", len(v))
	}
	c.messages = int64(binary.BigEndian.Uint64(v[0:]))
	c.threads = int64(binary.BigEndian.Uint64(v[8:]))
	c.tracked = int64(binary.BigEndian.Uint64(v[16:]))
	return c, nil
}

// flushCounts adds the pending changes to the stored counters; Update calls it just
// before commit. A counter going negative means the indexes and counters disagree: the
// transaction fails rather than store a wrong number.
func (t *tx) flushCounts() error {
	for ch, d := range t.deltas {
		if *d == (counts{}) {
			continue
		}
		cb, err := t.channel(ch, true)
		if err != nil {
			return err
		}
		c, err := readCounts(cb)
		if err != nil {
			return fmt.Errorf("store: channel %s: %w", ch, err)
		}
		c.messages += d.messages
		c.threads += d.threads
		c.tracked += d.tracked
		if c.messages < 0 || c.threads < 0 || c.tracked < 0 {
			return fmt.Errorf("store: channel %s: counters would go negative (%+v): the store is inconsistent", ch, c)
		}
		if err := putCounts(cb, ch, c); err != nil {
			return err
		}
	}
	t.deltas, t.lastDelta = nil, nil
	return nil
}

// putCounts stores the counters of channel ch.
func putCounts(cb *chanBuckets, ch string, c counts) error {
	v := make([]byte, 24)
	binary.BigEndian.PutUint64(v[0:], uint64(c.messages))
	binary.BigEndian.PutUint64(v[8:], uint64(c.threads))
	binary.BigEndian.PutUint64(v[16:], uint64(c.tracked))
	if err := cb.root.Put(kCounts, v); err != nil {
		return fmt.Errorf("store: channel %s: put counters: %w", ch, err)
	}
	return nil
}

// Counts returns the channel's message records, threads (parents with at least one
// reply in the thread index) and tracked messages, including this transaction's
// changes. It reads one key.
func (t *tx) Counts(channel string) (readmodel.ChannelCounts, error) {
	cb, err := t.channel(channel, false)
	if err != nil || cb == nil {
		return readmodel.ChannelCounts{}, err
	}
	c, err := readCounts(cb)
	if err != nil {
		return readmodel.ChannelCounts{}, fmt.Errorf("store: channel %s: %w", channel, err)
	}
	if d := t.deltas[channel]; d != nil {
		c.messages += d.messages
		c.threads += d.threads
		c.tracked += d.tracked
	}
	return readmodel.ChannelCounts{
		Messages: int(c.messages), Threads: int(c.threads), Tracked: int(c.tracked),
	}, nil
}
