package httpapi_test

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a goroutine-safe log sink.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Bad client input gets 400 or 404 — never a 500 with the input in an ERROR log line.
func TestBadClientInputIsAClientError(t *testing.T) {
	var logs lockedBuffer
	e := newEnv(t, envOpts{log: slog.New(slog.NewTextHandler(&logs, nil))})
	long := strings.Repeat("x", 40000)
	conv := e.f.Configured[0]
	for _, c := range []struct {
		method, path string
		body         any
		want         int
	}{
		{"GET", "/v1/conversations/C%00/messages", nil, http.StatusNotFound},
		{"GET", "/v1/conversations/" + long + "/messages", nil, http.StatusNotFound},
		{"GET", "/v1/conversations/" + long + "/messages/1700000000.000001", nil, http.StatusNotFound},
		{"GET", "/v1/records/" + long, nil, http.StatusNotFound},
		{"GET", "/v1/users/" + long, nil, http.StatusNotFound},
		{"POST", "/v1/tracked", map[string]string{"channel": conv, "ts": "1700000000.000001", "record": long}, http.StatusBadRequest},
	} {
		code, b := e.do(t, c.method, c.path, c.body)
		if code != c.want {
			t.Errorf("%s %.60s: %d %.200s, want %d", c.method, c.path, code, b, c.want)
		}
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("bad input logged as an error:\n%.2000s", logs.String())
	}
}
