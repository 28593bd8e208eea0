package slackapi

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

const testToken = "xoxb-SECRET-TOKEN-4242"

// handlerTransport is an in-memory http.RoundTripper: it calls the handler directly
// with an httptest.ResponseRecorder, so tests run inside a synctest bubble without
// sockets. It honours the request context like a real transport would.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

// request is one request the fake received.
type request struct {
	method string // Slack method, e.g. "conversations.history"
	at     time.Time
	form   url.Values
}

// fakeSlack routes /<method> to per-method handlers and records every request.
type fakeSlack struct {
	mu       sync.Mutex
	handlers map[string]http.HandlerFunc
	reqs     []request
}

func newFake() *fakeSlack { return &fakeSlack{handlers: map[string]http.HandlerFunc{}} }

func (f *fakeSlack) handle(method string, h http.HandlerFunc) { f.handlers[method] = h }

func (f *fakeSlack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	f.mu.Lock()
	f.reqs = append(f.reqs, request{method: method, at: time.Now(), form: r.PostForm})
	h := f.handlers[method]
	f.mu.Unlock()
	if h == nil {
		http.NotFound(w, r)
		return
	}
	h(w, r)
}

// requests returns the recorded requests of method.
func (f *fakeSlack) requests(method string) []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []request
	for _, r := range f.reqs {
		if r.method == method {
			out = append(out, r)
		}
	}
	return out
}

// memPacing is an in-memory PacingStore.
type memPacing struct {
	mu sync.Mutex
	m  map[string]readmodel.MethodState
}

func newMemPacing() *memPacing { return &memPacing{m: map[string]readmodel.MethodState{}} }

func (p *memPacing) LoadMethodState(method string) (readmodel.MethodState, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.m[method]
	return s, ok, nil
}

func (p *memPacing) SaveMethodState(method string, s readmodel.MethodState) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m[method] = s
	return nil
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newTestClient builds a Client talking to f in memory. rates are merged over a
// fast profile (6000/min, 10 ms spacing) so tests only wait where they mean to.
func newTestClient(t *testing.T, f http.Handler, rates map[string]float64, mod ...func(*Options)) *Client {
	t.Helper()
	all := map[string]float64{}
	for _, m := range Methods {
		all[m] = 6000
	}
	for m, r := range rates {
		all[m] = r
	}
	opts := Options{
		Token:      testToken,
		APIURL:     "http://slack.test/api/",
		HTTPClient: &http.Client{Transport: handlerTransport{f}},
		Rates:      all,
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	}
	for _, m := range mod {
		m(&opts)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// writeJSON writes body with status 200 and a JSON content type.
func writeJSON(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = w.Write([]byte(body))
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// okPage is a one-message history/replies page with the given next cursor.
func okPage(ts, next string) string {
	return `{"ok":true,"messages":[{"type":"message","user":"U1","text":"hi","ts":"` + ts +
		`"}],"has_more":` + boolJSON(next != "") + `,"response_metadata":{"next_cursor":"` + next + `"}}`
}

func boolJSON(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

var bg = context.Background()
