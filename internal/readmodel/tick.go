package readmodel

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Stop reasons of a tick (TickSummary.StopReason).
const (
	StopComplete = "complete"
	StopDeadline = "deadline"
	StopShutdown = "shutdown"
	StopError    = "error"
)

// errStopTick ends the current phase: its share of the soft deadline passed (and with
// the last share, the tick).
var errStopTick = errors.New("tick stopped")

// tick is the state of one pass: what is left of the budget, what was read.
type tick struct {
	p        *Poller
	ctx      context.Context
	start    time.Time
	phaseEnd time.Time // the current phase's share of the soft deadline
	left     Budget
	sum      TickSummary
	stop     string // first stop reason hit, "" while none

	// Phase 1 results: the threads to sync, in the order their parents were read.
	threadQueue []threadCandidate
	queued      map[Ref]bool
	// Conversations that may be read this tick (not archived, not waiting on an error).
	eligible map[string]bool
	// Users whose users.info failed this tick: retried on a later tick, not by the
	// users pass after the tail.
	failedUsers map[string]bool
}

type threadCandidate struct {
	Ref
	latestReply TS // the parent's latest_reply at the read that queued it
}

func newTick(p *Poller, ctx context.Context) *tick {
	now := p.cfg.Now()
	return &tick{
		p: p, ctx: ctx, start: now,
		left:        p.cfg.Budget,
		sum:         TickSummary{Started: now, Calls: map[string]int{}},
		queued:      map[Ref]bool{},
		eligible:    map[string]bool{},
		failedUsers: map[string]bool{},
	}
}

func (t *tick) now() time.Time { return t.p.cfg.Now() }

// noteStop records the first reason the tick (or one kind of call) stopped.
func (t *tick) noteStop(reason string) {
	if t.stop == "" {
		t.stop = reason
	}
}

// pastDeadline is checked between calls, never during one: a Retry-After wait is part
// of the call it belongs to.
func (t *tick) pastDeadline() bool {
	if t.now().After(t.phaseEnd) {
		t.noteStop(StopDeadline)
		return true
	}
	return false
}

// take spends one call of a budget kind, or reports the cap as reached.
func (t *tick) take(cap *int, name string) bool {
	if *cap <= 0 {
		t.noteStop("budget:" + name)
		return false
	}
	*cap--
	return true
}

// message reads the stored message ref in a read transaction of its own.
func (t *tick) message(ref Ref) (Message, bool, error) {
	var m Message
	var ok bool
	err := t.p.store.View(func(tx Tx) error {
		var err error
		m, ok, err = tx.Message(ref.Channel, ref.TS)
		return err
	})
	return m, ok, storeErr(err)
}

// call counts a started call of method, for the summary.
func (t *tick) call(method string) { t.sum.Calls[method]++ }

func (t *tick) skip(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.sum.Errors = append(t.sum.Errors, msg)
	t.p.log.Warn("skipped", "what", msg)
}

// phase is one step of a tick with the share of the soft deadline it may run to.
type phase struct {
	run   func() error
	share float64
}

// run is the tick body. The bulk window may start calls until half the soft deadline
// and thread sync until three quarters, so that users and the tail always get their
// turn: at 1 request per minute, six conversations' bulk pages alone outlast a
// 4-minute deadline, and a tick that spent it all on phase 1 would never sync a thread
// or rotate the tail (the starvation the convergence simulation found). A phase that
// finds its share spent returns errStopTick and the next phase starts; the last share
// ends the tick. Users are resolved again after the tail, within the same
// users_info_calls cap, so that the users its reads name get their labels in this
// tick: a `slackpoll once` has no next tick to wait for.
func (t *tick) run() error {
	phases := []phase{
		{t.authenticate, 1}, {t.discover, 1}, {t.refreshConversations, 1},
		{t.bulkWindow, 0.5}, {t.syncThreads, 0.75}, {t.resolveUsers, 1}, {t.tail, 1},
		{t.resolveUsers, 1},
	}
	for _, ph := range phases {
		t.phaseEnd = t.start.Add(time.Duration(float64(t.p.cfg.SoftDeadline) * ph.share))
		if err := ph.run(); err != nil {
			if !errors.Is(err, errStopTick) {
				return err
			}
			if ph.share >= 1 {
				return nil
			}
		}
	}
	return nil
}

func (t *tick) finish(err error) TickSummary {
	t.sum.Finished = t.now()
	switch {
	case err != nil && errors.Is(err, context.Canceled):
		t.sum.StopReason = StopShutdown
	case err != nil:
		t.sum.StopReason = StopError
		t.sum.Errors = append(t.sum.Errors, err.Error())
	case t.stop != "":
		t.sum.StopReason = t.stop
	default:
		t.sum.StopReason = StopComplete
	}
	t.estimateRotation()
	return t.sum
}

// rotationWindow is how many recent ticks the tail throughput is averaged over.
const rotationWindow = 16

// tailSample is one tick's tail throughput: reads over the time since the previous
// tick ended (the tick itself plus the wait before it, pacing included).
type tailSample struct {
	reads int
	span  time.Duration
}

// estimateRotation sets Tracked and RotationPeriod: the time the tail rotation takes
// to re-read every tracked message at the tail throughput of the last ticks, reads
// per unit of wall time including the pauses between ticks. A single tick is a poor
// estimate at 1 request per minute: the number of reads before the soft deadline and
// the wait for the next call vary from tick to tick. 0 means unknown (no tail read in
// the window).
func (t *tick) estimateRotation() {
	tracked := 0
	_ = t.p.store.View(func(tx Tx) error {
		return tx.Conversations(func(c Conversation) error {
			n, err := tx.Counts(c.ID)
			tracked += n.Tracked
			return err
		})
	})
	t.sum.Tracked = tracked
	since := t.sum.Started
	if !t.p.lastFinished.IsZero() {
		since = t.p.lastFinished
	}
	t.p.lastFinished = t.sum.Finished
	// The next tick starts no sooner than one interval after this one did.
	span := max(t.sum.Finished.Sub(since), t.p.cfg.Interval)
	t.p.tailSamples = append(t.p.tailSamples, tailSample{t.sum.TailRead, span})
	if len(t.p.tailSamples) > rotationWindow {
		t.p.tailSamples = t.p.tailSamples[1:]
	}
	var reads int
	span = 0
	for _, s := range t.p.tailSamples {
		reads += s.reads
		span += s.span
	}
	if reads == 0 || span <= 0 {
		return
	}
	t.sum.RotationPeriod = time.Duration(float64(span) * float64(tracked) / float64(reads)).Round(time.Second)
}

// fatal says whether a call's error ends the tick: shutdown (ctx cancelled) and a
// rejected token do; anything else is recorded by the caller and the sweep goes on.
func (t *tick) fatal(err error) error {
	if t.ctx.Err() != nil {
		return t.ctx.Err()
	}
	if ClassOf(err) == ClassToken {
		return fmt.Errorf("%w: %w (check slack.token / SLACK_BOT_TOKEN and that the app is still installed)", ErrTokenRejected, err)
	}
	return nil
}
