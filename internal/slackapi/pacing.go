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

// pacer gates the calls of one Slack method: a notBefore time (Retry-After, or the
// previous process's last call + spacing) and a burst-1 rate.Limiter that spaces calls
// evenly. x/time/rate has no "pause until t" API (x/time/rate docs), hence the separate gate.
type pacer struct {
	method  string
	spacing time.Duration // time.Minute / requests per minute
	lim     *rate.Limiter
	store   PacingStore
	log     *slog.Logger

	mu        sync.Mutex
	notBefore time.Time
	lastCall  time.Time
	wait      waitState // for Client.Waiting
}

// newPacer builds the pacer for method at perMinute requests per minute and restores
// its persisted state: no call before state.LastCall + spacing nor state.NotBefore.
func newPacer(method string, perMinute float64, store PacingStore, log *slog.Logger) (*pacer, error) {
	spacing := time.Duration(float64(time.Minute) / perMinute)
	p := &pacer{
		method:  method,
		spacing: spacing,
		// Burst 1: the bucket starts full, so the first call of a fresh process passes
		// at once — which is why the persisted LastCall is folded into notBefore.
		lim:   rate.NewLimiter(rate.Every(spacing), 1),
		store: store,
		log:   log,
	}
	if store == nil {
		return p, nil
	}
	st, ok, err := store.LoadMethodState(method)
	if err != nil {
		return nil, fmt.Errorf("load pacing state of %s: %w", method, err)
	}
	if ok {
		p.lastCall = st.LastCall
		p.notBefore = st.NotBefore
		if next := st.LastCall.Add(spacing); !st.LastCall.IsZero() && next.After(p.notBefore) {
			p.notBefore = next
		}
	}
	return p, nil
}

// acquire blocks until a call of the method may start, records it as the last call
// and persists the state. It returns how long it waited, or ctx.Err() if ctx ended
// first (the limiter reservation is then given back).
func (p *pacer) acquire(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	defer p.wait.clear()
	for {
		p.mu.Lock()
		nb := p.notBefore
		p.mu.Unlock()
		if time.Now().Before(nb) {
			p.wait.set(nb, p.wait.gateReason())
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
		if err := ctxsleep.Sleep(ctx, r.Delay()); err != nil {
			r.Cancel()
			return time.Since(start), err
		}
		p.mu.Lock()
		now := time.Now()
		if now.Before(p.notBefore) {
			// A concurrent call of this method got a 429 while we waited.
			p.mu.Unlock()
			continue
		}
		p.lastCall = now
		st := readmodel.MethodState{LastCall: now.Round(0), NotBefore: p.notBefore.Round(0)}
		p.save(st)
		p.mu.Unlock()
		return time.Since(start), nil
	}
}

// pushBack forbids calls before t (Retry-After) and persists it. It never moves the
// gate earlier.
func (p *pacer) pushBack(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.After(p.notBefore) {
		p.notBefore = t
		p.wait.rateLimited()
	}
	p.save(readmodel.MethodState{LastCall: p.lastCall.Round(0), NotBefore: p.notBefore.Round(0)})
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
