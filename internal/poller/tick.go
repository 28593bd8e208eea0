package poller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// tick is the state of one pass. Its streams run concurrently: everything below mu is
// shared between them and guarded by it; cond wakes a stream waiting for work another
// stream produces (a thread queued by a history read, a user to resolve).
type tick struct {
	p        *Poller
	no       int // the process's tick number (Poller.tickNo when it started)
	ctx      context.Context
	start    time.Time
	deadline time.Time // the soft deadline: no call starts after it

	// The streams, one per method. The setup methods (auth.test, users.conversations,
	// conversations.info) are called in turn before the others start, uncapped.
	setup                              map[string]*stream
	history, replies, users, reactions *stream

	mu   sync.Mutex
	cond *sync.Cond
	sum  rm.TickSummary
	// Conversations that may be read this tick (not archived, not waiting on an error).
	eligible map[string]bool
	// headDone holds the conversations whose head was read this tick.
	headDone map[string]bool
	// threadQueue holds the threads to sync because a read saw their latest_reply
	// move (or stored replies only a thread read can confirm), oldest first.
	threadQueue []threadCandidate
	queued      map[rm.Ref]bool
	// locateQueue holds never-read tracked messages a complete history read missed.
	locateQueue []rm.Ref
	// tried holds the tail entries a stream picked this tick, read or not: an entry
	// whose read advanced nothing (undecodable, failing) is not picked again.
	tried, triedThreads map[rm.Ref]bool
	// watched is the watched set as of the tick's start; watchedThreads the parents
	// whose thread holds a watched message (a watched parent, or a watched reply's).
	watched, watchedThreads map[rm.Ref]bool
	// failedUsers are users whose users.info failed this tick: retried on a later tick.
	failedUsers map[string]bool
	// active counts the streams running and not waiting for work; waiting holds the
	// work tests of the streams waiting. Once no stream is active and none has work,
	// no stream can produce work for another, and the waiting ones stop.
	active  int
	waiting map[*func() bool]bool
	// Throughput of this tick, for the staleness estimates.
	reads, watchedReads, threadReads int
	// rangeCalls and threadCalls are the history calls of tail ranges and the
	// replies calls of thread reads this tick: the rotation's share of each method.
	rangeCalls, threadCalls int
	// headCalls are the history calls of head reads this tick.
	headCalls int
}

type threadCandidate struct {
	rm.Ref
	latestReply rm.TS // the parent's latest_reply at the read that queued it
	// first is the parent as a read saw it when the store did not hold it read: it
	// is stored with its thread, in one transaction, so that a parent never stands
	// without its replies (deferNewParents).
	first *rm.Message
	// tries counts the thread reads of first that failed.
	tries int
}

func newTick(p *Poller, ctx context.Context) *tick {
	now := p.cfg.Now()
	b := p.cfg.Budget
	t := &tick{
		p: p, ctx: ctx, start: now, deadline: now.Add(p.cfg.SoftDeadline),
		setup:          map[string]*stream{},
		history:        &stream{method: rm.MethodHistory, capName: "history_calls", left: b.HistoryCalls},
		replies:        &stream{method: rm.MethodReplies, capName: "replies_calls", left: b.RepliesCalls},
		users:          &stream{method: rm.MethodUsersInfo, capName: "users_info_calls", left: b.UsersInfoCalls},
		reactions:      &stream{method: rm.MethodReactionsGet, capName: "reactions_calls", left: b.ReactionsCalls},
		sum:            rm.TickSummary{Started: now, Calls: map[string]int{}},
		eligible:       map[string]bool{},
		headDone:       map[string]bool{},
		queued:         map[rm.Ref]bool{},
		tried:          map[rm.Ref]bool{},
		triedThreads:   map[rm.Ref]bool{},
		watched:        map[rm.Ref]bool{},
		watchedThreads: map[rm.Ref]bool{},
		failedUsers:    map[string]bool{},
	}
	t.cond = sync.NewCond(&t.mu)
	for _, c := range p.carried {
		if !t.queued[c.Ref] {
			t.queued[c.Ref] = true
			t.threadQueue = append(t.threadQueue, c)
		}
	}
	p.carried = nil
	return t
}

func (t *tick) now() time.Time { return t.p.cfg.Now() }

// slackNow is Slack's time by our clock and the last measured skew, when the skew is
// beyond ClockSkewTolerance; else our clock. It places the bulk window: with our clock
// days ahead, a window ending at our now would start after Slack's newest message.
func (t *tick) slackNow() time.Time { return rm.SlackTime(t.now(), t.p.cfg.ClockSkew()) }

// setupStream returns the uncapped stream of a setup method.
func (t *tick) setupStream(method string) *stream {
	s, ok := t.setup[method]
	if !ok {
		s = &stream{method: method, left: -1}
		t.setup[method] = s
	}
	return s
}

func (t *tick) skip(format string, args ...any) { t.report("skipped", format, args...) }

// report adds a message to the tick's errors and logs it as a warning under title.
func (t *tick) report(title, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.mu.Lock()
	t.sum.Errors = append(t.sum.Errors, msg)
	t.mu.Unlock()
	t.p.log.Warn(title, "what", msg)
}

// isEligible reports whether ch may be read this tick.
func (t *tick) isEligible(ch string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.eligible[ch]
}

// run is the tick body: the setup calls in turn (each needs the one before: the
// identity's scopes decide discovery, info decides which conversations are read),
// then the method streams at once until each has nothing left to do, spent its cap,
// or met the soft deadline. The first error that ends the tick (shutdown, a rejected
// token, the store) is returned once every stream has stopped.
func (t *tick) run() error {
	for _, step := range []func() error{t.authenticate, t.discover, t.refreshConversations, t.loadWatched} {
		if err := step(); err != nil {
			if errors.Is(err, errStreamStop) {
				return nil
			}
			return unfatal(err)
		}
	}
	streams := []func() error{t.runHistory, t.runReplies, t.runUsers}
	if t.reactionsUsable() {
		streams = append(streams, t.runReactions)
	}
	t.active = len(streams)
	errs := make([]error, len(streams))
	var wg sync.WaitGroup
	for i, run := range streams {
		wg.Go(func() {
			errs[i] = run()
			t.mu.Lock()
			t.active--
			t.cond.Broadcast()
			t.mu.Unlock()
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, errStreamStop) {
			return unfatal(err)
		}
	}
	return nil
}

// unfatal unwraps errFatal for the caller of Tick.
func unfatal(err error) error {
	var f errFatal
	if errors.As(err, &f) {
		return f.err
	}
	return err
}

// waitForWork blocks until ready (called with mu held) reports work, and returns
// true; or returns false once no stream is left that could produce any (every other
// one stopped, or waiting with no work of its own), or the tick is over. A stream
// woken with work counts as active only once it runs again, so "no stream active" is
// not enough: the users stream stopped while the replies stream, woken with a
// thread whose authors it was about to note, had not run yet.
func (t *tick) waitForWork(ready func() bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.active--
	t.cond.Broadcast()
	defer func() { t.active++ }()
	if t.waiting == nil {
		t.waiting = map[*func() bool]bool{}
	}
	t.waiting[&ready] = true
	defer delete(t.waiting, &ready)
	for {
		if ready() {
			return true
		}
		if t.ctx.Err() != nil || t.now().After(t.deadline) || t.active == 0 && !t.otherHasWorkLocked(&ready) {
			return false
		}
		t.cond.Wait()
	}
}

// otherHasWorkLocked reports whether a waiting stream other than self has work: it
// was woken and runs next. Called with mu held.
func (t *tick) otherHasWorkLocked(self *func() bool) bool {
	for other := range t.waiting {
		if other != self && (*other)() {
			return true
		}
	}
	return false
}

// wake tells waiting streams that work was queued; called with mu held.
func (t *tick) wake() { t.cond.Broadcast() }

func (t *tick) finish(err error) rm.TickSummary {
	t.sum.Finished = t.now()
	t.p.carried = append(t.p.carried, t.threadQueue...)
	why := "the soft deadline passed"
	if t.replies.stop == "budget:replies_calls" {
		why = "replies_calls is spent this tick"
	}
	for _, ref := range t.locateQueue {
		t.sum.Errors = append(t.sum.Errors, fmt.Sprintf("%s/%s: not in conversations.history, so it may be a thread reply; finding its thread needs a conversations.replies call and %s", ref.Channel, ref.TS, why))
	}
	stop := ""
	for _, s := range []*stream{t.history, t.replies, t.users, t.reactions} {
		if s.stop == rm.StopDeadline {
			stop = rm.StopDeadline
			break
		}
		if stop == "" {
			stop = s.stop
		}
	}
	switch {
	case err != nil && errors.Is(err, context.Canceled):
		t.sum.StopReason = rm.StopShutdown
	case err != nil:
		t.sum.StopReason = rm.StopError
		t.sum.Errors = append(t.sum.Errors, err.Error())
	case stop != "":
		t.sum.StopReason = stop
	default:
		t.sum.StopReason = rm.StopComplete
	}
	t.estimateStaleness()
	return t.sum
}
