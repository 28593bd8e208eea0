package boltstore

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeMessageRejectsEveryTruncation(t *testing.T) {
	m := fullMessage()
	v, rt := appendMessage(nil, &m), appendReadTimes(nil, &m)
	if got, err := decodeMessage(m.Channel, v, rt); err != nil || cmp.Diff(m, got) != "" {
		t.Fatalf("full value: err=%v diff=%s", err, cmp.Diff(m, got))
	}
	if bound := messageSizeBound(&m); len(v) > bound {
		t.Errorf("encoded %d bytes, size bound says at most %d", len(v), bound)
	}
	if len(rt) > readTimesBound {
		t.Errorf("read times encoded in %d bytes, bound says at most %d", len(rt), readTimesBound)
	}
	for i := 0; i < len(v); i++ {
		if _, err := decodeMessage(m.Channel, v[:i], rt); err == nil {
			t.Errorf("prefix of %d/%d bytes decoded without error", i, len(v))
		}
	}
	for i := 1; i < len(rt); i++ {
		if _, err := decodeMessage(m.Channel, v, rt[:i]); err == nil {
			t.Errorf("read times prefix of %d/%d bytes decoded without error", i, len(rt))
		}
	}
	if _, err := decodeMessage(m.Channel, append(v[:len(v):len(v)], 0), rt); err == nil {
		t.Error("trailing byte decoded without error")
	}
	if _, err := decodeMessage(m.Channel, append([]byte{99}, v[1:]...), rt); err == nil || !strings.Contains(err.Error(), "format") {
		t.Errorf("unknown format: err = %v", err)
	}
}

// Format 2, what earlier releases wrote (read times inline), still decodes to the
// same message, and its header gives the same tail index time as format 3's.
func TestDecodeMessageOfThePreviousFormat(t *testing.T) {
	m := fullMessage()
	old := appendMessageTimed(nil, &m)
	if got, err := decodeMessage(m.Channel, old, nil); err != nil || cmp.Diff(m, got) != "" {
		t.Fatalf("format 2: err=%v diff=%s", err, cmp.Diff(m, got))
	}
	h2, err2 := readHeader(old, nil)
	h3, err3 := readHeader(appendMessage(nil, &m), appendReadTimes(nil, &m))
	if err2 != nil || err3 != nil || h2.polled != h3.polled || h2.flags != h3.flags || string(h2.threadTS) != string(h3.threadTS) {
		t.Errorf("headers differ: format 2 %+v (%v), format 3 %+v (%v)", h2, err2, h3, err3)
	}
}

func TestDecodeMessageNeverPanicsOnGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := fullMessage()
	good, goodRT := appendMessage(nil, &m), appendReadTimes(nil, &m)
	for i := 0; i < 20000; i++ {
		v, rt := append([]byte(nil), good...), append([]byte(nil), goodRT...)
		for j := rng.IntN(4); j >= 0; j-- {
			v[rng.IntN(len(v))] = byte(rng.Uint32())
			rt[rng.IntN(len(rt))] = byte(rng.Uint32())
		}
		_, _ = decodeMessage("C1", v, rt) // must not panic
		_, _ = readHeader(v, rt)
	}
}
