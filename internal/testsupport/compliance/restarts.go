package compliance

import (
	"fmt"
	"time"
)

// RestartReport is what CheckRestarts looked at.
type RestartReport struct {
	// Pairs counts (restart, method) pairs with a call on both sides; MinSlack is the
	// least by which such a pair cleared the method's spacing (gap − spacing).
	Pairs      int
	MinSlack   time.Duration
	Violations []string
}

// CheckRestarts checks that a restarted client does not call early: for each restart
// (the time the new process was started, after the old one died) and each method in
// spacing, the first call after it arrives at least one spacing minus jitter after
// the last call before it. The daemon persists each method's last call time for this
// (README, "How it works"); a fresh rate.Limiter alone would let the first call through at once.
func CheckRestarts(calls []Call, restarts []time.Time, spacing map[string]time.Duration, jitter time.Duration) RestartReport {
	var r RestartReport
	groups := byMethod(calls)
	first := true
	for _, at := range restarts {
		for _, m := range sortedKeys(spacing) {
			cs := groups[m]
			i := 0
			for i < len(cs) && cs[i].Time.Before(at) {
				i++
			}
			if i == 0 || i == len(cs) {
				continue
			}
			prev, next := cs[i-1], cs[i]
			r.Pairs++
			slack := next.Time.Sub(prev.Time) - spacing[m]
			if first || slack < r.MinSlack {
				r.MinSlack, first = slack, false
			}
			if slack < -jitter {
				r.Violations = append(r.Violations, fmt.Sprintf("%s: restart at %s, last call before it at %s, first after it at %s: %v early for the spacing %v",
					m, stamp(at), stamp(prev.Time), stamp(next.Time), -slack, spacing[m]))
			}
		}
	}
	return r
}
