package slackapi

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/slackpoll/slackpoll/internal/ctxsleep"
	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// PacingStore persists the pacing state of each Slack method, so that a restarted
// daemon does not call early (README, "Rate profiles").
// LoadMethodState returns ok == false for a method never saved. Implementations must
// be goroutine-safe; SaveMethodState is called before every HTTP attempt and after
// every 429.
type PacingStore interface {
	LoadMethodState(method string) (readmodel.MethodState, bool, error)
	SaveMethodState(method string, s readmodel.MethodState) error
}

// Pacing margin. Slack counts a method's calls in a window of a minute, measured
// where they arrive; our spacing is measured where they leave. Paced exactly at the
// rate, a call that leaves on time but arrives a few milliseconds sooner after its
// predecessor than that one did (a reused connection after a new one, a scheduler
// hiccup) is one too many in the window: a 429, and at 1 request a minute a whole
// minute lost (the 429 counts as a call). So every method is paced a margin under its
// rate: a share of its spacing, which is the same slack per window whatever the rate
// (2% is 1.2 s in every minute). Each 429 doubles the method's margin, up to
// marginCeil; each answered call takes back 1/marginDecay of what it holds above
// marginFloor, so a one-off 429 costs a few percent for a few dozen calls.
const (
	marginFloor = 0.02
	marginCeil  = 0.10
	marginDecay = 30
)

// pacer gates the calls of one Slack method: a notBefore time (Retry-After, or the
// previous process's last call + spacing), the last call + spacing with its margin,
// and a burst-1 rate.Limiter at the configured rate, the ceiling. x/time/rate has no
// "pause until t" API (x/time/rate docs), hence the separate gate.
type pacer struct {
	method  string
	spacing time.Duration // time.Minute / requests per minute: Slack's allowance
	lim     *rate.Limiter
	store   PacingStore
	log     *slog.Logger
	// skew is Slack's clock minus ours and whether an answer has told it yet.
	skew func() (time.Duration, bool)
	// sleep waits for the limiter's reservation (ctxsleep.Sleep; tests stand in a
	// process stopped meanwhile).
	sleep func(ctx context.Context, d time.Duration) error

	mu        sync.Mutex
	notBefore time.Time
	lastCall  time.Time
	// margin is the share of spacing added between two calls (see marginFloor).
	margin float64
	// slackLastCall is lastCall by Slack's clock (zero while the skew is unknown).
	slackLastCall time.Time
	// slackNext is the previous process's last call + spacing by Slack's clock: until
	// this process has made a call of its own, no call before it (see gate).
	slackNext time.Time
	wait      waitState // for Client.Waiting
}

// newPacer builds the pacer for method at perMinute requests per minute and restores
// its persisted state: no call before state.LastCall + spacing nor state.NotBefore,
// nor, once skew knows Slack's clock, before state.SlackLastCall + spacing by it.
func newPacer(method string, perMinute float64, store PacingStore, log *slog.Logger, skew func() (time.Duration, bool)) (*pacer, error) {
	spacing := time.Duration(float64(time.Minute) / perMinute)
	p := &pacer{
		method:  method,
		spacing: spacing,
		// Burst 1: the bucket starts full, so the first call of a fresh process passes
		// at once — which is why the persisted LastCall is folded into notBefore.
		lim:    rate.NewLimiter(rate.Every(spacing), 1),
		store:  store,
		log:    log,
		skew:   skew,
		sleep:  ctxsleep.Sleep,
		margin: marginFloor,
	}
	if store == nil {
		return p, nil
	}
	st, ok, err := store.LoadMethodState(method)
	if err != nil {
		return nil, fmt.Errorf("load pacing state of %s: %w", method, err)
	}
	if ok {
		st = p.bounded(st, time.Now())
		p.lastCall = st.LastCall
		p.notBefore = st.NotBefore
		p.slackLastCall = st.SlackLastCall
		if !st.SlackLastCall.IsZero() {
			p.slackNext = st.SlackLastCall.Add(spacing)
		}
		if next := st.LastCall.Add(spacing); !st.LastCall.IsZero() && next.After(p.notBefore) {
			p.notBefore = next
		}
	}
	return p, nil
}

// bounded returns the persisted st bounded by what its times can mean, as of now. They
// were written by the local clock, which may have been wrong then or be wrong now: a
// clock set days ahead and then corrected would otherwise stop every call for days. A
// last call cannot be later than now; it is taken as now (one spacing is waited). A
// gate further ahead than one spacing and the longest Retry-After honoured cannot come
// from a Retry-After; it is not waited for. Each is logged.
func (p *pacer) bounded(st readmodel.MethodState, now time.Time) readmodel.MethodState {
	if st.LastCall.After(now) {
		p.log.Warn("slack pacing: persisted last call is in the future (the clock was ahead or went back); taking it as now",
			"method", p.method, "last_call", st.LastCall.UTC().Format(time.RFC3339), "now", now.UTC().Format(time.RFC3339))
		st.LastCall = now
	}
	if limit := now.Add(max(p.spacing, maxRetryAfter) + retryAfterMargin); st.NotBefore.After(limit) {
		p.log.Warn("slack pacing: persisted retry time is further in the future than any Retry-After (the clock was ahead or went back); not waiting for it",
			"method", p.method, "not_before", st.NotBefore.UTC().Format(time.RFC3339), "now", now.UTC().Format(time.RFC3339))
		st.NotBefore = time.Time{}
	}
	return st
}

// acquire blocks until a call of the method may start, records it as the last call
// and persists the state. It returns how long it waited, or ctx.Err() if ctx ended
// first (the limiter reservation is then given back).
func (p *pacer) acquire(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	defer p.wait.clear()
	for {
		p.mu.Lock()
		nb := p.gate(time.Now())
		byRetryAfter := nb.Equal(p.notBefore)
		p.mu.Unlock()
		if time.Now().Before(nb) {
			p.wait.set(nb, p.wait.gateReason(byRetryAfter))
		}
		if err := sleepUntil(ctx, nb); err != nil {
			return time.Since(start), err
		}
		// Reserve + our own sleep rather than lim.Wait: Wait fails at once when the
		// ctx deadline is nearer than the token (x/time/rate docs), and a 60 s wait is part
		// of the call.
		r := p.lim.Reserve()
		if d := r.Delay(); d > 0 {
			p.wait.set(time.Now().Add(d), WaitRate)
		}
		if err := p.sleep(ctx, r.Delay()); err != nil {
			r.Cancel()
			return time.Since(start), err
		}
		p.mu.Lock()
		now := time.Now()
		if now.Before(p.gate(now)) {
			// The gate moved while we slept: a concurrent call of this method got a
			// 429, or went out. Or the sleep ended late (the process was stopped,
			// SIGSTOP, or the machine suspended): the limiter counts from when the
			// reservation was due, not from when the call left, and would let the next
			// call go at once after this one.
			p.mu.Unlock()
			continue
		}
		p.lastCall = now
		p.slackLastCall, p.slackNext = time.Time{}, time.Time{}
		if skew, ok := p.skew(); ok {
			p.slackLastCall = now.Round(0).Add(skew)
		}
		p.save(p.state())
		p.mu.Unlock()
		return time.Since(start), nil
	}
}

// pushBack forbids calls before t (a 429's Retry-After), doubles the method's
// margin (up to marginCeil) and persists the gate. It never moves the gate earlier.
// It returns when the next call may really go, which the spacing since the last call
// can make later than t, and the margin before and after.
func (p *pacer) pushBack(t time.Time) (next time.Time, before, after float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.After(p.notBefore) {
		p.notBefore = t
		p.wait.rateLimited()
	}
	before = p.margin
	p.margin = min(marginCeil, 2*p.margin)
	p.save(p.state())
	return p.gate(time.Now()), before, p.margin
}

// answered takes back part of the margin a 429 added, after a call Slack answered
// without one.
func (p *pacer) answered() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.margin -= (p.margin - marginFloor) / marginDecay
}

// paced is the time kept between two calls: the spacing plus the margin. Called
// with p.mu held.
func (p *pacer) paced() time.Duration {
	return p.spacing + time.Duration(float64(p.spacing)*p.margin)
}

// state is the state to persist; called with p.mu held.
func (p *pacer) state() readmodel.MethodState {
	return readmodel.MethodState{LastCall: p.lastCall.Round(0), NotBefore: p.notBefore.Round(0), SlackLastCall: p.slackLastCall}
}

// gate is the earliest time, by our clock as of now, a call may start: notBefore, the
// last call + spacing with its margin, and until this process has called, the
// previous process's last call + spacing by Slack's clock once an answer has told the
// skew. Our clock may have moved between the runs (an hour ahead: by it, the last
// call looks an hour old); Slack's has not. The last two are bounded by one spacing
// from now, as newPacer bounds the local last call. Called with p.mu held.
func (p *pacer) gate(now time.Time) time.Time {
	nb := p.notBefore
	if !p.lastCall.IsZero() {
		next := p.lastCall.Add(p.paced())
		if limit := now.Add(p.paced()); next.After(limit) {
			next = limit
		}
		if next.After(nb) {
			nb = next
		}
	}
	if p.slackNext.IsZero() {
		return nb
	}
	skew, ok := p.skew()
	if !ok {
		return nb
	}
	local := p.slackNext.Add(-skew)
	if limit := now.Add(p.spacing); local.After(limit) {
		local = limit
	}
	if local.After(nb) {
		return local
	}
	return nb
}

// save persists st; called with p.mu held so saves of one method stay in order. A
// store failure is logged, not returned: losing pacing state only risks one early
// call after a restart, which is no reason to stop reading Slack.
func (p *pacer) save(st readmodel.MethodState) {
	if p.store == nil {
		return
	}
	if err := p.store.SaveMethodState(p.method, st); err != nil {
		p.log.Warn("slack pacing state not saved", "method", p.method, "err", err)
	}
}

// sleepUntil sleeps until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	return ctxsleep.Sleep(ctx, time.Until(t))
}

// StorePacing adapts a readmodel.Store to a PacingStore, each load a View and each
// save an Update of its own, so the daemon persists pacing in its bbolt store:
// Options{Pacing: StorePacing(store)}.
func StorePacing(s readmodel.Store) PacingStore { return storePacing{s} }

type storePacing struct{ s readmodel.Store }

func (p storePacing) LoadMethodState(method string) (st readmodel.MethodState, ok bool, err error) {
	err = p.s.View(func(tx readmodel.Tx) error {
		st, ok, err = tx.MethodState(method)
		return err
	})
	return st, ok, err
}

func (p storePacing) SaveMethodState(method string, st readmodel.MethodState) error {
	return p.s.Update(func(tx readmodel.Tx) error { return tx.PutMethodState(method, st) })
}
