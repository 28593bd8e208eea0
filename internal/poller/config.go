package poller

import (
	"io"
	"log/slog"
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
