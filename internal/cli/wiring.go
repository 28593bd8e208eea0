package cli

import (
	"io"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/slackpoll/slackpoll/config"
	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackapi"
	"github.com/slackpoll/slackpoll/internal/workspace"
)

// loadConfig loads the config named by --config, $SLACKPOLL_CONFIG or ./slackpoll.yaml,
// and logs its warnings to stderr.
func (c *cmdCtx) loadConfig() (*config.Config, error) {
	path := c.configPath
	if path == "" {
		path = c.env.Getenv(config.EnvConfig)
	}
	if path == "" {
		path = config.DefaultPath
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	// Keys of an earlier release (renamed, removed) still load: every command says
	// what to write instead, in the log's format.
	for _, w := range cfg.Warnings() {
		newLogger(logLevel(cfg.Log.Level), cfg.Log.Format, c.env.Stderr).Warn("config: " + w.String())
	}
	return c.scopeToWorkspace(cfg)
}

// fleetCommands act on every workspace of a config with store.dir; the others act
// on one, named by --workspace.
var fleetCommands = []string{"run", "config", "healthcheck", "workspaces", "status"}

// scopeToWorkspace makes a config of many workspaces (store.dir) the config of the
// one --workspace names, as a one-workspace config: its store, token and
// conversations. Without --workspace, a command that acts on one workspace is
// refused with what to write.
func (c *cmdCtx) scopeToWorkspace(cfg *config.Config) (*config.Config, error) {
	if !cfg.MultiWorkspace() {
		if c.workspace != "" {
			return nil, usageErr("--workspace %s: %s polls one workspace (no store.dir): leave --workspace out", c.workspace, orDefaults(cfg.File()))
		}
		return cfg, nil
	}
	if c.workspace == "" {
		if slices.Contains(fleetCommands, c.cmd) {
			return cfg, nil
		}
		return nil, usageErr("%s polls many workspaces (store.dir): say which with --workspace TEAM_ID (slackpoll workspaces lists them)", orDefaults(cfg.File()))
	}
	if !workspace.ValidTeamID(c.workspace) {
		return nil, usageErr("--workspace %q: want a team_id (T… or E…, uppercase letters and digits)", c.workspace)
	}
	one := *cfg
	one.Store.Path = workspace.StorePath(cfg.Store.Dir, c.workspace)
	one.Store.Dir, one.Workspaces = "", nil
	one.HTTP.PathPrefix = "/v1/workspaces/" + c.workspace
	one.Slack.Token = ""
	one.Projection.SQLite.Path = "" // each workspace's is next to its store
	for _, w := range cfg.Workspaces {
		if w.TeamID == c.workspace {
			one.Slack.Token, one.Conversations, one.Discover = w.Token, w.Conversations, w.Discover
		}
	}
	return &one, nil
}

// orDefaults names a config file in messages, or the built-in defaults.
func orDefaults(file string) string {
	if file == "" {
		return config.DefaultFile
	}
	return file
}

// newLogger builds the logger of log.format, writing to w, whose level follows level
// (log.level; SIGHUP changes it).
func newLogger(level slog.Leveler, format string, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// openStore opens the read-write store (creating it), failing within a second when
// another process holds it; log gets what the store repairs by itself.
func openStore(cfg *config.Config, log *slog.Logger) (*boltstore.Store, error) {
	return boltstore.Open(cfg.Store.Path, boltstore.Options{Logger: log})
}

// newSource builds the slack-go source of the config; httpClient may be nil.
func newSource(cfg *config.Config, store rm.Store, log *slog.Logger, httpClient *http.Client, onCall func(string, string, time.Duration), onSkew func(time.Duration)) (*slackapi.Client, error) {
	return slackapi.New(slackapi.Options{
		Token:          cfg.Slack.Token.Reveal(),
		APIURL:         cfg.Slack.APIURL,
		HTTPClient:     httpClient,
		RequestTimeout: cfg.Slack.RequestTimeout.D(),
		Rates:          cfg.Slack.RatesPerMinute(),
		Pacing:         slackapi.StorePacing(store),
		Logger:         log,
		OnCall:         onCall,
		OnClockSkew:    onSkew,
	})
}

// pollerConfig maps the config onto the poller's.
func pollerConfig(cfg *config.Config, log *slog.Logger) poller.Config {
	return poller.Config{
		Conversations: cfg.Conversations,
		Discover:      cfg.Discover == "member",
		Budget: poller.Budget{
			HistoryCalls:   cfg.Budget.HistoryCalls,
			RepliesCalls:   cfg.Budget.RepliesCalls,
			UsersInfoCalls: cfg.Budget.UsersInfoCalls,
			ReactionsCalls: cfg.Budget.ReactionsCalls,
		},
		Tracking: poller.TrackingPolicy{
			Horizon:      cfg.Tracking.Horizon.D(),
			HeadMaxAge:   cfg.Tracking.HeadMaxAge.D(),
			WatchedShare: cfg.Tracking.WatchedShare,
		},
		Rates:        cfg.Slack.RatesPerMinute(),
		Interval:     cfg.Tick.Interval.D(),
		SoftDeadline: cfg.Tick.SoftDeadline.D(),
		BulkWindow:   cfg.Window.Bulk.D(),
		UserCacheTTL: cfg.Users.CacheTTL.D(),
		Logger:       log,
	}
}
