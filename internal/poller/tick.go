package poller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// tick is one bounded pass: the setup calls in turn, then its streams at once. What it
// holds is shared by the streams; each stream keeps its own state itself.
type tick struct {
	p        *Poller
	no       int // the process's tick number (memory.tickNo when it started)
	ctx      context.Context
	start    time.Time
	deadline time.Time // the soft deadline: no call starts after it

	// streams are the tick's streams, one per Slack method its budget caps.
	streams []stream
	// convs are the conversations the tick may read; work is what its streams hand
	// each other; report is the summary it builds.
	convs  *eligible
	work   *workQueue
	report *report
	// watched is the watched set as of the tick's start; watchedThreads the parents
	// whose thread holds a watched message (a watched parent, or a watched reply's).
	// Set up before the streams start, read-only after.
	watched, watchedThreads map[rm.Ref]bool
}

// stream is the calls of one Slack method in a tick, and the state they need: it runs
// concurrently with the others, so that a method's limiter never waits behind
// another's, until nothing is due, its cap is spent or the soft deadline passes. Only
// its own goroutine touches its state; what it hands another stream goes through the
// tick's workQueue. A new Slack method the tick spends calls on is a new stream,
// listed in newTick.
type stream interface {
	// gate is its method's calls this tick.
	gate() *gate
	// enabled reports whether it runs this tick (setup is done when it is asked).
	enabled() bool
	// run makes its calls; an error other than errStop ends the tick.
	run() error
	// tally adds what it read this tick to s, for the staleness estimates.
	tally(s *rotationSample)
}

func newTick(p *Poller, ctx context.Context) *tick {
	now := p.cfg.Now()
	t := &tick{
		p: p, no: p.mem.tickNo, ctx: ctx, start: now, deadline: now.Add(p.cfg.SoftDeadline),
		convs:          &eligible{ids: map[string]bool{}},
		report:         &report{sum: rm.TickSummary{Started: now, Calls: map[string]int{}}, log: p.log},
		watched:        map[rm.Ref]bool{},
		watchedThreads: map[rm.Ref]bool{},
	}
	t.work = newWorkQueue(&p.mem, t.over)
	p.mem.carried = nil
	b := p.cfg.Budget
	t.streams = []stream{
		newHistoryStream(t, b.HistoryCalls),
		newRepliesStream(t, b.RepliesCalls),
		newUsersStream(t, b.UsersInfoCalls),
		newReactionsStream(t, b.ReactionsCalls),
	}
	return t
}

func (t *tick) now() time.Time { return t.p.cfg.Now() }

// over reports whether the tick is over: shut down, or past its soft deadline.
func (t *tick) over() bool { return t.ctx.Err() != nil || t.now().After(t.deadline) }

// slackNow is Slack's time by our clock and the last measured skew, when the skew is
// beyond ClockSkewTolerance; else our clock. It places the bulk window: with our clock
// days ahead, a window ending at our now would start after Slack's newest message.
func (t *tick) slackNow() time.Time { return rm.SlackTime(t.now(), t.p.cfg.ClockSkew()) }

// run is the tick body: the setup calls in turn (each needs the one before: the
// identity's scopes decide discovery, info decides which conversations are read),
// then the enabled streams at once until each has nothing left to do, spent its cap,
// or met the soft deadline. The first error that ends the tick (shutdown, a rejected
// token, the store) is returned once every stream has stopped.
func (t *tick) run() error {
	s := newSetup(t)
	for _, step := range []func() error{s.authenticate, s.discover, s.refreshConversations, s.loadWatched} {
		if err := step(); err != nil {
			if errors.Is(err, errStop) {
				return nil
			}
			return err
		}
	}
	var streams []stream
	for _, s := range t.streams {
		if s.enabled() {
			streams = append(streams, s)
		}
	}
	t.work.idle.start(len(streams))
	errs := make([]error, len(streams))
	var wg sync.WaitGroup
	for i, s := range streams {
		wg.Go(func() {
			errs[i] = s.run()
			t.work.idle.streamDone()
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, errStop) {
			return err
		}
	}
	return nil
}

// reactionsUsable reports whether the tick may call reactions.get: the token has
// reactions:read (auth.test's X-OAuth-Scopes) and the budget allows it.
func (t *tick) reactionsUsable() bool {
	id := t.p.mem.identity
	return id != nil && slices.Contains(id.Scopes, rm.ScopeReactionsRead) && t.p.cfg.Budget.ReactionsCalls > 0
}

// gateOf returns the gate of the stream calling method.
func (t *tick) gateOf(method string) *gate {
	for _, s := range t.streams {
		if g := s.gate(); g.method == method {
			return g
		}
	}
	return nil
}

// finish completes the summary once every stream has stopped: the stop reason, what
// was left undone, the staleness estimates.
func (t *tick) finish(err error) rm.TickSummary {
	sum := &t.report.sum
	sum.Finished = t.now()
	threads, locate := t.work.leftover()
	t.p.mem.carried = append(t.p.mem.carried, threads...)
	why := "the soft deadline passed"
	if g := t.gateOf(rm.MethodReplies); g.stop == "budget:"+g.capName {
		why = g.capName + " is spent this tick"
	}
	for _, ref := range locate {
		sum.Errors = append(sum.Errors, fmt.Sprintf("%s/%s: not in conversations.history, so it may be a thread reply; finding its thread needs a conversations.replies call and %s", ref.Channel, ref.TS, why))
	}
	stop := ""
	for _, s := range t.streams {
		g := s.gate()
		if g.stop == rm.StopDeadline {
			stop = rm.StopDeadline
			break
		}
		if stop == "" {
			stop = g.stop
		}
	}
	switch {
	case err != nil && errors.Is(err, context.Canceled):
		sum.StopReason = rm.StopShutdown
	case err != nil:
		sum.StopReason = rm.StopError
		sum.Errors = append(sum.Errors, err.Error())
	case stop != "":
		sum.StopReason = stop
	default:
		sum.StopReason = rm.StopComplete
	}
	var read rotationSample
	for _, s := range t.streams {
		s.tally(&read)
	}
	t.p.mem.estimates.estimate(t, read)
	return *sum
}
