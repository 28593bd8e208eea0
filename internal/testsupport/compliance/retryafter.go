package compliance

import (
	"fmt"
	"time"
)

// minRateLimitWait is the least a 429 without Retry-After must be waited out
// (README, "How it works": one spacing interval of the method, at least 1 s).
const minRateLimitWait = time.Second

// RetryAfterReport is what CheckRetryAfter looked at.
type RetryAfterReport struct {
	// WithRetryAfter and WithoutRetryAfter count the 429s checked; Lost those skipped
	// because no live client received them (Call.Lost).
	WithRetryAfter, WithoutRetryAfter, Lost int
	// MinMargin is the least time by which a call after a 429 cleared its wait.
	MinMargin  time.Duration
	Violations []string
}

// CheckRetryAfter checks that after a 429 for a method, answered at t, no call of that
// method arrived in (t, t + wait), where wait is the Retry-After given or, without
// one, the method's spacing (at least 1 s). spacing maps methods to their spacing
// (Spacing of the configured rate). The 429's arrival time stands in for when the
// client received it, which is later, so the check never asks for more than the
// client owed. No jitter applies: waits are measured from when the answer arrived.
func CheckRetryAfter(calls []Call, spacing map[string]time.Duration) RetryAfterReport {
	var r RetryAfterReport
	first := true
	groups := byMethod(calls)
	for _, m := range sortedKeys(groups) {
		cs := groups[m]
		for i, c := range cs {
			if !c.RateLimited() {
				continue
			}
			if c.Lost {
				r.Lost++
				continue
			}
			wait := max(spacing[c.Method], minRateLimitWait)
			what := "429 without Retry-After"
			if c.HasRetryAfter {
				wait, what = c.RetryAfter, fmt.Sprintf("429 with Retry-After %v", c.RetryAfter)
				r.WithRetryAfter++
			} else {
				r.WithoutRetryAfter++
			}
			if i+1 == len(cs) {
				continue
			}
			next := cs[i+1]
			margin := next.Time.Sub(c.Time.Add(wait))
			if first || margin < r.MinMargin {
				r.MinMargin, first = margin, false
			}
			if margin < 0 {
				r.Violations = append(r.Violations, fmt.Sprintf("%s: %s at %s, next call at %s, %v early",
					c.Method, what, stamp(c.Time), stamp(next.Time), -margin))
			}
		}
	}
	return r
}
