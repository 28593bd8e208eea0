package httpapi_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/slackpoll/slackpoll/internal/httpapi"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
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

// hostileEnv serves the API as the daemon does on listen, over a polled fixture.
func hostileEnv(t *testing.T, listen string) *httptest.Server {
	t.Helper()
	f := readfixture.New(t, readfixture.Options{})
	srv := httptest.NewServer(httpapi.New(httpapi.Options{
		Store: f.Store, Configured: f.Configured, Interval: readfixture.Interval, Now: f.Clock.Now, Listen: listen,
	}))
	t.Cleanup(srv.Close)
	return srv
}

func send(t *testing.T, srv *httptest.Server, method, path, host, contentType, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// A web page on another name (DNS rebinding: evil.example resolving to 127.0.0.1)
// is refused; loopback names, IP literals and the configured listen host are served.
func TestHostHeaderOfAnotherNameIsRefused(t *testing.T) {
	srv := hostileEnv(t, "slackpoll.internal:8089")
	for host, want := range map[string]int{
		"evil.example":            http.StatusForbidden,
		"evil.example:8089":       http.StatusForbidden,
		"localhost.evil.example":  http.StatusForbidden,
		"localhost:8089":          http.StatusOK,
		"127.0.0.1:8089":          http.StatusOK,
		"[::1]:8089":              http.StatusOK,
		"slackpoll.internal:8089": http.StatusOK,
		"SLACKPOLL.INTERNAL":      http.StatusOK,
		"10.1.2.3:8089":           http.StatusOK,
	} {
		if got := send(t, srv, "GET", "/v1/conversations", host, "", ""); got != want {
			t.Errorf("Host %q: %d, want %d", host, got, want)
		}
	}
}

// A scraper or sidecar that reaches the daemon by a service name (Docker Compose
// "slackpoll:8089", a Kubernetes service) is served once the name is in
// http.allowed_hosts; other names are still refused. It got 403 whatever the config.
func TestAllowedHostsAdmitServiceNames(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	srv := httptest.NewServer(httpapi.New(httpapi.Options{
		Store: f.Store, Configured: f.Configured, Interval: readfixture.Interval, Now: f.Clock.Now, Listen: "0.0.0.0:8089",
		AllowedHosts: []string{"slackpoll", "slackpoll.monitoring.svc"},
	}))
	t.Cleanup(srv.Close)
	for host, want := range map[string]int{
		"slackpoll:8089":                http.StatusOK,
		"Slackpoll":                     http.StatusOK,
		"slackpoll.monitoring.svc:8089": http.StatusOK,
		"evil.example:8089":             http.StatusForbidden,
		"slackpoll.evil.example":        http.StatusForbidden,
	} {
		if got := send(t, srv, "GET", "/metrics", host, "", ""); got != want {
			t.Errorf("Host %q: %d, want %d", host, got, want)
		}
	}
}

// A cross-origin page can POST without a preflight only as text/plain, a form or
// multipart: a state-changing request needs Content-Type: application/json.
func TestStateChangingRequestNeedsJSONContentType(t *testing.T) {
	srv := hostileEnv(t, "127.0.0.1:8089")
	body := `{"channel":"C0GENERAL","ts":"1700000000.000001"}`
	for ct, want := range map[string]int{
		"":                                  http.StatusUnsupportedMediaType,
		"text/plain":                        http.StatusUnsupportedMediaType,
		"application/x-www-form-urlencoded": http.StatusUnsupportedMediaType,
		"multipart/form-data; boundary=x":   http.StatusUnsupportedMediaType,
		"application/json":                  http.StatusOK,
		"application/json; charset=utf-8":   http.StatusOK,
	} {
		if got := send(t, srv, "POST", "/v1/tracked", "", ct, body); got != want {
			t.Errorf("Content-Type %q: %d, want %d", ct, got, want)
		}
	}
}

// A state-changing request a web page of another origin makes (a JSON POST after a
// preflight the page's own server answered, or a browser that skips it) is refused;
// the same request from a program (no Origin), or from the API's own origin, passes.
func TestStateChangingRequestFromAnotherOriginIsRefused(t *testing.T) {
	srv := hostileEnv(t, "127.0.0.1:8089")
	host := strings.TrimPrefix(srv.URL, "http://")
	body := `{"channel":"C0GENERAL","ts":"1700000000.000001"}`
	for _, tc := range []struct {
		origin, fetchSite string
		want              int
	}{
		{"", "", http.StatusOK},
		{"http://evil.example", "", http.StatusForbidden},
		{"http://evil.example", "cross-site", http.StatusForbidden},
		{"", "cross-site", http.StatusForbidden},
		{"http://" + host, "", http.StatusOK},
		{"http://" + host, "same-origin", http.StatusOK},
	} {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/tracked", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		if tc.fetchSite != "" {
			req.Header.Set("Sec-Fetch-Site", tc.fetchSite)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("Origin %q, Sec-Fetch-Site %q: %d, want %d", tc.origin, tc.fetchSite, resp.StatusCode, tc.want)
		}
	}
}
