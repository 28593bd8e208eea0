package slackapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"
)

// retryAfterMargin is added to every rate-limit wait: Slack's window edges are not
// documented (Slack's rate-limit docs), and arriving one second late costs nothing.
const retryAfterMargin = time.Second

// minRateLimitWait is the least a 429 without a usable Retry-After waits.
const minRateLimitWait = time.Second

// maxRetryAfter is the longest rate-limit wait honoured. Slack's Retry-After values are
// seconds to a minute (Slack's rate-limit docs); a longer one is read as this, so that
// one odd answer cannot stop a method for days. It also bounds a persisted gate: a
// NotBefore further ahead than this cannot come from a Retry-After (newPacer).
const maxRetryAfter = time.Hour

// rateLimit describes one rate-limit answer: how long after it arrived the method may
// be called again (before the margin), and where that number came from (for logs).
type rateLimit struct {
	wait   time.Duration
	source string
}

// asRateLimit reports whether err is one of the shapes in which slack-go v0.35 returns
// a rate-limit answer (slack-go v0.35), and how long to wait:
//
//   - *slack.RateLimitedError: HTTP 429 with an integer Retry-After;
//   - slack.StatusCodeError{Code: 429}: HTTP 429 without Retry-After;
//   - *strconv.NumError: HTTP 429 whose Retry-After is not an integer (slack-go returns
//     the parse error itself); we read the header from the capture and honour an
//     HTTP-date;
//   - slack.SlackErrorResponse{Err: "ratelimited"}: "ok": false with HTTP 200.
//
// Without a usable Retry-After the wait is one spacing interval of the method, at
// least minRateLimitWait.
func asRateLimit(err error, c *capture, spacing time.Duration) (rateLimit, bool) {
	fallback := rateLimit{wait: max(spacing, minRateLimitWait), source: "no usable Retry-After: one spacing interval"}
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return capped(rateLimit{wait: max(rl.RetryAfter, 0), source: "Retry-After"}), true
	}
	var sce slack.StatusCodeError
	if errors.As(err, &sce) && sce.Code == http.StatusTooManyRequests {
		if rl, ok := headerRateLimit(c); ok {
			return capped(rl), true
		}
		return fallback, true
	}
	var ne *strconv.NumError
	if errors.As(err, &ne) && (!c.got || c.status == http.StatusTooManyRequests) {
		if rl, ok := headerRateLimit(c); ok {
			return capped(rl), true
		}
		return fallback, true
	}
	var ser slack.SlackErrorResponse
	if errors.As(err, &ser) && ser.Err == "ratelimited" {
		if rl, ok := headerRateLimit(c); ok {
			return capped(rl), true
		}
		return fallback, true
	}
	return rateLimit{}, false
}

// headerRateLimit parses the captured Retry-After: delay-seconds or an HTTP-date
// (RFC 9110 §10.2.3), the latter measured from the response's Date header, else
// from when the response arrived.
func headerRateLimit(c *capture) (rateLimit, bool) {
	if !c.got {
		return rateLimit{}, false
	}
	v := strings.TrimSpace(c.header.Get("Retry-After"))
	if v == "" {
		return rateLimit{}, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
		return rateLimit{wait: time.Duration(n) * time.Second, source: "Retry-After"}, true
	}
	if t, err := http.ParseTime(v); err == nil {
		// Measure against the server's Date when it sent one, so our clock's skew
		// does not shorten the wait; else against our arrival time.
		base := c.arrived
		if d, err := http.ParseTime(c.header.Get("Date")); err == nil {
			base = d
		}
		return rateLimit{wait: max(t.Sub(base), 0), source: "Retry-After date"}, true
	}
	return rateLimit{}, false
}

// capped bounds rl's wait by maxRetryAfter.
func capped(rl rateLimit) rateLimit {
	if rl.wait > maxRetryAfter {
		rl.wait = maxRetryAfter
		rl.source += fmt.Sprintf(" (capped at %s)", maxRetryAfter)
	}
	return rl
}
