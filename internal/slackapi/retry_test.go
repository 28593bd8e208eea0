package slackapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// TestTransientFailuresRetryWithBackoffThenClassTransient: each transient failure is
// attempted 4 times (3 retries) 1 s, 2 s, 4 s apart, then returned as ClassTransient.
func TestTransientFailuresRetryWithBackoffThenClassTransient(t *testing.T) {
	cases := []struct {
		name    string
		handler http.HandlerFunc
		code    string
	}{
		{"HTTP 503", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("<html>down</html>"))
		}, "http_503"},
		{"HTTP 500", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) }, "http_500"},
		{"HTML body with 200", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<!DOCTYPE html><html><body>Slack is down</body></html>"))
		}, CodeMalformed},
		{"truncated body", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, `{"ok":true,"messages":[{"ts":"1700000000.000100","text":"cut`)
		}, CodeMalformed},
		{"empty body", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }, CodeMalformed},
		{"timeout", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, CodeTimeout},
		{"service_unavailable", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, `{"ok":false,"error":"service_unavailable"}`)
		}, "service_unavailable"},
		{"fatal_error", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, `{"ok":false,"error":"fatal_error"}`) }, "fatal_error"},
		{"request_timeout", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, `{"ok":false,"error":"request_timeout"}`) }, "request_timeout"},
		{"internal_error", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, `{"ok":false,"error":"internal_error"}`) }, "internal_error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				f.handle("conversations.history", tc.handler)
				c := newTestClient(t, f, nil, func(o *Options) { o.RequestTimeout = 2 * time.Second })
				_, err := c.History(bg, historyReq("cur"))
				assertBackoffThenTransient(t, err, tc.code, f.requests("conversations.history"))
			})
		})
	}
}

func assertBackoffThenTransient(t *testing.T, err error, code string, reqs []request) {
	t.Helper()
	var ae *readmodel.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v (%T), want *readmodel.APIError", err, err)
	}
	if ae.Class != readmodel.ClassTransient || ae.Code != code {
		t.Errorf("err = class %v code %q, want transient %q", ae.Class, ae.Code, code)
	}
	if len(reqs) != 4 {
		t.Fatalf("%d attempts, want 4 (1 + 3 retries)", len(reqs))
	}
	for i, want := range []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second} {
		// The gap also holds the failed attempt's own duration (2 s for a timeout).
		gap := reqs[i+1].at.Sub(reqs[i].at)
		if gap < want || gap > want+2*time.Second+50*time.Millisecond {
			t.Errorf("retry %d after %v, want %v backoff", i+1, gap, want)
		}
		if reqs[i+1].form.Get("cursor") != "cur" {
			t.Errorf("retry %d cursor = %q, want the same request", i+1, reqs[i+1].form.Get("cursor"))
		}
	}
}

// resetTransport fails every round trip with a connection reset.
type resetTransport struct{ n atomic.Int32 }

func (rt *resetTransport) RoundTrip(*http.Request) (*http.Response, error) {
	rt.n.Add(1)
	return nil, fmt.Errorf("read tcp 127.0.0.1:1->127.0.0.1:2: %w", syscall.ECONNRESET)
}

func TestConnectionResetRetriesThenClassTransient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := &resetTransport{}
		c := newTestClient(t, newFake(), nil, func(o *Options) { o.HTTPClient = &http.Client{Transport: rt} })
		start := time.Now()
		_, err := c.UserInfo(bg, "U1")
		if got := readmodel.ClassOf(err); got != readmodel.ClassTransient || readmodel.CodeOf(err) != CodeConnection {
			t.Errorf("err = %v (class %v), want transient %s", err, got, CodeConnection)
		}
		if n := rt.n.Load(); n != 4 {
			t.Errorf("%d attempts, want 4", n)
		}
		// The operator needs the cause, not only our code for it.
		if msg := err.Error(); !strings.Contains(msg, "connection reset") || strings.Count(msg, "users.info:") != 1 {
			t.Errorf("error %q: want the cause (connection reset) and the method once", msg)
		}
		if d := time.Since(start); d < 7*time.Second {
			t.Errorf("took %v, want >= 7s of backoff (1+2+4)", d)
		}
	})
}

func TestTransientFailureRecoversWithinTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		var n atomic.Int32
		f.handle("conversations.replies", func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) <= 2 {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			writeJSON(w, okPage("1700000000.000100", ""))
		})
		c := newTestClient(t, f, nil)
		page, err := c.Replies(bg, readmodel.RepliesRequest{Channel: "C1", TS: "1700000000.000100", Limit: 1000})
		if err != nil {
			t.Fatalf("Replies: %v", err)
		}
		if len(page.Messages) != 1 || n.Load() != 3 {
			t.Errorf("got %d messages after %d attempts, want 1 after 3", len(page.Messages), n.Load())
		}
	})
}

func TestRetriesPassTheLimiter(t *testing.T) {
	// At 1/min a retry waits for the spacing, not just the 1 s backoff.
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) })
		c := newTestClient(t, f, map[string]float64{readmodel.MethodHistory: 1})
		_, _ = c.History(bg, historyReq(""))
		reqs := f.requests("conversations.history")
		for i := 1; i < len(reqs); i++ {
			if gap := reqs[i].at.Sub(reqs[i-1].at); gap < time.Minute {
				t.Errorf("retry %d after %v, want >= 60s", i, gap)
			}
		}
	})
}

// slack-go takes {"ok": false} without an error code for a success with nothing in
// it. For conversations.replies that empty answer would replace a whole reply set:
// every method must instead fail it as malformed (transient, retried).
func TestOkFalseWithoutErrorCodeIsMalformedForEveryMethod(t *testing.T) {
	calls := map[string]func(c *Client) error{
		"conversations.replies": func(c *Client) error {
			_, err := c.Replies(bg, readmodel.RepliesRequest{Channel: "C1", TS: "1700000000.000100", Limit: 1000, Cursor: "cur"})
			return err
		},
		"conversations.history": func(c *Client) error { _, err := c.History(bg, historyReq("cur")); return err },
		"users.info":            func(c *Client) error { _, err := c.UserInfo(bg, "U1"); return err },
		"conversations.info":    func(c *Client) error { _, err := c.ConversationInfo(bg, "C1"); return err },
		"auth.test":             func(c *Client) error { _, err := c.AuthTest(bg); return err },
	}
	for method, call := range calls {
		t.Run(method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				f.handle(method, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, `{"ok":false}`) })
				c := newTestClient(t, f, nil)
				err := call(c)
				if readmodel.ClassOf(err) != readmodel.ClassTransient || readmodel.CodeOf(err) != CodeMalformed {
					t.Fatalf("err = %v, want transient %s", err, CodeMalformed)
				}
				if n := len(f.requests(method)); n != 4 {
					t.Errorf("%d attempts, want 4 (retried as transient)", n)
				}
			})
		})
	}
}

func TestHTTP404SaysToCheckTheAPIURL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("auth.test", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
		c := newTestClient(t, f, nil)
		_, err := c.AuthTest(bg)
		if readmodel.CodeOf(err) != "http_404" || !strings.Contains(err.Error(), "slack.api_url") {
			t.Fatalf("err = %v, want http_404 pointing at slack.api_url", err)
		}
	})
}
