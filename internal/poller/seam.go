package poller

import (
	"context"
	"errors"
	"fmt"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// gate is one stream's calls of its Slack method in a tick: the cap left, the calls
// made (and how many went to watched messages, for their guaranteed share), and why
// the stream stopped. Only its stream's goroutine uses it while the tick runs.
type gate struct {
	method string
	// capName is the budget key, for stop reasons ("budget:history_calls").
	capName string
	left    int // calls left this tick; < 0 means no cap (auth.test, conversations.info)
	calls   int
	watched int
	stop    string
}

// owesWatched reports whether the gate's next call is owed to the watched class: its
// watched calls are below share of its calls so far, counting the next.
func (g *gate) owesWatched(share float64) bool {
	return float64(g.watched) < share*float64(g.calls+1)
}

// outcome is what a Slack call came to, as the seam decided and applied it.
type outcome int

const (
	// done: the call succeeded; its answer is the caller's to apply.
	done outcome = iota
	// stopped: no call was made, and the stream may make no more this tick: its cap
	// is spent or the soft deadline passed. Not an error of the tick.
	stopped
	// fatal: the tick ends, with the error returned: shutdown, a rejected token, a
	// store that failed while the seam recorded a conversation's failure, or any
	// failure of a call the tick cannot go on without (auth.test).
	fatal
	// gone: Slack's final answer that the item the call reads is gone
	// (thread_not_found, message_not_found: rm.ClassItem).
	gone
	// failed: the conversation the call reads cannot be read (not_in_channel,
	// missing_scope, …: its status says why), or for a call that reads it whole, is
	// not read again this tick. Recorded and reported; it is no longer eligible.
	failed
	// skipped: the call failed and was reported; nothing is applied and a later
	// tick tries again.
	skipped
)

// errStop ends a stream for this tick (outcome stopped): it is not an error of the
// tick.
var errStop = errors.New("stream stopped")

// call describes a Slack call to the seam: what its failure means.
type call struct {
	// ch is the conversation the call reads, "" for none: a per-conversation error
	// (rm.ClassConversation) fails it for the tick and sets its status.
	ch string
	// whole marks a read of the conversation as such (its conversations.info, its
	// bulk window): any failure, transient ones too, fails the conversation for the
	// tick; only a per-conversation error changes its status.
	whole bool
	// item marks a read of one item (a thread, a message) that Slack may answer is
	// gone.
	item bool
	// essential marks a call the tick cannot go on without: any failure ends it.
	essential bool
	// what names the call in the report of its failure ("C1: re-reading … to …"),
	// the failure follows, then note ("(nothing written)"); an essential call's
	// error is what: the failure.
	what, note string
}

// do is the one seam through which the poller calls Slack. It checks the soft
// deadline (between calls, never during one: a Retry-After wait is part of the call it
// belongs to), takes one call of the gate's cap, counts the call, runs it and decides
// what its error means, applying what is the seam's to apply: a conversation's
// failure is recorded, a skipped call is reported. Callers switch on the outcome; the
// error is set only with fatal.
func (t *tick) do(g *gate, c call, fn func(context.Context) error) (outcome, error) {
	switch {
	case g.stop != "":
		return stopped, nil
	case t.now().After(t.deadline):
		g.stop = rm.StopDeadline
		return stopped, nil
	case g.left == 0:
		g.stop = "budget:" + g.capName
		return stopped, nil
	}
	if g.left > 0 {
		g.left--
	}
	g.calls++
	t.report.called(g.method)
	err := fn(t.ctx)
	if err == nil {
		return done, nil
	}
	if t.ctx.Err() != nil {
		return fatal, t.ctx.Err()
	}
	class := rm.ClassOf(err)
	switch {
	case class == rm.ClassToken:
		return fatal, fmt.Errorf("%w: %w (check slack.token / SLACK_BOT_TOKEN and that the app is still installed)", ErrTokenRejected, err)
	case c.essential:
		return fatal, fmt.Errorf("%s: %w", c.what, err)
	case c.item && class == rm.ClassItem:
		return gone, nil
	case c.ch != "" && (c.whole || class == rm.ClassConversation):
		if err := t.conversationFailed(c.ch, err); err != nil {
			return fatal, err
		}
		return failed, nil
	}
	t.report.skip("%s: %v%s", c.what, err, c.note)
	return skipped, nil
}

// stepErr is the error a stream's step returns for outcome o: errStop for stopped, err
// for fatal, else nil (the step goes on, or is done).
func stepErr(o outcome, err error) error {
	switch o {
	case stopped:
		return errStop
	case fatal:
		return err
	}
	return nil
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
