package slackapi

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

func TestTokenOrTokenSourceExactlyOne(t *testing.T) {
	src := func() string { return "xoxb-1" }
	for name, opts := range map[string]Options{"neither": {}, "both": {Token: "xoxb-1", TokenSource: src}} {
		if _, err := New(opts); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
	if _, err := New(Options{TokenSource: src}); err != nil {
		t.Errorf("TokenSource alone: %v", err)
	}
}

// TestTokenSourceRotatesWithoutResettingPacing: each attempt sends the token of that
// moment, and a rotation between two calls neither rebuilds the client nor lets the
// second call out before the method's spacing.
func TestTokenSourceRotatesWithoutResettingPacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, okPage("1.000001", "")) })
		var tok atomic.Value
		tok.Store("xoxe.xoxb-first")
		c := newTestClient(t, f, map[string]float64{readmodel.MethodHistory: 1}, func(o *Options) {
			o.Token, o.TokenSource = "", func() string { return tok.Load().(string) }
		})
		if _, err := c.History(bg, historyReq("")); err != nil {
			t.Fatal(err)
		}
		tok.Store("xoxe.xoxb-second")
		if _, err := c.History(bg, historyReq("")); err != nil {
			t.Fatal(err)
		}
		reqs := f.requests("conversations.history")
		if got := []string{reqs[0].form.Get("token"), reqs[1].form.Get("token")}; got[0] != "xoxe.xoxb-first" || got[1] != "xoxe.xoxb-second" {
			t.Errorf("tokens sent = %v, want the first then the rotated one", got)
		}
		if gap := reqs[1].at.Sub(reqs[0].at); gap != paced(time.Minute) {
			t.Errorf("gap after rotation %v, want %v: the pacer must not reset", gap, paced(time.Minute))
		}
	})
}

// TestTokenSourceEmptyIsNotAuthed: no request goes out without a token.
func TestTokenSourceEmptyIsNotAuthed(t *testing.T) {
	f := newFake()
	f.handle("auth.test", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, `{"ok":true,"user_id":"U1"}`) })
	c := newTestClient(t, f, nil, func(o *Options) { o.Token, o.TokenSource = "", func() string { return "" } })
	_, err := c.AuthTest(bg)
	if code, ok := TokenError(err); !ok || code != CodeNotAuthed {
		t.Errorf("AuthTest with an empty token: %v, want not_authed", err)
	}
	if n := len(f.requests("auth.test")); n != 0 {
		t.Errorf("%d requests sent without a token", n)
	}
}

func TestTokenErrorTellsExpiredFromRevoked(t *testing.T) {
	for _, code := range []string{CodeTokenExpired, CodeInvalidAuth, CodeTokenRevoked, CodeAccountInactive, "channel_not_found"} {
		f := newFake()
		f.handle("auth.test", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, `{"ok":false,"error":"`+code+`"}`) })
		_, err := newTestClient(t, f, nil).AuthTest(bg)
		got, ok := TokenError(err)
		wantOK := code != "channel_not_found"
		if ok != wantOK || (ok && got != code) {
			t.Errorf("%s: TokenError = %q, %v", code, got, ok)
		}
		if IsTokenExpired(err) != (code == CodeTokenExpired) {
			t.Errorf("%s: IsTokenExpired = %v", code, IsTokenExpired(err))
		}
	}
	if _, ok := TokenError(errors.New("x")); ok {
		t.Error("a plain error is a token error")
	}
}

func TestRefreshToken(t *testing.T) {
	const secret, refresh = "CLIENT-SECRET-123", "xoxe-1-REFRESH-456"
	f := newFake()
	var answer atomic.Value
	f.handle("oauth.v2.access", func(w http.ResponseWriter, r *http.Request) {
		a := answer.Load().(string)
		if strings.HasPrefix(a, "status ") {
			if a == "status 429" {
				w.Header().Set("Retry-After", "7")
			}
			w.WriteHeader(map[string]int{"status 503": 503, "status 429": 429}[a])
			return
		}
		writeJSON(w, a)
	})
	opts := OAuthOptions{APIURL: "http://slack.test/api/", HTTPClient: &http.Client{Transport: handlerTransport{f}}, ClientID: "1.2", ClientSecret: secret}

	answer.Store(`{"ok":true,"access_token":"xoxe.xoxb-1-NEW","refresh_token":"xoxe-1-NEXT","expires_in":43200,"team":{"id":"T1"},"enterprise":{"id":"E1"}}`)
	got, err := RefreshToken(bg, opts, refresh)
	want := Refreshed{AccessToken: "xoxe.xoxb-1-NEW", RefreshToken: "xoxe-1-NEXT", ExpiresIn: 12 * time.Hour, TeamID: "T1", EnterpriseID: "E1"}
	if err != nil || got != want {
		t.Fatalf("RefreshToken = %+v, %v; want %+v", got, err, want)
	}
	form := f.requests("oauth.v2.access")[0].form
	if form.Get("grant_type") != "refresh_token" || form.Get("refresh_token") != refresh || form.Get("client_id") != "1.2" {
		t.Errorf("request form %v", form)
	}

	for _, c := range []struct {
		answer, code string
		transient    bool
	}{
		{`{"ok":false,"error":"invalid_refresh_token"}`, "invalid_refresh_token", false},
		{`{"ok":false,"error":"invalid_client_id"}`, "invalid_client_id", false},
		{`{"ok":false,"error":"bad_client_secret"}`, "bad_client_secret", false},
		{`{"ok":false,"error":"service_unavailable"}`, "service_unavailable", true},
		{`{"ok":true,"access_token":"","expires_in":1}`, CodeMalformed, true},
		{`<html>`, CodeMalformed, true},
		{"status 503", "http_503", true},
		{"status 429", "ratelimited", true},
	} {
		answer.Store(c.answer)
		_, err := RefreshToken(bg, opts, refresh)
		var oe *OAuthError
		if !errors.As(err, &oe) || oe.Code != c.code || oe.Transient != c.transient {
			t.Errorf("answer %s: %v (%+v), want code %s transient %v", c.answer, err, oe, c.code, c.transient)
			continue
		}
		if c.code == "ratelimited" && oe.RetryAfter != 7*time.Second {
			t.Errorf("429: RetryAfter %v, want Slack's 7s", oe.RetryAfter)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), refresh) {
			t.Errorf("error shows a secret: %v", err)
		}
	}
}
