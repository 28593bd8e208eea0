package projection

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Spec is one configured target: how to open it, and what to call it until it is
// open.
type Spec struct {
	Kind string
	// Name is the file or host/database/schema, without secrets.
	Name string
	Open func(ctx context.Context) (*Target, error)
}

// Runner runs one Projector per target for the daemon: it opens each target
// (retrying, with the error in its status, while a database is unreachable), keeps
// it current, and answers searches from the first target open (SQLite before
// Postgres).
type Runner struct {
	store *Watched
	log   *slog.Logger
	now   func() time.Time

	mu    sync.Mutex
	slots []*slot
}

type slot struct {
	spec Spec
	// p and t are set once the target is open.
	p   *Projector
	t   *Target
	err error
}

// NewRunner returns a runner of specs over store; nil log discards.
func NewRunner(store *Watched, log *slog.Logger, specs ...Spec) *Runner {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	r := &Runner{store: store, log: log, now: time.Now}
	for _, s := range specs {
		r.slots = append(r.slots, &slot{spec: s})
	}
	return r
}

// Run opens the targets and runs their projectors until ctx ends, then closes them.
func (r *Runner) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, s := range r.slots {
		wg.Go(func() { r.run(ctx, s) })
	}
	wg.Wait()
}

func (r *Runner) run(ctx context.Context, s *slot) {
	backoff := time.Second
	for {
		t, err := s.spec.Open(ctx)
		if err == nil {
			p := New(Options{Store: r.store, Target: t, Log: r.log})
			r.mu.Lock()
			s.p, s.t, s.err = p, t, nil
			r.mu.Unlock()
			_ = p.Run(ctx)
			r.mu.Lock()
			s.p, s.t = nil, nil
			r.mu.Unlock()
			_ = t.Close()
			return
		}
		if ctx.Err() != nil {
			return
		}
		r.mu.Lock()
		s.err = err
		r.mu.Unlock()
		r.log.Error("projection: cannot open the database; retrying", "target", s.spec.Kind, "db", s.spec.Name, "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Minute)
	}
}

// Statuses returns each target's status, in the configured order.
func (r *Runner) Statuses() []Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Status, 0, len(r.slots))
	for _, s := range r.slots {
		if s.p != nil {
			out = append(out, s.p.Status())
			continue
		}
		st := Status{Target: s.spec.Kind, Name: s.spec.Name, State: StateStarting}
		if s.err != nil {
			st.State, st.LastError = StateError, s.err.Error()
		}
		out = append(out, st)
	}
	return out
}

// ErrNoProjection is returned by Search when no target is open.
var ErrNoProjection = errors.New("no SQL projection is open (see projection: in the config, and slackpoll status)")

// Search searches the first open target (SQLite before Postgres, as configured)
// for the store's team.
func (r *Runner) Search(ctx context.Context, q Query, f Freshness) (Page, error) {
	r.mu.Lock()
	var p *Projector
	var t *Target
	for _, s := range r.slots {
		if s.t != nil {
			p, t = s.p, s.t
			break
		}
	}
	r.mu.Unlock()
	if t == nil {
		return Page{}, ErrNoProjection
	}
	team := p.Status().TeamID
	if team == "" {
		var err error
		if team, err = p.readTeam(); err != nil {
			return Page{}, err
		}
		if team == "" {
			return Page{}, ErrNoTeam
		}
	}
	return t.Search(ctx, team, q, f)
}

// RequestRebuild asks every open projector to rebuild; it returns how many were
// asked.
func (r *Runner) RequestRebuild() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.slots {
		if s.p != nil {
			s.p.RequestRebuild()
			n++
		}
	}
	return n
}

// WaitIdle waits until every target is open and its projector current, or ctx
// ends (its error then, with what is not current). A target that failed to open, or
// whose last attempt failed, is not waited for (it retries, and says so in its
// status), nor one waiting for the store's team: nothing can be applied to them now.
func (r *Runner) WaitIdle(ctx context.Context) error {
	for {
		r.mu.Lock()
		busy := ""
		for _, s := range r.slots {
			if s.p == nil && s.err != nil {
				continue
			}
			if s.p != nil {
				if st := s.p.Status().State; st == StateError || st == StateWaiting {
					continue
				}
			}
			if s.p == nil || !s.p.Idle() {
				busy = s.spec.Kind
				break
			}
		}
		r.mu.Unlock()
		if busy == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("projection %s not current: %w", busy, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
