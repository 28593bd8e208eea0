package poller

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Budget holds the per-tick hard caps on calls, one per Slack method the streams of a
// tick spend. A cap is taken when a call starts; running out is a clean stop of that
// method's stream for the tick, not an error. 0 means no call of that method.
type Budget struct {
	HistoryCalls   int // conversations.history: bulk window pages and tail ranges
	RepliesCalls   int // conversations.replies: thread syncs, thread rotation, locate
	UsersInfoCalls int // users.info
	ReactionsCalls int // reactions.get, for watched messages (with reactions:read)
}

// TrackingPolicy says which stored messages rotate, and how the history stream shares
// its calls.
type TrackingPolicy struct {
	// Horizon is how long after its ts a stored message that is not watched keeps
	// rotating; 0 keeps every stored message in rotation for ever.
	Horizon time.Duration
	// HeadMaxAge bounds the time between two reads of a conversation's bulk window
	// (its new messages). 0 picks the time in which head reads of every polled
	// conversation take a tenth of the conversations.history rate, at least one
	// tick interval.
	HeadMaxAge time.Duration
	// WatchedShare is the least fraction of each method's calls in a tick that go to
	// watched messages while any is due (default 0.5).
	WatchedShare float64
}

// Config configures a Poller. Zero values take the defaults of config/slackpoll.yaml.
type Config struct {
	// Conversations are the configured conversation IDs to poll.
	Conversations []string
	// Discover adds every conversation the bot is a member of (users.conversations),
	// re-listed every InfoRefresh.
	Discover bool
	Budget   Budget
	Tracking TrackingPolicy
	// Rates are requests per minute per method, as the Source paces them: the
	// scheduler sizes head reads and the physical limit with them. Missing methods
	// take the non_marketplace profile.
	Rates map[string]float64
	// Interval is the time between tick starts (tick.interval, default 1m).
	Interval time.Duration
	// SoftDeadline bounds a tick; it is checked between calls only (default 4m).
	SoftDeadline time.Duration
	// BulkWindow is how far back a head read reads history (default 72h).
	BulkWindow time.Duration
	// UserCacheTTL is how long a users.info answer is trusted (default 168h).
	UserCacheTTL time.Duration
	// InfoRefresh is how often conversations.info is re-read, and how long a
	// conversation in an error status waits before it is tried again (default 1h).
	InfoRefresh time.Duration
	// Now is the clock (default time.Now; tests run under testing/synctest).
	Now func() time.Time
	// ClockSkew, if set, returns Slack's clock minus Now as last measured (the Source's
	// Date headers). Beyond ClockSkewTolerance the bulk window is placed by Slack's
	// time, so that a skewed local clock cannot hide new messages.
	ClockSkew func() time.Duration
	Logger    *slog.Logger
	// OnTick, if set, is called with the summary of every finished tick (metrics).
	OnTick func(rm.TickSummary)
	// Feed configures the change feed: backfill and the webhooks' subscriptions.
	Feed rm.FeedConfig
	// OnChanges, if set, is called with the last seq after each commit that appended
	// changes to the feed, outside the transaction.
	OnChanges func(last uint64)
}

func (c *Config) setDefaults() {
	if c.Interval <= 0 {
		c.Interval = time.Minute
	}
	if c.SoftDeadline <= 0 {
		c.SoftDeadline = 4 * time.Minute
	}
	if c.BulkWindow <= 0 {
		c.BulkWindow = 72 * time.Hour
	}
	if c.UserCacheTTL <= 0 {
		c.UserCacheTTL = 168 * time.Hour
	}
	if c.InfoRefresh <= 0 {
		c.InfoRefresh = time.Hour
	}
	if c.Tracking.WatchedShare <= 0 || c.Tracking.WatchedShare > 1 {
		c.Tracking.WatchedShare = 0.5
	}
	rates, _ := rm.ProfileRates(rm.ProfileNonMarketplace)
	for m, r := range c.Rates {
		if r > 0 {
			rates[m] = r
		}
	}
	c.Rates = rates
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.ClockSkew == nil {
		c.ClockSkew = func() time.Duration { return 0 }
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// spacing returns the least time between two calls of method at its configured rate.
func (c *Config) spacing(method string) time.Duration {
	return time.Duration(float64(time.Minute) / c.Rates[method])
}

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

	identity     *rm.Identity
	pendingUsers map[string]struct{} // user IDs seen but not (freshly) resolved
	lastDiscover time.Time
	// pageCap is the most messages a history page was seen to hold when the server
	// cut it short of the limit asked (15 for non-Marketplace apps); 0 while unknown.
	pageCap int
	// arrivals is, per conversation, the rate of new messages its head reads found
	// (messages per second, smoothed): what a head read is expected to bring.
	arrivals map[string]float64
	// Throughput of the last ticks, for the rotation period estimates.
	samples      []rotationSample
	lastFinished time.Time
	// neverSince is the start of the first tick of the current run of ticks that
	// ended with never-read tracked messages waiting; zero when none waits.
	neverSince time.Time
	// unlocated are never-read tracked messages a complete history read missed and
	// that wait for a conversations.replies call to find their thread (locate): the
	// history read is not repeated. Lost on restart, which costs one read again.
	unlocated map[rm.Ref]bool
	// tickNo counts this process's ticks; tailBackoff holds tail entries whose last
	// reads advanced nothing (undecodable, failing): skipped until tickNo reaches
	// until, so that a message Slack keeps sending broken cannot take the tail's
	// calls on every tick. Lost on restart, which costs one read again.
	tickNo      int
	tailBackoff map[rm.Ref]backoff
	// carried are the thread syncs a tick queued but could not make (cap, soft
	// deadline): the next tick starts with them rather than waiting for the parent's
	// next read, a rotation away. Lost on restart, which costs that wait once.
	carried []threadCandidate
	// noReactions holds watched messages reactions.get answered message_not_found
	// for: only history can tell a deleted message from a tombstone, so they rotate
	// there. Lost on restart, which costs one reactions.get call each.
	noReactions map[rm.Ref]bool
	// rangeResume holds, per conversation, the tail range whose read a tick's end
	// cut between pages, and the cursor to go on from (see tick.readRange). Lost on
	// restart, which costs that range's first pages once more.
	rangeResume map[string]rangeCut
	// firstSyncSince is when this process saw the first sync under way; it logs its
	// progress (firstSyncLogged) until firstSyncDone.
	firstSyncSince                 time.Time
	firstSyncLogged, firstSyncDone bool
	// firstSyncThreads is the threads never read at the last tick, and
	// firstSyncStalled how many ticks in a row that did not go down once every
	// conversation was read (threads Slack will not give: thread_not_found, …).
	firstSyncThreads, firstSyncStalled int
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
	t.mu.Lock()
	defer t.mu.Unlock()
	return rm.TickRunning{Tick: t.no, Started: t.start, SoftDeadline: t.deadline, Calls: maps.Clone(t.sum.Calls)}, true
}

// rangeCut is a tail range read up to cursor: the request to go on with, and the
// last_polled_at of the range's due messages before the read began (the pages read
// advanced some of them: compared with times taken when it goes on, they would look
// stuck and back off).
type rangeCut struct {
	oldest, latest rm.TS
	limit          int
	cursor         string
	before         map[rm.Ref]*time.Time
}

// backoff is a tail entry's run of reads that advanced nothing.
type backoff struct {
	fails, until int
}

// New returns a Poller writing to store and reading from src.
func New(store rm.Store, src rm.Source, cfg Config) *Poller {
	cfg.setDefaults()
	obs := newObservedSource(src, cfg.Now)
	return &Poller{
		store: store, src: obs, obs: obs, cfg: cfg, log: cfg.Logger,
		w:            rm.NewWriter(store, rm.WriterOptions{Feed: cfg.Feed, Now: cfg.Now, OnChanges: cfg.OnChanges}),
		pendingUsers: map[string]struct{}{}, unlocated: map[rm.Ref]bool{},
		tailBackoff: map[rm.Ref]backoff{}, rangeResume: map[string]rangeCut{}, arrivals: map[string]float64{}, noReactions: map[rm.Ref]bool{},
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
	p.tickNo++
	if ids := p.reconfigured.Swap(nil); ids != nil {
		p.cfg.Conversations = *ids
		// A conversation added has a first sync of its own to report.
		p.firstSyncDone, p.firstSyncLogged, p.firstSyncSince = false, false, time.Time{}
	}
	t := newTick(p, ctx)
	t.no = p.tickNo
	p.current.Store(t)
	stopProgress := t.startProgress()
	err := t.run()
	stopProgress()
	p.current.Store(nil)
	sum := t.finish(err)
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
