package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/slackpoll/slackpoll/internal/converge"
	"github.com/slackpoll/slackpoll/internal/ctxsleep"
	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackapi"
	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// The phases of a run that Run (one workspace) and RunWorkspaces (many in one
// supervisor) share: the fake of a seed, the poller's settings, the changes, and the
// wait for the read model to match the truth.

// bulkWindow is the poller's bulk window, and the compared window of messages.
const bulkWindow = 72 * time.Hour

// fill sets the defaults of zero options.
func (o *Options) fill() {
	if o.Size == (slackfake.GenSize{}) {
		o.Size = DefaultOptions().Size
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 5 * time.Second
	}
}

// rateTables are the client's requests per minute (RatePerMinute for every method)
// and the fake's (the same, FakeRates overriding some).
func (o *Options) rateTables() (client map[string]float64, fake map[string]int) {
	client, fake = map[string]float64{}, map[string]int{}
	for _, m := range slackapi.Methods {
		client[m] = o.RatePerMinute
		fake[m] = int(o.RatePerMinute)
	}
	maps.Copy(fake, o.FakeRates)
	return client, fake
}

// faults are the kinds injected at FaultRate.
func (o *Options) faults() []slackfake.FaultKind {
	if o.Faults == nil {
		return demoFaults
	}
	return o.Faults
}

// newFake builds the workspace of seed with o's limits and page cap, generated at
// o.Size, then runs o.Setup on it. id gives its identity (TeamID, TokenLifetime);
// the zero value is the single fake workspace.
func (o *Options) newFake(seed int64, id slackfake.Options) *slackfake.Server {
	_, fakeRates := o.rateTables()
	fo := id
	fo.PageCap, fo.RatePerMinute, fo.ReactionUsersCap = o.PageCap, fakeRates, 8
	fo.RepeatParentOnEveryPage, fo.Seed = seed%2 == 0, seed
	// The read model keeps no blocks; decoding them dominates slack-go's CPU time.
	fo.OmitBlocks = true
	fake := slackfake.New(fo)
	slackfake.Generate(fake, seed, o.Size)
	if o.Setup != nil {
		o.Setup(fake)
	}
	return fake
}

// pollerConfig is the poller's configuration of o, with pc's per-workspace fields
// (Conversations, Logger, OnTick) kept.
func (o *Options) pollerConfig(rates map[string]float64, pc poller.Config) poller.Config {
	pc.Rates, pc.Budget, pc.Interval = rates, o.Budget, o.Interval
	pc.SoftDeadline, pc.BulkWindow, pc.UserCacheTTL = 30*time.Second, bulkWindow, o.UserCacheTTL
	pc.InfoRefresh, pc.Feed = o.InfoRefresh, o.Feed
	return pc
}

// recorder keeps one workspace's tick summaries in its Result, prints a line per
// tick, and signals each tick to the convergence wait.
type recorder struct {
	mu     sync.Mutex
	res    *Result
	out    io.Writer
	prefix string
	ticks  chan rm.TickSummary
}

func newRecorder(res *Result, out io.Writer, prefix string) *recorder {
	return &recorder{res: res, out: out, prefix: prefix, ticks: make(chan rm.TickSummary, 16)}
}

func (r *recorder) onTick(s rm.TickSummary) {
	r.mu.Lock()
	r.res.Ticks++
	r.res.TickLog = append(r.res.TickLog, s)
	for m, n := range s.Calls {
		r.res.Calls[m] += n
	}
	n := r.res.Ticks
	r.mu.Unlock()
	fmt.Fprintf(r.out, "%stick %3d  %-22s %5.1fs  calls %-40s written %5d msgs %4d threads  tail %3d  users %3d  tracked %5d\n",
		r.prefix, n, s.StopReason, s.Finished.Sub(s.Started).Seconds(), callsString(s.Calls),
		s.MessagesWritten, s.ThreadsWritten, s.TailRead, s.UsersResolved, s.Tracked)
	select {
	case r.ticks <- s:
	default:
	}
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.res.Ticks
}

// mutate applies the seeded changes of seed to fake every o.MutateEvery until until,
// counting them in res; each, if set, runs before every change.
func mutate(ctx context.Context, o *Options, fake *slackfake.Server, seed int64, until time.Time, res *Result, each func()) error {
	mut := slackfake.NewMutator(fake, seed)
	mut.Disruptive = o.Disruptive
	for time.Now().Before(until) {
		if each != nil {
			each()
		}
		d := mut.Step()
		if strings.HasPrefix(d, "skip") || strings.Contains(d, "(skipped") {
			res.Skipped++
		}
		if o.OnChange != nil {
			o.OnChange(d)
		}
		res.Mutations++
		if err := ctxsleep.Sleep(ctx, o.MutateEvery); err != nil {
			return err
		}
	}
	return nil
}

// convergence follows one workspace after its last change: after every tick it
// compares the read model with the truth (converge.Diff over the bulk window), notes
// the first match, and ends when every tracked message has been re-read once more
// since (a later read must not undo it), a comparison differs again (a regression,
// reported), or maxTicks ticks have passed.
type convergence struct {
	o     *Options
	store rm.Store
	fake  *slackfake.Server
	convs []string
	rec   *recorder
	// tickAtChange is the tick count at the last change; seqAtMatch the feed's last
	// seq at the first match (0 if none).
	tickAtChange int
	seqAtMatch   uint64
}

// newConvergence starts the observation: the last change is now.
func newConvergence(o *Options, store rm.Store, fake *slackfake.Server, convs []string, rec *recorder) *convergence {
	rec.res.TicksToConverge, rec.res.LastChange = -1, time.Now()
	return &convergence{o: o, store: store, fake: fake, convs: convs, rec: rec, tickAtChange: rec.count()}
}

// wait runs the observation until it ends, ctx ends (its error), or stopped closes:
// the poller stopped, stopErr says why.
func (c *convergence) wait(ctx context.Context, stopped <-chan struct{}, stopErr func() error) error {
	res := c.rec.res
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-stopped:
			return stopErr()
		case <-c.rec.ticks:
		}
		after := c.rec.count() - c.tickAtChange
		model, err := converge.ModelLines(c.store, c.convs)
		if err != nil {
			return err
		}
		since := rm.TSFromUnix(time.Now().Add(-bulkWindow).Unix())
		res.Report = converge.Diff(model, converge.Lines(c.fake.Truth()), since)
		clean := len(res.Report.Differences) == 0
		// After the match, a difference is a regression unless the model itself says
		// the message is not read yet (a placeholder a range or a watched reply
		// brought in, a thread behind its latest_reply): that must be filled in by
		// the end of the observation, a full rotation later, which is checked then.
		if !clean && res.TicksToConverge >= 0 && res.Report.Pending < len(res.Report.Differences) {
			return nil // regression
		}
		if clean && res.TicksToConverge < 0 {
			res.TicksToConverge, res.ConvergedAt = after, time.Now()
			if c.seqAtMatch, err = lastSeq(c.store); err != nil {
				return err
			}
		}
		if after >= c.o.maxTicks() {
			return nil
		}
		if res.TicksToConverge >= 0 {
			oldest, err := OldestPolled(c.store)
			if err != nil {
				return err
			}
			if !oldest.Before(res.ConvergedAt) {
				return nil
			}
		}
	}
}
