package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/slackpoll/slackpoll/config"
	"github.com/slackpoll/slackpoll/internal/httpapi"
	"github.com/slackpoll/slackpoll/internal/metrics"
	"github.com/slackpoll/slackpoll/internal/poller"
	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackapi"
	"github.com/slackpoll/slackpoll/internal/status"
	"github.com/slackpoll/slackpoll/internal/workspace"
)

// fleet is `run` for many workspaces (store.dir, workspaces:): a supervisor of
// workspaces, each with the feed, webhooks and projection a one-workspace daemon
// has, behind one API, one metrics registry and one log.
type fleet struct {
	cfg     *config.Config
	log     *slog.Logger
	level   *slog.LevelVar
	metrics *metrics.Metrics
	sup     *workspace.Supervisor
	inst    *installations // the sealed registrations; nil without a key
	// httpClient makes every workspace's Slack calls: connections are reused
	// across workspaces.
	httpClient *http.Client

	mu      sync.Mutex
	daemons map[*workspace.Unit]*unitDaemon
}

// unitDaemon is one workspace seen as the one-workspace daemon's parts (the
// deliverer, retention and projection code is theirs), and its API, built on
// first use.
type unitDaemon struct {
	*daemon
	u       *workspace.Unit
	apiOnce sync.Once
	api     http.Handler
}

// cmdRunFleet runs every workspace until ctx ends.
func cmdRunFleet(ctx context.Context, c *cmdCtx, cfg *config.Config) (err error) {
	if err := cfg.RequireWorkspaceTokens(); err != nil {
		return err
	}
	if err := cfg.RequireWebhookSecrets(); err != nil {
		return err
	}
	if cfg.Projection.Postgres.DSN.IsSet() {
		return usageErr("%s: projection.postgres with store.dir (many workspaces) is not supported yet: each workspace would hold its own connection pool; each workspace gets its own SQLite projection (<store.dir>/<team_id>.sqlite)", cfg.File())
	}
	if err := os.MkdirAll(cfg.Store.Dir, 0o700); err != nil {
		return fmt.Errorf("store.dir %s: %w", cfg.Store.Dir, err)
	}
	f := &fleet{cfg: cfg, level: &slog.LevelVar{}, metrics: metrics.New(), daemons: map[*workspace.Unit]*unitDaemon{},
		httpClient: &http.Client{Timeout: cfg.Slack.RequestTimeout.D()}}
	f.level.Set(logLevel(cfg.Log.Level))
	f.log = newLogger(f.level, cfg.Log.Format, c.env.Stderr)
	f.metrics.SetTickConfig(cfg.Tick.Interval.D(), cfg.Tick.SoftDeadline.D())
	f.metrics.SetWebhooks(webhookNames(cfg))
	f.metrics.SetWorkspaces(func() map[string]int {
		out := map[string]int{}
		for _, st := range f.sup.Statuses() {
			out[string(st.State)]++
		}
		return out
	})
	if f.inst, err = openInstallations(cfg, c.env.Getenv, f.log); err != nil {
		return err
	}
	if f.inst != nil {
		defer func() {
			if cerr := f.inst.close(); cerr != nil && err == nil {
				err = cerr
			}
		}()
	}
	f.sup = workspace.New(ctx, f.supervisorOptions())
	defer func() {
		if cerr := f.sup.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	specs, err := f.specs()
	if err != nil {
		return err
	}
	for _, spec := range specs {
		if _, err := f.sup.Start(spec); err != nil {
			return err
		}
	}
	stopHTTP, err := f.serveHTTP()
	if err != nil {
		return err
	}
	defer stopHTTP()
	f.log.Info("slackpoll started", "workspaces", len(specs), "store_dir", cfg.Store.Dir,
		"interval", cfg.Tick.Interval, "rate_profile", cfg.Slack.RateProfile, "runtime_registration", f.inst != nil)
	f.watchHangup(ctx, c)
	<-ctx.Done()
	stopHTTP() // before the stores close: requests in flight still read them
	f.log.Info("slackpoll stopping", "workspaces", f.sup.Len())
	return nil
}

// supervisorOptions are the config's templates for every workspace.
func (f *fleet) supervisorOptions() workspace.Options {
	cfg := f.cfg
	return workspace.Options{
		Dir: cfg.Store.Dir,
		Slack: slackapi.Options{
			APIURL: cfg.Slack.APIURL, RequestTimeout: cfg.Slack.RequestTimeout.D(),
			HTTPClient: f.httpClient,
			Rates:      cfg.Slack.RatesPerMinute(), OnCall: f.metrics.OnCall, OnClockSkew: f.metrics.OnClockSkew,
		},
		Poller: func() poller.Config {
			pc := pollerConfig(cfg, f.log)
			pc.Feed = feedConfig(cfg)
			return pc
		}(),
		Logger: f.log,
		OnTick: func(_ *workspace.Unit, s rm.TickSummary) { f.metrics.OnTick(s) },
		OnChanges: func(u *workspace.Unit, _ uint64) {
			if d := f.daemonOf(u); d != nil {
				d.wakeDeliverer()
			}
		},
		Attach: f.attach,
	}
}

// attach starts a workspace's webhook deliveries, feed retention and SQLite
// projection, as the one-workspace daemon runs them.
func (f *fleet) attach(ctx context.Context, u *workspace.Unit) (stop func()) {
	rl := &reloadable{}
	convs := slices.Clone(u.Spec().Conversations)
	rl.conversations.Store(&convs)
	d := &daemon{cfg: f.cfg, log: u.Log(), store: u.Store(), model: u.Model(), poller: u.Poller(),
		metrics: f.metrics, notifier: u.Notifier(), reloadable: rl, slackNow: u.Source().SlackNow}
	d.proj = projection.NewRunner(d.model, d.log, f.projectionSpecs(u)...)
	d.deliverer = d.newDeliverer()
	d.warnRestored()
	ud := &unitDaemon{daemon: d, u: u}
	f.mu.Lock()
	f.daemons[u] = ud
	f.mu.Unlock()
	stopFeed := d.runFeed(ctx)
	stopProj := d.runProjections(ctx)
	return func() {
		stopFeed()
		d.drainProjections(context.Background(), runDrain)
		stopProj()
		f.mu.Lock()
		delete(f.daemons, u)
		f.mu.Unlock()
	}
}

// sqlitePath is a workspace's SQLite projection file, next to its store.
func sqlitePath(storePath string) string {
	return strings.TrimSuffix(storePath, filepath.Ext(storePath)) + ".sqlite"
}

// purgeProjection removes a purged workspace's SQLite projection (and SQLite's
// journal files): its rows are that team's messages too.
func (f *fleet) purgeProjection(teamID string) error {
	base := sqlitePath(workspace.StorePath(f.cfg.Store.Dir, teamID))
	for _, p := range []string{base, base + "-wal", base + "-shm", base + "-journal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("purging %s: %w", teamID, err)
		}
	}
	return nil
}

// projectionSpecs is a workspace's SQLite projection: its own file next to its
// store, so that no two workspaces contend for one database.
func (f *fleet) projectionSpecs(u *workspace.Unit) []projection.Spec {
	if !f.cfg.Projection.SQLite.Enabled || u.Store() == nil {
		return nil
	}
	path := sqlitePath(u.Store().Path())
	return []projection.Spec{{Kind: projection.KindSQLite, Name: path,
		Open: func(ctx context.Context) (*projection.Target, error) { return projection.OpenSQLite(ctx, path) }}}
}

func (f *fleet) daemonOf(u *workspace.Unit) *unitDaemon {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.daemons[u]
}

// specs are the workspaces to start: the config's, then the registrations the
// install API kept (a team listed in the config is the config's).
func (f *fleet) specs() ([]workspace.Spec, error) {
	var specs []workspace.Spec
	listed := map[string]bool{}
	for _, w := range f.cfg.Workspaces {
		if !f.owns(w.TeamID) {
			continue // another replica's (shard)
		}
		creds, err := f.configCredentials(w)
		if err != nil {
			return nil, err
		}
		listed[w.TeamID] = true
		specs = append(specs, workspace.Spec{
			TeamID: w.TeamID, EnterpriseID: w.EnterpriseID, Source: workspace.SourceConfig, Credentials: creds,
			Conversations: w.Conversations, Discover: w.Discover == config.DiscoverMember,
		})
	}
	if f.inst == nil {
		return specs, nil
	}
	kept, err := f.inst.specs(f, listed)
	if err != nil {
		return nil, err
	}
	return append(specs, kept...), nil
}

// serveHTTP serves the API of every workspace on http.listen, if set.
func (f *fleet) serveHTTP() (stop func(), err error) {
	cfg := f.cfg
	if cfg.HTTP.Listen == "" {
		return func() {}, nil
	}
	h := httpapi.New(httpapi.Options{
		Workspaces: f, Token: cfg.HTTP.Token.Reveal(), Metrics: f.metrics, Logger: f.log,
		Listen: cfg.HTTP.Listen, AllowedHosts: cfg.HTTP.AllowedHosts,
	})
	// Long polls of every workspace's feed answer at shutdown, not when cut.
	closeFeeds := func() {
		for _, u := range f.sup.Units() {
			if n := u.Notifier(); n != nil {
				n.Close()
			}
		}
	}
	return serveAPI(f.log, cfg.HTTP.Listen, cfg.HTTP.Token.IsSet(), h, closeFeeds)
}

// List is httpapi.Workspaces's: every workspace's status.
func (f *fleet) List() []workspace.Status { return f.sup.Statuses() }

// Get is httpapi.Workspaces's.
func (f *fleet) Get(teamID string) (workspace.Status, bool) {
	u, ok := f.sup.Unit(teamID)
	if !ok {
		return workspace.Status{}, false
	}
	return u.Status(), true
}

// Handler is httpapi.Workspaces's: the workspace's API, built on first use.
func (f *fleet) Handler(teamID string) (http.Handler, bool) {
	u, ok := f.sup.Unit(teamID)
	if !ok {
		return nil, false
	}
	return f.handlerOf(u)
}

// Feeds is httpapi.Workspaces's: the feeds of the workspaces whose store is open.
func (f *fleet) Feeds() []httpapi.Feed {
	var out []httpapi.Feed
	for _, u := range f.sup.Units() {
		if d := f.daemonOf(u); d != nil {
			out = append(out, httpapi.Feed{TeamID: u.TeamID(), Store: d.store})
		}
	}
	return out
}

// Only is httpapi.Workspaces's.
func (f *fleet) Only() (http.Handler, bool) {
	u, ok := f.sup.Only()
	if !ok {
		return nil, false
	}
	return f.handlerOf(u)
}

func (f *fleet) handlerOf(u *workspace.Unit) (http.Handler, bool) {
	d := f.daemonOf(u)
	if d == nil {
		return nil, false // not running: paused, damaged
	}
	d.apiOnce.Do(func() {
		d.api = httpapi.NewWorkspace(httpapi.Options{
			Store: d.model, Projections: d.proj, Configured: d.reloadable.configured(), Interval: f.cfg.Tick.Interval.D(),
			Metrics: f.metrics, Logger: d.log, Notifier: d.notifier, OnRequeue: d.wakeDeliverer,
			Webhooks: webhookNames(f.cfg), Running: d.poller.Running, SpoolDir: f.cfg.Store.Dir,
			MCP: d.mcpServer().Handler(),
			WorkspaceState: func() *status.WorkspaceState {
				st := u.Status()
				return &status.WorkspaceState{TeamID: st.TeamID, State: string(st.State), Reason: st.Reason}
			},
		})
	})
	return d.api, true
}

// watchHangup reloads log.level on every SIGHUP; the other settings, the listed
// workspaces among them, take effect at a restart (the install API adds and removes
// workspaces while the daemon runs).
func (f *fleet) watchHangup(ctx context.Context, c *cmdCtx) {
	onHangup(ctx, c, func() {
		next, err := c.loadConfig()
		if err != nil {
			f.log.Error("SIGHUP: config not reloaded; the daemon goes on with the config it started with", "err", err)
			return
		}
		f.level.Set(logLevel(next.Log.Level))
		restart := restartOnly(f.cfg, next)
		f.log.Info("SIGHUP: config reloaded", "config", next.File(), "applied", "log.level="+next.Log.Level)
		if len(restart) > 0 {
			f.log.Warn("SIGHUP: these settings changed in the file but take effect only at a restart (workspaces: the install API adds and removes them while the daemon runs)", "settings", strings.Join(restart, ", "))
		}
	})
}
