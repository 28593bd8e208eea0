package boltstore

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// Tail and thread index keys (see doc.go). They are built in per-transaction scratch
// buffers: bbolt copies keys on Put and does not keep them on Get or Delete.

const tsKeyLen = readmodel.TSKeyLen

// minPolled and maxPolled bound the times a tail key can hold as unix nanoseconds;
// 0 is reserved for never polled.
var (
	minPolled = time.Unix(0, 1)
	maxPolled = time.Unix(0, math.MaxInt64)
)

// polledKey returns the tail index time of a LastPolledAt: unix nanoseconds, clamped
// to [1, MaxInt64] so that 0 stays "never polled" and the order stays time order.
func polledKey(t time.Time) uint64 {
	switch {
	case t.Before(minPolled):
		return 1
	case t.After(maxPolled):
		return math.MaxInt64
	}
	return uint64(t.UnixNano())
}

// polledKeyOf is polledKey for an optional time: nil gives 0.
func polledKeyOf(t *time.Time) uint64 {
	if t == nil {
		return 0
	}
	return polledKey(*t)
}

// appendTailKey appends polled(8) | channel | 0x00 | tskey(12) to dst.
func appendTailKey(dst []byte, polled uint64, channel string, tsKey []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, polled)
	dst = append(dst, channel...)
	dst = append(dst, 0)
	return append(dst, tsKey...)
}

// parseTailKey splits a tail key and its value (the exact ts) into a TailEntry.
func parseTailKey(k, v []byte) (readmodel.TailEntry, error) {
	var e readmodel.TailEntry
	if len(k) < 8+1+1+tsKeyLen || k[len(k)-tsKeyLen-1] != 0 {
		return e, fmt.Errorf("malformed tail key")
	}
	ts := readmodel.TS(v)
	if key := ts.Key(); !ts.Valid() || string(key[:]) != string(k[len(k)-tsKeyLen:]) {
		return e, fmt.Errorf("tail value %q does not match its key", v)
	}
	e.Channel = string(k[8 : len(k)-tsKeyLen-1])
	e.TS = ts
	if p := binary.BigEndian.Uint64(k[:8]); p != 0 {
		t := time.Unix(0, int64(p)).UTC()
		e.LastPolledAt = &t
	}
	return e, nil
}

// appendThreadKey appends parent tskey | reply tskey to dst.
func appendThreadKey(dst []byte, parent, reply []byte) []byte {
	return append(append(dst, parent...), reply...)
}

// keyString renders a message key as "seconds.micros" for error messages.
func keyString(k []byte) string {
	if len(k) != tsKeyLen {
		return fmt.Sprintf("%x", k)
	}
	return fmt.Sprintf("%d.%06d", binary.BigEndian.Uint64(k[:8]), binary.BigEndian.Uint32(k[8:]))
}
