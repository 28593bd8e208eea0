package boltstore

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeMessageRejectsEveryTruncation(t *testing.T) {
	m := fullMessage()
	v := appendMessage(nil, &m)
	if got, err := decodeMessage(m.Channel, v); err != nil || cmp.Diff(m, got) != "" {
		t.Fatalf("full value: err=%v diff=%s", err, cmp.Diff(m, got))
	}
	if bound := messageSizeBound(&m); len(v) > bound {
		t.Errorf("encoded %d bytes, size bound says at most %d", len(v), bound)
	}
	for i := 0; i < len(v); i++ {
		if _, err := decodeMessage(m.Channel, v[:i]); err == nil {
			t.Errorf("prefix of %d/%d bytes decoded without error", i, len(v))
		}
	}
	if _, err := decodeMessage(m.Channel, append(v[:len(v):len(v)], 0)); err == nil {
		t.Error("trailing byte decoded without error")
	}
	if _, err := decodeMessage(m.Channel, append([]byte{99}, v[1:]...)); err == nil || !strings.Contains(err.Error(), "format") {
		t.Errorf("unknown format: err = %v", err)
	}
}

func TestDecodeMessageNeverPanicsOnGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := fullMessage()
	good := appendMessage(nil, &m)
	for i := 0; i < 20000; i++ {
		v := append([]byte(nil), good...)
		for j := rng.IntN(4); j >= 0; j-- {
			v[rng.IntN(len(v))] = byte(rng.Uint32())
		}
		_, _ = decodeMessage("C1", v) // must not panic
		_, _ = readHeader(v)
	}
}
