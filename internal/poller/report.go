package poller

import (
	"fmt"
	"log/slog"
	"maps"
	"sync"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// report is the summary a tick builds as its streams go: the calls per method, what
// was skipped and why, what was written. Safe for concurrent use while the tick runs;
// its end reads sum alone.
type report struct {
	mu  sync.Mutex
	sum rm.TickSummary
	log *slog.Logger
}

// called counts a call of method.
func (r *report) called(method string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sum.Calls[method]++
}

// calls returns the calls so far per method.
func (r *report) calls() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.sum.Calls)
}

// skip reports something the tick skipped, and why: it goes to the summary's errors
// and to the log.
func (r *report) skip(format string, args ...any) { r.warn("skipped", format, args...) }

// flag reports odd data from Slack that was stored in one deterministic way (see
// tick.vetPage): in the summary's errors, as a skip is, and in the log.
func (r *report) flag(format string, args ...any) {
	r.warn("odd data from Slack, stored one way", format, args...)
}

// warn adds a message to the summary's errors and logs it as a warning under title.
func (r *report) warn(title, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.sum.Errors = append(r.sum.Errors, msg)
	r.mu.Unlock()
	r.log.Warn(title, "what", msg)
}

// add applies fn to the summary: counts of what was written and read.
func (r *report) add(fn func(s *rm.TickSummary)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(&r.sum)
}
