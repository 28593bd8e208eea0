package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slackpoll/slackpoll/internal/httpapi"
	"github.com/slackpoll/slackpoll/internal/metrics"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

// env is an API server over a polled fixture store, with its metrics wired into the
// fixture's Slack client and poller as the daemon wires them.
type env struct {
	f       *readfixture.Fixture
	metrics *metrics.Metrics
	srv     *httptest.Server
	token   string
}

type envOpts struct {
	token string
	ready func() error
	log   *slog.Logger
	// webhooks are the configured webhook names (their outbox figures are served at 0).
	webhooks []string
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	m := metrics.New()
	f := readfixture.New(t, readfixture.Options{OnCall: m.OnCall, OnTick: m.OnTick})
	ready := o.ready
	if ready == nil {
		ready = m.Ready
	}
	h := httpapi.New(httpapi.Options{
		Store: f.Store, Configured: f.Configured, Interval: readfixture.Interval,
		Token: o.token, Ready: ready, Metrics: m, Now: f.Clock.Now, Logger: o.log, Webhooks: o.webhooks,
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{f: f, metrics: m, srv: srv, token: o.token}
}

// do sends a request (with the env's token, if any) and returns status and body.
func (e *env) do(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// get sends GET path, checks the status and decodes the JSON body into v.
func (e *env) get(t *testing.T, path string, wantCode int, v any) {
	t.Helper()
	code, b := e.do(t, http.MethodGet, path, nil)
	if code != wantCode {
		t.Fatalf("GET %s = %d %s, want %d", path, code, b, wantCode)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("GET %s: %v in %s", path, err, b)
		}
	}
}

// errorOf decodes an {"error": …} body and fails unless it has exactly that shape.
func errorOf(t *testing.T, b []byte) string {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("error body %q is not JSON: %v", b, err)
	}
	msg, ok := body["error"].(string)
	if !ok || len(body) != 1 || msg == "" {
		t.Fatalf("error body = %s, want {\"error\": \"…\"}", b)
	}
	return msg
}

func wantErr(t *testing.T, e *env, method, path string, body any, code int, contains string) {
	t.Helper()
	got, b := e.do(t, method, path, body)
	if got != code {
		t.Fatalf("%s %s = %d %s, want %d", method, path, got, b, code)
	}
	if msg := errorOf(t, b); !strings.Contains(msg, contains) {
		t.Errorf("%s %s error = %q, want it to mention %q", method, path, msg, contains)
	}
}
