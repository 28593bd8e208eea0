package boltstore

import (
	"bytes"
	"encoding/binary"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// forgetIndexes removes every index entry of the record (channel, k) whose old value
// could not be read, before PutMessage replaces it: the thread index entries (found
// by a scan of the channel's thread index) and the tail entries (by a scan of the
// tail index). Healing a record is rare; the scans keep the indexes and counters
// exact without knowing what the old record held.
func (t *tx) forgetIndexes(cb *chanBuckets, d *counts, channel string, k []byte) error {
	var parents [][]byte
	c := cb.threads.Cursor()
	for tk, _ := c.First(); tk != nil; tk, _ = c.Next() {
		if len(tk) == 2*tsKeyLen && bytes.Equal(tk[tsKeyLen:], k) {
			parents = append(parents, bytes.Clone(tk[:tsKeyLen]))
		}
	}
	for _, p := range parents {
		if err := t.removeReply(cb, d, p, k); err != nil {
			return err
		}
	}
	if err := t.flushTail(); err != nil {
		return err
	}
	b, err := t.bucket(bTail)
	if err != nil {
		return err
	}
	var polls []uint64
	tc := b.Cursor()
	for ck, v := tc.First(); ck != nil; ck, v = tc.Next() {
		if len(ck) != 8+len(channel)+1+tsKeyLen || string(ck[8:8+len(channel)]) != channel || ck[8+len(channel)] != 0 {
			continue
		}
		items, err := decodeChunk(v, nil)
		if err != nil {
			continue // an undecodable chunk is TailOldest's to report
		}
		for _, it := range items {
			if bytes.Equal(it.tsKey, k) {
				polls = append(polls, binary.BigEndian.Uint64(ck[:8]))
			}
		}
	}
	for _, p := range polls {
		t.tailDelete(d, p, channel, k)
	}
	return nil
}

// decodeAll decodes every message, conversation and user record, so that the
// undecodable ones are recorded in t.bad, and returns how many decodable tracked
// messages each channel holds.
func (t *tx) decodeAll() (map[string]int, error) {
	all, err := t.bucket(bChan)
	if err != nil {
		return nil, err
	}
	tracked := map[string]int{}
	err = all.ForEachBucket(func(ch []byte) error {
		cb, err := t.channel(string(ch), false)
		if err != nil || cb == nil {
			return err
		}
		c := cb.msgs.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			m, err := decodeMessage(string(ch), v)
			switch {
			case err != nil:
				t.addMessage(string(ch), k, err)
			case m.IsTracked():
				tracked[string(ch)]++
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := forEachJSON(t, bConv, func(readmodel.Conversation) error { return nil }); err != nil {
		return nil, err
	}
	return tracked, forEachJSON(t, bUsers, func(readmodel.User) error { return nil })
}
