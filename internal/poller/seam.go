package poller

import (
	"errors"
	"fmt"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// stream is the calls of one Slack method within a tick: its cap, what it spent, and
// why it stopped. Each method's calls run in a stream of their own, concurrently with
// the others, so that a method's limiter never waits behind another's.
type stream struct {
	method string
	// capName is the budget key, for stop reasons ("budget:history_calls").
	capName string
	left    int // calls left this tick; < 0 means no cap (auth.test, conversations.info)
	calls   int
	// watched counts the calls spent on watched messages, for their guaranteed share.
	watched int
	stop    string
}

// errStreamStop ends a stream for this tick: its cap is spent or the soft deadline
// passed. It is not an error of the tick.
var errStreamStop = errors.New("stream stopped")

// errFatal marks an error that ends the whole tick: shutdown or a rejected token.
type errFatal struct{ err error }

func (e errFatal) Error() string { return e.err.Error() }
func (e errFatal) Unwrap() error { return e.err }

// do is the one seam through which the poller calls Slack: it checks the soft deadline
// (between calls, never during one: a Retry-After wait is part of the call it belongs
// to), takes one call of the stream's cap, counts the call, runs it, and classifies its
// error. It returns errStreamStop when the stream may not call any more this tick, an
// errFatal when the tick must end (shutdown, a rejected token), else the call's own
// error (an *APIError, or nil) for the caller to apply.
func (t *tick) do(s *stream, call func() error) error {
	t.mu.Lock()
	switch {
	case s.stop != "":
		t.mu.Unlock()
		return errStreamStop
	case t.now().After(t.deadline):
		s.stop = rm.StopDeadline
		t.mu.Unlock()
		return errStreamStop
	case s.left == 0:
		s.stop = "budget:" + s.capName
		t.mu.Unlock()
		return errStreamStop
	}
	if s.left > 0 {
		s.left--
	}
	s.calls++
	t.sum.Calls[s.method]++
	t.mu.Unlock()
	err := call()
	if err == nil {
		return nil
	}
	if t.ctx.Err() != nil {
		return errFatal{t.ctx.Err()}
	}
	if rm.ClassOf(err) == rm.ClassToken {
		return errFatal{fmt.Errorf("%w: %w (check slack.token / SLACK_BOT_TOKEN and that the app is still installed)", ErrTokenRejected, err)}
	}
	return err
}

// readAt returns the time a page's messages are read as of: when its request went out
// (Page.SentAt: after pacing and any Retry-After wait, which take up to a minute at
// non_marketplace rates), or started, the time before the call, when the source does
// not say or its clock disagrees with ours (SentAt outside [started, now]). Never a
// time after the request: a change made after it must look newer than the read.
func (t *tick) readAt(started time.Time, page *rm.Page) time.Time {
	if s := page.SentAt; !s.IsZero() && !s.Before(started) && !s.After(t.now()) {
		return s
	}
	return started
}

// ends reports whether err from do (or from a step built on it) ends the stream.
func ends(err error) bool {
	var f errFatal
	return errors.Is(err, errStreamStop) || errors.As(err, &f) || errors.Is(err, rm.ErrStore)
}

// spend notes a call made for a watched message.
func (t *tick) spendWatched(s *stream) {
	t.mu.Lock()
	s.watched++
	t.mu.Unlock()
}

// owesWatched reports whether the stream's next call is owed to the watched class: its
// watched calls are below the guaranteed share of its calls so far, counting the next.
func (t *tick) owesWatched(s *stream) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return float64(s.watched) < t.p.cfg.Tracking.WatchedShare*float64(s.calls+1)
}
