package compliance

import (
	"net/http"
	"time"

	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// Call is one request a Slack client made, as the server saw it.
type Call struct {
	Method string    // "conversations.history"
	Time   time.Time // arrival at the server
	// Status is the HTTP status answered; 0 when none was (connection reset, or the
	// request was abandoned during a Slow fault).
	Status int
	// RetryAfter is the Retry-After of a 429 that carried one (HasRetryAfter).
	RetryAfter    time.Duration
	HasRetryAfter bool
	// Cursor is the request's cursor parameter ("" for a first page).
	Cursor string
	// Lost marks a 429 that no live client acted on: the process was killed after the
	// server answered and before it persisted the wait. Only a harness that kills
	// processes knows this (it compares the store's pacing state with the log), and
	// CheckRetryAfter does not hold anyone to a Retry-After that was never received.
	Lost bool
}

// RateLimited reports whether c was answered 429.
func (c *Call) RateLimited() bool { return c.Status == http.StatusTooManyRequests }

// FromFake converts the fake Slack's request log. Every logged request counts — an
// injected fault is still a request the client sent through its pacer, and Slack
// counts every request it receives. The fake's log does not keep the Retry-After
// header, so its 429s come out without one and CheckRetryAfter can then only check
// the minimum wait of a 429 (one spacing, at least 1 s); use a Recorder to check the
// Retry-After values themselves.
func FromFake(reqs []slackfake.Request) []Call {
	out := make([]Call, len(reqs))
	for i, r := range reqs {
		out[i] = Call{Method: r.Method, Time: r.Time, Status: r.Status, Cursor: r.Params.Get("cursor")}
	}
	return out
}

// byMethod splits calls by method, keeping the order (which is arrival order for
// both sources).
func byMethod(calls []Call) map[string][]Call {
	out := map[string][]Call{}
	for _, c := range calls {
		out[c.Method] = append(out[c.Method], c)
	}
	return out
}

// Spacing returns the pacer spacing of a rate in requests per minute, the way the
// client computes it (time.Minute / perMinute).
func Spacing(perMinute float64) time.Duration {
	if perMinute <= 0 {
		return 0
	}
	return time.Duration(float64(time.Minute) / perMinute)
}
