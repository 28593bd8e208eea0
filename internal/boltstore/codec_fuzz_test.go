package boltstore

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// FuzzDecodeMessage feeds arbitrary bytes to the message codec. decodeMessage and
// readHeader must never panic; a value decodeMessage accepts must also pass
// readHeader with the same thread_ts, and encoding what it decoded must decode to the
// same message (the codec's fixpoint).
func FuzzDecodeMessage(f *testing.F) {
	full := fullMessage()
	bare := readmodel.Message{Channel: "C1", TS: "1718906000.000100"}
	for _, m := range []*readmodel.Message{&full, &bare} {
		f.Add(appendMessage(nil, m))
	}
	f.Add([]byte{})
	f.Add([]byte{formatMessage})
	f.Fuzz(func(t *testing.T, v []byte) {
		m, err := decodeMessage("C1", v, nil)
		h, herr := readHeader(v, nil)
		if err != nil {
			return
		}
		if herr != nil {
			t.Fatalf("decodeMessage accepts a value readHeader rejects: %v", herr)
		}
		if string(h.threadTS) != string(m.ThreadTS) {
			t.Fatalf("readHeader thread_ts %q, decodeMessage %q", h.threadTS, m.ThreadTS)
		}
		again, err := decodeMessage("C1", appendMessage(nil, &m), appendReadTimes(nil, &m))
		if err != nil {
			t.Fatalf("re-encoded message does not decode: %v", err)
		}
		if d := cmp.Diff(m, again); d != "" {
			t.Fatalf("decode(encode(m)) != m (-m +again):\n%s", d)
		}
	})
}
