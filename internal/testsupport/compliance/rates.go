package compliance

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Window is the length of Slack's (and the fake's) sliding rate-limit window.
const Window = time.Minute

// MethodStats is what CheckRates measured for one method.
type MethodStats struct {
	Method string
	Calls  int
	// PerMinute is the configured rate; Allowed the most calls a client spaced at it
	// can make in one window (ceil(PerMinute)).
	PerMinute float64
	Allowed   int
	// MaxInWindow is the most calls that arrived within any (Window − jitter).
	MaxInWindow int
	// MinGap is the shortest time between two consecutive arrivals (0 with < 2 calls).
	MinGap time.Duration
}

func (s MethodStats) String() string {
	return fmt.Sprintf("%s: %d calls, max %d in a 60 s window (allowed %d at %g/min), min gap %v",
		s.Method, s.Calls, s.MaxInWindow, s.Allowed, s.PerMinute, s.MinGap.Round(time.Millisecond))
}

// CheckRates checks every method with a configured rate (requests per minute):
//
//   - no more than ceil(rate) calls within any sliding window of Window − jitter (a
//     client spaced at 60 s / rate can fit ceil(rate) sends in 60 s, and arrival
//     jitter up to jitter can squeeze them into no less than 60 s − jitter);
//   - calls evenly spaced (burst 1, README, "How it works"): consecutive arrivals at least one
//     spacing minus jitter apart.
//
// Every call counts, whatever its answer: the client passes its pacer before every
// attempt, retries and repeats after a 429 included, and Slack counts every request
// it receives. Methods without a rate are not checked (nor reported).
func CheckRates(calls []Call, perMinute map[string]float64, jitter time.Duration) ([]MethodStats, []string) {
	var stats []MethodStats
	var bad []string
	groups := byMethod(calls)
	for _, m := range sortedKeys(perMinute) {
		rate := perMinute[m]
		cs := groups[m]
		st := MethodStats{Method: m, Calls: len(cs), PerMinute: rate, Allowed: int(math.Ceil(rate))}
		spacing := Spacing(rate)
		win := Window - jitter
		first := 0
		for j := range cs {
			for cs[j].Time.Sub(cs[first].Time) >= win {
				first++
			}
			if n := j - first + 1; n > st.MaxInWindow {
				st.MaxInWindow = n
				if n == st.Allowed+1 {
					bad = append(bad, fmt.Sprintf("%s: %d calls within %v (%s … %s), over the configured %g/min",
						m, n, win, stamp(cs[first].Time), stamp(cs[j].Time), rate))
				}
			}
			if j == 0 {
				continue
			}
			gap := cs[j].Time.Sub(cs[j-1].Time)
			if j == 1 || gap < st.MinGap {
				st.MinGap = gap
			}
			if gap < spacing-jitter {
				bad = append(bad, fmt.Sprintf("%s: calls at %s and %s are %v apart, under the spacing %v (burst 1) minus jitter %v",
					m, stamp(cs[j-1].Time), stamp(cs[j].Time), gap, spacing, jitter))
			}
		}
		stats = append(stats, st)
	}
	return stats, bad
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// stamp renders an arrival time for a violation message.
func stamp(t time.Time) string { return t.Format("15:04:05.000000") }
