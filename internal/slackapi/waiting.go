package slackapi

import (
	"sync"
	"time"
)

// Wait reasons reported by Client.Waiting.
const (
	WaitRate       = "rate limit"  // the method's even spacing (or the last process's last call)
	WaitRetryAfter = "Retry-After" // a 429's Retry-After
)

// waitState is what a pacer is waiting for right now, for the progress log: a method
// at 1 request a minute may wait most of a minute before each call.
type waitState struct {
	mu         sync.Mutex
	until      time.Time // zero while not waiting
	why        string
	retryAfter bool // notBefore was last set by a 429's Retry-After
}

func (w *waitState) set(until time.Time, why string) {
	w.mu.Lock()
	w.until, w.why = until, why
	w.mu.Unlock()
}

func (w *waitState) clear() { w.set(time.Time{}, "") }

func (w *waitState) rateLimited() {
	w.mu.Lock()
	w.retryAfter = true
	w.mu.Unlock()
}

// gateReason is why a wait for the gate happens: a Retry-After (when the gate is
// notBefore, last set by a 429), or the spacing after the last call.
func (w *waitState) gateReason(atNotBefore bool) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.retryAfter && atNotBefore {
		return WaitRetryAfter
	}
	return WaitRate
}

// Waiting reports whether a call of method is waiting before its HTTP attempt, until
// when (wall clock) and why (WaitRate, WaitRetryAfter). It implements
// poller.WaitReporter, for the poller's progress log.
func (c *Client) Waiting(method string) (until time.Time, why string, ok bool) {
	p := c.pacers[method]
	if p == nil {
		return time.Time{}, "", false
	}
	p.wait.mu.Lock()
	defer p.wait.mu.Unlock()
	if p.wait.until.IsZero() {
		return time.Time{}, "", false
	}
	return p.wait.until, p.wait.why, true
}
