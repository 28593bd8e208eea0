package compliance

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// TestRecorderSeesWhatTheClientWasTold runs the fake behind a Recorder: a 429 comes
// with its Retry-After, a reset connection has status 0, parameters of a form body
// reach Before and still reach the fake, and the log agrees with the fake's own.
func TestRecorderSeesWhatTheClientWasTold(t *testing.T) {
	fake := slackfake.New(slackfake.Options{RatePerMinute: map[string]int{"auth.test": 2}})
	rec := NewRecorder(fake)
	var sawCursor atomic.Value
	rec.Before = func(method string, params url.Values) {
		if method == "conversations.history" {
			sawCursor.Store(params.Get("cursor"))
		}
	}
	srv := httptest.NewServer(rec)
	defer srv.Close()

	post := func(method string, form url.Values) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+"/api/"+method, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+fake.Token())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return // the reset
		}
		resp.Body.Close()
	}
	for range 3 {
		post("auth.test", nil)
	}
	fake.InjectFault(slackfake.Fault{Kind: slackfake.ConnReset})
	post("users.info", url.Values{"user": {"U1"}})
	post("conversations.history", url.Values{"channel": {"C1"}, "cursor": {"abc"}})

	got := rec.Calls()
	if len(got) != 5 {
		t.Fatalf("recorded %d calls, want 5: %+v", len(got), got)
	}
	if got[0].Status != 200 || got[1].Status != 200 {
		t.Errorf("first two auth.test: %+v", got[:2])
	}
	if c := got[2]; !c.RateLimited() || !c.HasRetryAfter || c.RetryAfter < time.Second || c.RetryAfter > time.Minute {
		t.Errorf("third auth.test should be a 429 with Retry-After: %+v", c)
	}
	if got[3].Status != 0 {
		t.Errorf("reset connection: status %d, want 0", got[3].Status)
	}
	if c := got[4]; c.Cursor != "abc" || sawCursor.Load() != "abc" || c.Status != 200 {
		t.Errorf("form parameters: call %+v, Before saw %v", c, sawCursor.Load())
	}
	fromFake := FromFake(fake.Requests())
	if len(fromFake) != len(got) {
		t.Fatalf("fake logged %d, recorder %d", len(fromFake), len(got))
	}
	for i := range got {
		if fromFake[i].Method != got[i].Method || fromFake[i].Status != got[i].Status || fromFake[i].Cursor != got[i].Cursor {
			t.Errorf("call %d: fake %+v, recorder %+v", i, fromFake[i], got[i])
		}
	}
}
