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

// zeroKey is the key of "0.000000", and what TS.Key gives for an invalid ts.
var zeroKey [tsKeyLen]byte

// minPolled and maxPolled bound the times a tail key can hold as unix nanoseconds;
// 0 is reserved for never polled.
var (
	minPolled = time.Unix(0, 1)
	maxPolled = time.Unix(0, math.MaxInt64)
)

// polledKey returns the tail index time of a RotatedAt: unix nanoseconds, clamped
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

// appendTailKey appends a tail entry key, polled(8) | channel | 0x00 | tskey(12), to
// dst. Queued tail changes are named by it (see tail_chunks.go for the stored form).
func appendTailKey(dst []byte, polled uint64, channel string, tsKey []byte) []byte {
	return append(appendTailPrefix(dst, polled, channel), tsKey...)
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

// tsKeyOf is TS.Key for a ts read from a stored value.
func tsKeyOf(ts []byte) [tsKeyLen]byte { return readmodel.TS(ts).Key() }
