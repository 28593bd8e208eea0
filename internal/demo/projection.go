package demo

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// ProjectionCheck is the end of a run for one SQL projection target: its rows
// compared with the store's (projection.Verify), and one search.
type ProjectionCheck struct {
	Kind   string
	Report projection.VerifyReport
	// Query is a word of a stored message; Hits how many messages it found, and
	// Found whether that message was among them.
	Query string
	Hits  int
	Found bool
	// Syncs and Batches are the transactions the projectors committed.
	Syncs, Batches int
	Err            error
}

// projectors runs one projector per target over the watched store, and can stop
// and start them again mid-run (a daemon restarted: the new projector syncs).
type projectors struct {
	model *projection.Watched
	log   *slog.Logger
	specs []projection.Spec

	mu      sync.Mutex
	targets []*projection.Target
	running []*projection.Projector
	stops   []func()
	syncs   []int
	batches []int
}

func startProjectors(ctx context.Context, model *projection.Watched, log *slog.Logger, specs []projection.Spec) (*projectors, error) {
	ps := &projectors{model: model, log: log, specs: specs, syncs: make([]int, len(specs)), batches: make([]int, len(specs))}
	for _, s := range specs {
		t, err := s.Open(ctx)
		if err != nil {
			ps.close()
			return nil, fmt.Errorf("projection %s: %w", s.Kind, err)
		}
		ps.targets = append(ps.targets, t)
	}
	ps.start()
	return ps, nil
}

func (ps *projectors) start() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.running, ps.stops = nil, nil
	for _, t := range ps.targets {
		// A batch a second at most: the simulation's commits come in bursts, and each
		// batch is a round of SQL transactions (Postgres: over the network).
		p := projection.New(projection.Options{Store: ps.model, Target: t, Log: ps.log, Poll: time.Second, Gather: time.Second})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = p.Run(ctx) }()
		ps.running = append(ps.running, p)
		ps.stops = append(ps.stops, func() { cancel(); <-done })
	}
}

// stop stops the running projectors (a batch in flight is rolled back).
func (ps *projectors) stop() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for i, stop := range ps.stops {
		stop()
		st := ps.running[i].Status()
		ps.syncs[i] += st.Syncs
		ps.batches[i] += st.Batches
	}
	ps.running, ps.stops = nil, nil
}

// restart stops the projectors and starts new ones, as a daemon restart does.
func (ps *projectors) restart() {
	ps.stop()
	ps.start()
}

func (ps *projectors) close() {
	ps.stop()
	for _, t := range ps.targets {
		_ = t.Close()
	}
}

// check waits (up to wait) until every projector is current, then compares each
// target with the store and runs a search; the poller has stopped, so the store no
// longer changes.
func (ps *projectors) check(ctx context.Context, store rm.Store, wait time.Duration) []ProjectionCheck {
	ps.mu.Lock()
	running := append([]*projection.Projector(nil), ps.running...)
	ps.mu.Unlock()
	deadline := time.Now().Add(wait)
	for _, p := range running {
		for !p.Idle() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	query, want := searchable(store)
	var out []ProjectionCheck
	for i, t := range ps.targets {
		c := ProjectionCheck{Kind: t.Kind(), Query: query}
		if !running[i].Idle() {
			c.Err = fmt.Errorf("not current %v after the last write: %+v", wait, running[i].Status())
		}
		rep, err := projection.Verify(ctx, store, t)
		c.Report = rep
		if err != nil && c.Err == nil {
			c.Err = err
		}
		if query != "" && c.Err == nil {
			page, err := t.Search(ctx, rep.Team, projection.Query{Q: query, Limit: projection.MaxLimit}, projection.Freshness{})
			if err != nil {
				c.Err = err
			}
			c.Hits = len(page.Items)
			for _, h := range page.Items {
				c.Found = c.Found || h.Channel == want.Channel && h.TS == want.TS
			}
			if !c.Found && len(page.Items) < projection.MaxLimit && c.Err == nil {
				c.Err = fmt.Errorf("search %q did not find %s/%s, which holds it", query, want.Channel, want.TS)
			}
		}
		out = append(out, c)
	}
	ps.stop()
	for i := range out {
		out[i].Syncs, out[i].Batches = ps.syncs[i], ps.batches[i]
	}
	return out
}

// searchable picks a word of five letters or more from the newest stored message
// that has one: the demo's search, and the message it must find.
func searchable(store rm.Store) (string, rm.Ref) {
	var word string
	var ref rm.Ref
	_ = store.View(func(tx rm.Tx) error {
		return tx.Conversations(func(c rm.Conversation) error {
			return tx.Timeline(c.ID, "", "", func(m rm.Message) error {
				if m.Deleted || m.LastPolledAt == nil || ref.TS != "" && m.TS.Before(ref.TS) {
					return nil
				}
				text, _ := projection.Render(m.Text, projection.Names{})
				for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) }) {
					if len(w) >= 5 {
						word, ref = w, rm.Ref{Channel: m.Channel, TS: m.TS}
						break
					}
				}
				return nil
			})
		})
	})
	return word, ref
}
