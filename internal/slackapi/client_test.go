package slackapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

func TestNewValidatesOptions(t *testing.T) {
	if _, err := New(Options{}); err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("empty token: err = %v", err)
	}
	c, err := New(Options{Token: testToken, APIURL: "http://127.0.0.1:9/api"})
	if err != nil {
		t.Fatalf("URL without slash: %v", err)
	}
	if c.Spacing(readmodel.MethodHistory) != 60e9 {
		t.Errorf("default history spacing = %v, want 1m (non_marketplace)", c.Spacing(readmodel.MethodHistory))
	}
	for _, bad := range []string{"slack.com/api/", "ftp://x/", "http://x/api/?a=b"} {
		if _, err := New(Options{Token: testToken, APIURL: bad}); err == nil {
			t.Errorf("APIURL %q accepted", bad)
		}
	}
	if _, err := New(Options{Token: testToken, Rates: map[string]float64{"chat.postMessage": 1}}); err == nil {
		t.Error("unknown method rate accepted")
	}
	if _, err := New(Options{Token: testToken, Rates: map[string]float64{readmodel.MethodHistory: 0}}); err == nil {
		t.Error("zero rate accepted")
	}
}

func TestAPIURLGetsTrailingSlash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("auth.test", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, `{"ok":true,"user_id":"U1"}`) })
		c := newTestClient(t, f, nil, func(o *Options) { o.APIURL = "http://slack.test/api" })
		if _, err := c.AuthTest(bg); err != nil {
			t.Fatalf("AuthTest with APIURL lacking '/': %v", err)
		}
	})
}

// TestTokenNeverInErrorsOrLogs drives every failure path with debug logging on and
// checks that neither the errors (with their whole Unwrap chain) nor the log contain
// the token — while the fake did receive it.
func TestTokenNeverInErrorsOrLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs syncBuffer
		f := newFake()
		var n atomic.Int32
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) {
			switch n.Add(1) {
			case 1:
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
			case 2:
				w.WriteHeader(http.StatusBadGateway)
			default:
				writeJSON(w, badPage(`"latest_reply":1.5`))
			}
		})
		f.handle("conversations.replies", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("<html>" + r.PostForm.Get("token") + "</html>")) // even an echoing proxy
		})
		f.handle("auth.test", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, `{"ok":false,"error":"invalid_auth"}`) })
		f.handle("users.info", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, `{"ok":false,"error":"missing_scope","needed":"users:read"}`)
		})
		c := newTestClient(t, f, nil, func(o *Options) {
			o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		})
		var errs []error
		_, err := c.History(bg, historyReq(""))
		errs = append(errs, err)
		_, err = c.Replies(bg, readmodel.RepliesRequest{Channel: "C1", TS: "1.000001"})
		errs = append(errs, err)
		_, err = c.AuthTest(bg)
		errs = append(errs, err)
		_, err = c.UserInfo(bg, "U1")
		errs = append(errs, err)
		_, err = c.ConversationInfo(bg, "C404") // no handler: 404
		errs = append(errs, err)
		rt := &resetTransport{}
		c2 := newTestClient(t, f, nil, func(o *Options) {
			o.HTTPClient = &http.Client{Transport: rt}
			o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		})
		_, err = c2.AuthTest(bg)
		errs = append(errs, err)

		if got := f.requests("auth.test")[0].form.Get("token"); got != testToken {
			t.Fatalf("fake got token %q: the test would prove nothing", got)
		}
		for i, err := range errs[1:] {
			if err == nil {
				t.Errorf("call %d: no error", i+1)
			}
		}
		for _, err := range errs {
			for e := err; e != nil; e = errors.Unwrap(e) {
				for _, s := range []string{e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
					if strings.Contains(s, testToken) {
						t.Errorf("error contains the token: %s", s)
					}
				}
			}
		}
		if strings.Contains(logs.String(), testToken) {
			t.Errorf("log contains the token:\n%s", logs.String())
		}
		if !strings.Contains(logs.String(), "rate limited") || !strings.Contains(logs.String(), "outcome=ok") {
			t.Errorf("log lacks the 429 warning or the per-call debug line:\n%s", logs.String())
		}
	})
}
