package demo

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/testsupport/compliance"
)

// pacingJitter absorbs float rounding in x/time/rate's delays; in virtual time
// (testing/synctest) requests arrive exactly when they are sent.
const pacingJitter = time.Millisecond

// checkPacing checks the fake's request log against the client's pacing rules
// (README, "How it works") with internal/testsupport/compliance: rates and even spacing at the client's
// rates, and no call before the wait a 429 asked for. It returns the violations and
// the report of the 429s.
func checkPacing(reqs []slackfake.Request, clientRates map[string]float64, fakeRates map[string]int) ([]string, compliance.RetryAfterReport) {
	calls := fakeCalls(reqs, fakeRates)
	_, bad := compliance.CheckRates(calls, clientRates, pacingJitter)
	spacing := map[string]time.Duration{}
	for m, r := range clientRates {
		spacing[m] = compliance.Spacing(r)
	}
	ra := compliance.CheckRetryAfter(calls, spacing)
	return append(bad, ra.Violations...), ra
}

// fakeCalls converts the fake's request log (compliance.FromFake) and restores the
// Retry-After of the 429s the fake's own limits answered, which its log does not keep:
// recomputed from its sliding window (slackfake's rateCheck) — whole seconds, at least
// 1, until the window of accepted requests frees a slot. Requests answered before the
// rate check (5xx, reset, 429 without Retry-After) do not enter the window, nor do
// rejected ones.
func fakeCalls(reqs []slackfake.Request, fakeRates map[string]int) []compliance.Call {
	calls := compliance.FromFake(reqs)
	accepted := map[string][]time.Time{}
	for i, r := range reqs {
		limit := fakeRates[r.Method]
		switch {
		case r.Fault == slackfake.Status5xx || r.Fault == slackfake.ConnReset || r.Fault == slackfake.RateLimitNoRetryAfter:
		case r.Status == http.StatusTooManyRequests:
			win := accepted[r.Method]
			for len(win) > 0 && !win[0].After(r.Time.Add(-time.Minute)) {
				win = win[1:]
			}
			accepted[r.Method] = win
			if limit > 0 && len(win) >= limit {
				wait := win[len(win)-limit].Add(time.Minute).Sub(r.Time)
				secs := max((wait+time.Second-1)/time.Second, 1)
				calls[i].RetryAfter, calls[i].HasRetryAfter = secs*time.Second, true
			}
		case limit > 0:
			accepted[r.Method] = append(accepted[r.Method], r.Time)
		}
	}
	return calls
}

// The recomputed Retry-After is the one the fake sends.
func TestFakeCallsRestoreRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		limits := map[string]int{rm.MethodHistory: 3}
		fake := slackfake.New(slackfake.Options{RatePerMinute: limits})
		if err := fake.AddConversation(slackfake.PublicChannel("C0GENERAL", "general")); err != nil {
			t.Fatal(err)
		}
		fake.InjectFault(slackfake.Fault{Kind: slackfake.Status5xx}) // not counted by the window
		client := fake.Client()
		var sent []string // Retry-After headers as answered
		for _, wait := range []time.Duration{0, 5, 7, 11, 13, 17, 40, 1} {
			time.Sleep(wait * time.Second)
			resp, err := client.PostForm("http://slack.fake/api/conversations.history",
				url.Values{"token": {fake.Token()}, "channel": {"C0GENERAL"}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusTooManyRequests {
				sent = append(sent, resp.Header.Get("Retry-After"))
			}
		}
		var got []string
		for _, c := range fakeCalls(fake.Requests(), limits) {
			if c.HasRetryAfter {
				got = append(got, strconv.Itoa(int(c.RetryAfter/time.Second)))
			}
		}
		if len(sent) < 2 || len(got) != len(sent) {
			t.Fatalf("Retry-After sent %q, recomputed %q", sent, got)
		}
		for i := range sent {
			if got[i] != sent[i] {
				t.Errorf("429 #%d: Retry-After sent %s, recomputed %s", i, sent[i], got[i])
			}
		}
	})
}

// checkPacing finds an early call after a 429 with Retry-After, one after a 429
// without, and calls closer than the spacing.
func TestCheckPacingFindsViolations(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const h = rm.MethodHistory
	req := func(d time.Duration, status int, f slackfake.FaultKind) slackfake.Request {
		return slackfake.Request{Method: h, Time: t0.Add(d), Status: status, Fault: f}
	}
	ok := func(d time.Duration) slackfake.Request { return req(d, http.StatusOK, slackfake.FaultNone) }
	limited := func(d time.Duration) slackfake.Request {
		return req(d, http.StatusTooManyRequests, slackfake.FaultNone)
	}
	noRetryAfter := func(d time.Duration) slackfake.Request {
		return req(d, http.StatusTooManyRequests, slackfake.RateLimitNoRetryAfter)
	}
	client := map[string]float64{h: 60} // one per second
	fake := map[string]int{h: 2}        // two per sliding minute
	cases := []struct {
		name string
		reqs []slackfake.Request
		want int
	}{
		{"evenly spaced", []slackfake.Request{ok(0), ok(time.Second), ok(3 * time.Second)}, 0},
		{"too close", []slackfake.Request{ok(0), ok(900 * time.Millisecond)}, 1},
		// The window holds 0 s and 1 s: the 429 at 2 s says Retry-After 58.
		{"Retry-After honoured", []slackfake.Request{ok(0), ok(time.Second), limited(2 * time.Second), ok(60 * time.Second)}, 0},
		{"Retry-After ignored", []slackfake.Request{ok(0), ok(time.Second), limited(2 * time.Second), ok(59 * time.Second)}, 1},
		{"no Retry-After: one spacing", []slackfake.Request{noRetryAfter(0), ok(time.Second)}, 0},
		{"other methods do not count", []slackfake.Request{ok(0), {Method: rm.MethodUsersInfo, Time: t0.Add(time.Millisecond)}}, 0},
	}
	for _, c := range cases {
		got, _ := checkPacing(c.reqs, client, fake)
		if len(got) != c.want {
			t.Errorf("%s: %d violations, want %d: %q", c.name, len(got), c.want, got)
		}
	}
	// A 429 without Retry-After forbids the next second even at a higher rate.
	fast := map[string]float64{h: 600}
	if got, _ := checkPacing([]slackfake.Request{noRetryAfter(0), ok(500 * time.Millisecond)}, fast, nil); len(got) != 1 {
		t.Errorf("call 0.5 s after a 429 without Retry-After: %q, want one violation", got)
	}
}
