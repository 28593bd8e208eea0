package compliance

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// calls builds a log of one method from offsets after t0.
func calls(method string, offsets ...time.Duration) []Call {
	out := make([]Call, len(offsets))
	for i, d := range offsets {
		out[i] = Call{Method: method, Time: t0.Add(d), Status: 200}
	}
	return out
}

func every(n int, step time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i) * step
	}
	return out
}

func TestCheckRatesAcceptsEvenSpacing(t *testing.T) {
	// 20/min for ten minutes, exactly 3 s apart: 20 in any 60 s window.
	log := calls("m", every(200, 3*time.Second)...)
	stats, bad := CheckRates(log, map[string]float64{"m": 20}, 50*time.Millisecond)
	if len(bad) != 0 {
		t.Fatalf("violations for an evenly spaced client: %v", bad)
	}
	if st := stats[0]; st.MaxInWindow != 20 || st.MinGap != 3*time.Second || st.Calls != 200 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestCheckRatesFlagsWindowOverrun(t *testing.T) {
	// 21 calls in 59 s at 20/min, each gap ≥ the spacing minus jitter would be
	// impossible, so give the check a generous jitter to isolate the window rule.
	log := calls("m", every(21, 2950*time.Millisecond)...)
	_, bad := CheckRates(log, map[string]float64{"m": 20}, 100*time.Millisecond)
	if !hasPrefix(bad, "m: 21 calls within") {
		t.Fatalf("window overrun not reported: %v", bad)
	}
}

func TestCheckRatesFlagsBurst(t *testing.T) {
	// Two calls 1 s apart at 20/min: well within the window count, but not burst 1.
	log := calls("m", 0, time.Second)
	_, bad := CheckRates(log, map[string]float64{"m": 20}, 100*time.Millisecond)
	if !hasPrefix(bad, "m: calls at") || len(bad) != 1 {
		t.Fatalf("burst not reported once: %v", bad)
	}
}

func TestCheckRatesCountsEveryStatus(t *testing.T) {
	// A retry after a 5xx or a reset still goes through the pacer: it counts.
	log := calls("m", 0, 100*time.Millisecond)
	log[0].Status = 503
	log[1].Status = 0
	if _, bad := CheckRates(log, map[string]float64{"m": 1}, 0); len(bad) == 0 {
		t.Fatal("faulted requests were not counted")
	}
}

func TestCheckRatesFractionalRate(t *testing.T) {
	// 1.5/min = one call per 40 s: two calls fit in a 60 s window, three do not.
	ok := calls("m", 0, 40*time.Second, 80*time.Second)
	if _, bad := CheckRates(ok, map[string]float64{"m": 1.5}, 0); len(bad) != 0 {
		t.Fatalf("1.5/min evenly spaced: %v", bad)
	}
	tooMany := calls("m", 0, 29*time.Second, 58*time.Second)
	if _, bad := CheckRates(tooMany, map[string]float64{"m": 1.5}, 0); !hasPrefix(bad, "m: 3 calls within") {
		t.Fatalf("3 calls in 58 s at 1.5/min: %v", bad)
	}
}

func TestCheckRetryAfter(t *testing.T) {
	spacing := map[string]time.Duration{"m": 100 * time.Millisecond}
	mk := func(next time.Duration, ra time.Duration, has bool) []Call {
		log := calls("m", 0, next)
		log[0].Status, log[0].RetryAfter, log[0].HasRetryAfter = 429, ra, has
		return log
	}
	if r := CheckRetryAfter(mk(3*time.Second, 2*time.Second, true), spacing); len(r.Violations) != 0 || r.WithRetryAfter != 1 || r.MinMargin != time.Second {
		t.Fatalf("honoured Retry-After: %+v", r)
	}
	if r := CheckRetryAfter(mk(1500*time.Millisecond, 2*time.Second, true), spacing); !hasPrefix(r.Violations, "m: 429 with Retry-After 2s") {
		t.Fatalf("early call after Retry-After 2s not reported: %+v", r)
	}
	// Without Retry-After: one spacing, at least 1 s.
	if r := CheckRetryAfter(mk(900*time.Millisecond, 0, false), spacing); !hasPrefix(r.Violations, "m: 429 without Retry-After") {
		t.Fatalf("early call after a bare 429 not reported: %+v", r)
	}
	if r := CheckRetryAfter(mk(1100*time.Millisecond, 0, false), spacing); len(r.Violations) != 0 || r.WithoutRetryAfter != 1 {
		t.Fatalf("bare 429 waited 1.1 s: %+v", r)
	}
	// A 429 no live client received is not held against the next process.
	lost := mk(100*time.Millisecond, 5*time.Second, true)
	lost[0].Lost = true
	if r := CheckRetryAfter(lost, spacing); len(r.Violations) != 0 || r.Lost != 1 {
		t.Fatalf("lost 429: %+v", r)
	}
}

func TestCheckRestarts(t *testing.T) {
	spacing := map[string]time.Duration{"auth.test": 500 * time.Millisecond, "other": time.Second}
	log := append(calls("auth.test", 0, 300*time.Millisecond, 900*time.Millisecond), calls("other", 0)...)
	// Restart at 200 ms: auth.test at 300 ms is only 300 ms after the one at 0.
	r := CheckRestarts(log, []time.Time{t0.Add(200 * time.Millisecond)}, spacing, 50*time.Millisecond)
	if r.Pairs != 1 || !hasPrefix(r.Violations, "auth.test: restart at") {
		t.Fatalf("early call after restart not reported: %+v", r)
	}
	// Restart at 600 ms: 300 ms → 900 ms is 600 ms ≥ 500 ms.
	r = CheckRestarts(log, []time.Time{t0.Add(600 * time.Millisecond)}, spacing, 0)
	if r.Pairs != 1 || len(r.Violations) != 0 || r.MinSlack != 100*time.Millisecond {
		t.Fatalf("restart honouring the spacing: %+v", r)
	}
}

func hasPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}
