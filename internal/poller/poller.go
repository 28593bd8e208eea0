package poller

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Poller keeps a Store current from a Source, one bounded tick at a time, by the
// replace-on-read contract (README: "Replace on read"). Tick is not safe for
// concurrent use; within a tick, its per-method streams run concurrently.
type Poller struct {
	store rm.Store
	src   rm.Source
	obs   *observedSource // src, recording the calls in flight for the progress log
	w     *rm.Writer
	cfg   Config
	log   *slog.Logger

	// mem is what the scheduler remembers from one tick to the next.
	mem memory

	// current is the tick under way, for Running (read by other goroutines).
	current atomic.Pointer[tick]
	// reconfigured holds the conversations SetConversations gave, until the next
	// tick takes them.
	reconfigured atomic.Pointer[[]string]
}

// SetConversations replaces the configured conversations from the next tick on (a
// config reloaded on SIGHUP). Safe for concurrent use with Tick. A conversation no
// longer configured keeps its stored messages; it is no longer read.
func (p *Poller) SetConversations(ids []string) {
	ids = slices.Clone(ids)
	p.reconfigured.Store(&ids)
}

// Running reports the tick under way, if one is. Safe for concurrent use with Tick
// (the status report of the running daemon).
func (p *Poller) Running() (rm.TickRunning, bool) {
	t := p.current.Load()
	if t == nil {
		return rm.TickRunning{}, false
	}
	return rm.TickRunning{Tick: t.no, Started: t.start, SoftDeadline: t.deadline, Calls: t.report.calls()}, true
}

// New returns a Poller writing to store and reading from src.
func New(store rm.Store, src rm.Source, cfg Config) *Poller {
	cfg.setDefaults()
	obs := newObservedSource(src, cfg.Now)
	return &Poller{
		store: store, src: obs, obs: obs, cfg: cfg, log: cfg.Logger,
		w:   rm.NewWriter(store, rm.WriterOptions{Feed: cfg.Feed, Now: cfg.Now, OnChanges: cfg.OnChanges}),
		mem: newMemory(),
	}
}

// ErrTokenRejected wraps the token-wide errors (invalid_auth, token_revoked, ...) that
// stop a tick and the daemon: nothing more can be read until the token is fixed.
var ErrTokenRejected = errors.New("slack rejected the token")

// Run ticks at once, then every Interval (a tick that overruns is followed at once by
// the next), until ctx is cancelled, which returns nil. It returns an error only for
// what no later tick can fix: a rejected token or a failing store. Transient failures
// are logged and retried on the next tick.
func (p *Poller) Run(ctx context.Context) error {
	for {
		start := p.cfg.Now()
		_, err := p.Tick(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if errors.Is(err, ErrTokenRejected) || errors.Is(err, rm.ErrStore) {
				return err
			}
			p.log.Warn("tick failed; retrying on the next tick", "err", err)
		}
		wait := start.Add(p.cfg.Interval).Sub(p.cfg.Now())
		if wait <= 0 {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Tick runs one bounded pass: auth.test, discover and conversations.info in turn, then
// one stream per Slack method at once (history: head reads and tail ranges; replies:
// thread syncs, locate and thread rotation; users.info; reactions.get), each paced by
// its own limiter and cap. Everything fetched before a stop is committed. It
// returns an error for a rejected token (wrapping ErrTokenRejected), a store failure, a
// failed auth.test, or ctx cancellation (shutdown: nothing partial is written); budget
// exhaustion, the soft deadline and per-conversation or per-item errors are not errors.
func (p *Poller) Tick(ctx context.Context) (rm.TickSummary, error) {
	p.mem.tickNo++
	if ids := p.reconfigured.Swap(nil); ids != nil {
		p.cfg.Conversations = *ids
		// A conversation added has a first sync of its own to report.
		p.mem.firstSync = firstSyncMemory{}
	}
	written := p.w.MessagesWritten()
	t := newTick(p, ctx)
	p.current.Store(t)
	stopProgress := t.startProgress()
	err := t.run()
	stopProgress()
	p.current.Store(nil)
	sum := t.finish(err)
	// What the store wrote, not what the tick applied: a message read as stored is
	// not written again.
	sum.MessagesWritten = int(p.w.MessagesWritten() - written)
	// An interrupted tick is a last tick too: status shows it stopped on shutdown.
	if perr := p.w.PutLastTick(sum); perr != nil && err == nil {
		err = rm.StoreErr(perr)
	}
	p.logSummary(sum, err)
	p.logFirstSyncProgress(sum)
	if p.cfg.OnTick != nil {
		p.cfg.OnTick(sum)
	}
	return sum, err
}

func (p *Poller) logSummary(s rm.TickSummary, err error) {
	var calls []any
	for _, m := range slices.Sorted(maps.Keys(s.Calls)) {
		calls = append(calls, slog.Int(m, s.Calls[m]))
	}
	attrs := []any{
		"stop", s.StopReason,
		"duration", s.Finished.Sub(s.Started).Round(time.Millisecond).String(),
		slog.Group("calls", calls...),
		"messages_written", s.MessagesWritten,
		"threads_written", s.ThreadsWritten,
		"tail_read", s.TailRead,
		"users_resolved", s.UsersResolved,
		"tracked", s.Tracked,
		"watched", s.Watched,
		"rotation_period", rotationText(s.RotationPeriod),
		"watched_rotation", rotationText(s.WatchedRotation),
		"physical_limit", s.PhysicalLimit.String(),
	}
	if len(s.Errors) > 0 {
		attrs = append(attrs, "skipped", s.Errors)
	}
	switch {
	case errors.Is(err, context.Canceled):
		p.log.Info("tick interrupted by shutdown; nothing partial was written", attrs...)
	case err != nil:
		p.log.Error("tick failed", append(attrs, "err", err)...)
	default:
		p.log.Info("tick", attrs...)
	}
}

// rotationText renders a rotation period for the tick log; 0 means not known yet (no
// tail read in the throughput window).
func rotationText(d time.Duration) string {
	if d == 0 {
		return "unknown"
	}
	return d.String()
}
