package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/slackpoll/slackpoll/config"
	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/changefeed"
	"github.com/slackpoll/slackpoll/internal/metrics"
	"github.com/slackpoll/slackpoll/internal/poller"
	"github.com/slackpoll/slackpoll/internal/projection"
	"github.com/slackpoll/slackpoll/internal/webhook"
)

// daemon is a wired store, source and poller.
type daemon struct {
	cfg   *config.Config
	log   *slog.Logger
	store *boltstore.Store
	// model is store as every component reads and writes it: watched, so that the
	// SQL projection (proj) sees every commit.
	model  *projection.Watched
	proj   *projection.Runner
	poller *poller.Poller
	// metrics receive the Slack client's and the poller's hooks; the read API serves them.
	metrics *metrics.Metrics
	// notifier wakes the API's long polls when the writer commits changes; deliverer
	// POSTs them to the webhooks (nil without webhooks).
	notifier  *changefeed.Notifier
	deliverer *webhook.Deliverer
	// reloadable is what a SIGHUP changes in place.
	reloadable *reloadable
	// slackNow is Slack's time and whether an answer told it yet (the source's):
	// retention and webhook timestamps go by it, not by a local clock that may be off.
	slackNow func() (time.Time, bool)
}

func (c *cmdCtx) startDaemon() (*daemon, error) {
	cfg, err := c.loadConfig()
	if err != nil {
		return nil, err
	}
	return c.startDaemonOf(cfg)
}

// startDaemonOf wires the one-workspace daemon of cfg.
func (c *cmdCtx) startDaemonOf(cfg *config.Config) (*daemon, error) {
	if err := cfg.RequireToken(); err != nil {
		return nil, err
	}
	if err := cfg.RequireWebhookSecrets(); err != nil {
		return nil, err
	}
	if len(cfg.Conversations) == 0 && cfg.Discover == "" {
		return nil, usageErr("%s: nothing to poll: list conversation IDs under conversations, or set discover: member", cfg.File())
	}
	rl := &reloadable{}
	rl.level.Set(logLevel(cfg.Log.Level))
	rl.levelName = cfg.Log.Level
	convs := slices.Clone(cfg.Conversations)
	rl.conversations.Store(&convs)
	log := newLogger(&rl.level, cfg.Log.Format, c.env.Stderr)
	store, err := openStore(cfg, log)
	if err != nil {
		return nil, err
	}
	m := metrics.New()
	m.SetTickConfig(cfg.Tick.Interval.D(), cfg.Tick.SoftDeadline.D())
	src, err := newSource(cfg, store, log, nil, m.OnCall, m.OnClockSkew)
	if err != nil {
		_ = store.Close() // the configuration error is the one to report
		return nil, &exitError{ExitUsage, err}
	}
	d := &daemon{cfg: cfg, log: log, store: store, model: projection.Watch(store), metrics: m, notifier: &changefeed.Notifier{}, reloadable: rl, slackNow: src.SlackNow}
	d.proj = projection.NewRunner(d.model, log, projectionSpecs(cfg)...)
	m.SetProjections(d.proj.Statuses)
	d.deliverer = d.newDeliverer()
	m.SetWebhooks(webhookNames(cfg))
	pc := pollerConfig(cfg, log)
	pc.OnTick = m.OnTick
	pc.ClockSkew = src.ClockSkew
	pc.Feed = feedConfig(cfg)
	pc.OnChanges = d.changesCommitted
	d.poller = poller.New(d.model, src, pc)
	d.warnRestored()
	d.warnUnconfiguredOutbox()
	return d, nil
}

// warnRestored logs the restore Open found: the store is older than the seqs its
// feed had handed out (a backup copied into place; or, with no seq in the gap handed
// out, a daemon that stopped without closing the store).
func (d *daemon) warnRestored() {
	r := d.store.Restored()
	if r == nil {
		return
	}
	d.log.Warn("change feed: the store is older than the seqs its feed handed out (a backup put in place, or the last daemon did not close the store): new changes start after the skipped seqs; a consumer's cursor among them gets 410 Gone with the restore point, and what changed in Slack since is reported again",
		"restore_point", r.Seq, "skipped_to", r.SkippedTo)
}

// changesCommitted is the writer's commit hook: long polls and the deliverer wake.
func (d *daemon) changesCommitted(last uint64) {
	d.notifier.Publish(last)
	d.wakeDeliverer()
}

// close closes the store; its failure (the last commit's sync, the file lock) is the
// command's error unless the command already failed.
func (d *daemon) close(err *error) {
	if cerr := d.store.Close(); cerr != nil && *err == nil {
		*err = fmt.Errorf("closing store %s: %w", d.cfg.Store.Path, cerr)
	}
}

// cmdRun is `slackpoll run`: tick at once, then every tick.interval, until the first
// SIGINT/SIGTERM cancels ctx; any call or wait in flight is abandoned and nothing
// partial is written.
func cmdRun(ctx context.Context, c *cmdCtx) (err error) {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	if cfg.MultiWorkspace() {
		return cmdRunFleet(ctx, c, cfg)
	}
	d, err := c.startDaemonOf(cfg)
	if err != nil {
		return err
	}
	defer d.close(&err)
	ctx, stopOnDamage := d.untilDamaged(ctx)
	defer stopOnDamage()
	stopHTTP, err := d.serveHTTP()
	if err != nil {
		return err
	}
	defer stopHTTP() // before the store closes: requests in flight still read it
	// The API stops at the signal, whatever the poller is doing: a request it
	// serves must not keep the daemon from exiting.
	go func() { <-ctx.Done(); stopHTTP() }()
	stopFeed := d.runFeed(ctx)
	defer stopFeed() // deliveries in flight are abandoned; their lease frees the rows
	d.watchHangup(ctx, c)
	stopProj := d.runProjections(ctx)
	defer func() {
		// What the last tick wrote, while the shutdown allows; the rest is synced by
		// the next start.
		d.drainProjections(context.Background(), runDrain)
		stopProj()
	}()
	d.log.Info("slackpoll started", "store", d.cfg.Store.Path, "conversations", len(d.cfg.Conversations),
		"discover", d.cfg.Discover, "interval", d.cfg.Tick.Interval, "rate_profile", d.cfg.Slack.RateProfile)
	err = d.poller.Run(ctx)
	d.log.Info("slackpoll stopped")
	if derr := d.store.Err(); derr != nil && err == nil {
		return derr
	}
	return err
}

// untilDamaged returns ctx, also cancelled when the store meets damage — in a tick,
// an API request or a delivery — so that the daemon stops (exit 1, the damage as its
// error) instead of going on with a store that fails every transaction.
func (d *daemon) untilDamaged(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-d.store.Failed():
			d.log.Error("store damaged: stopping", "err", d.store.Err())
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// cmdOnce is `slackpoll once`: one tick. A tick that stopped on budget or deadline, or
// in which some conversations failed, is a success.
func cmdOnce(ctx context.Context, c *cmdCtx) (err error) {
	d, err := c.startDaemon()
	if err != nil {
		return err
	}
	defer d.close(&err)
	stopProj := d.runProjections(ctx)
	defer stopProj()
	_, err = d.poller.Tick(ctx)
	if derr := d.store.Err(); derr != nil {
		return derr // whatever part of the tick met it, the store fails every transaction now
	}
	if err == nil {
		d.drainProjections(ctx, projectionDrain)
	}
	if d.deliverer != nil && err == nil {
		d.deliverer.Sweep(ctx) // what the tick wrote to the outbox, once; the rest waits for run
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted; everything read before the signal is stored")
	}
	return err
}
