// Package cli implements slackpoll's command line (README, "Commands"): argument parsing,
// wiring of config, store, Slack source and poller, and exit statuses. cmd/slackpoll
// only installs signal handling and calls Main.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/slackpoll/slackpoll/config"
)

// Exit statuses (README, "Commands").
const (
	ExitOK      = 0
	ExitRuntime = 1 // token rejected, store locked, Slack unreachable, ...
	ExitUsage   = 2 // bad arguments or config
)

const usage = `slackpoll keeps a local read model of Slack conversations by polling.

Usage:
  slackpoll run    [--config F]            daemon: ticks until SIGINT/SIGTERM
  slackpoll once   [--config F]            one tick, then exit
  slackpoll status [--config F] [--json]   coverage, staleness, per-conversation state, last tick
  slackpoll show   [--config F] [--json] CHANNEL TS | LINK | --record KEY
                                          one message with its thread and resolved names
  slackpoll export [--config F]            the whole read model as JSON Lines on stdout
  slackpoll track  [--config F] [--record KEY] CHANNEL TS | LINK
                                          LINK: a message link from Slack's "Copy link"
  slackpoll untrack [--config F] CHANNEL TS  undo track (and free its record key)
  slackpoll retry  [--config F] [CHANNEL...] conversations waiting after an error (a scope
                                          added, the bot invited) are read at the next tick
  slackpoll changes [--config F] [--after SEQ] [--follow] [--kind K] [--channel C] [--record R] [--own B]
                                          the change feed as JSON Lines
  slackpoll outbox  [--config F] [--webhook NAME] [--parked] [--json]
                                          webhook deliveries waiting, held or parked
  slackpoll outbox  [--config F] --drop --webhook NAME
                                          drop the rows of a webhook removed from the config
  slackpoll requeue [--config F] --webhook NAME [SEQ...]
                                          parked deliveries back in line
  slackpoll search [--config F] [--channel C] [--user U] [--after T] [--before T] [--record R] [--limit N] [--json] QUERY...
                                          full-text search of the SQL projection, newest first
  slackpoll projection rebuild|verify [--config F]
                                          rebuild the SQL projection, or compare it with the store
  slackpoll demo   [--duration D] [--seed N] [--postgres DSN] [--workspaces N]
                                          runs against built-in simulated workspaces
  slackpoll demo   --listen ADDR [--api ADDR] [--dir D]
                                          serves a changing simulated workspace to poll with run
  slackpoll mcp    [--config F] [--print-config CLIENT [--transport stdio|http]]
                                          the MCP server for agents, on stdio (read-only)
  slackpoll config [--config F]            the effective config, secrets redacted
  slackpoll config --defaults              the commented defaults, to start a config file from
  slackpoll backup [--config F] [--force] FILE
                                          a consistent copy of the store, also while run holds it
  slackpoll restore [--config F] FILE      put a backup in place of the store (daemon stopped)
  slackpoll healthcheck [--config F] [--live]  exit 0 when the daemon's /readyz (--live: /healthz) answers 200
  slackpoll workspaces [list] [--config F] [--json]
                                          the running daemon's workspaces (store.dir) and their state
  slackpoll workspaces add TEAM_ID --token-env VAR [--refresh-token-env VAR --expires-in S]
                   [--conversations C,…] [--discover member] [--enterprise-id E]
                                          register an installation (checked with auth.test)
  slackpoll workspaces remove TEAM_ID [--purge]
                                          stop polling it; --purge also deletes its store
  slackpoll version                        version, VCS revision and Go version

The config path defaults to $SLACKPOLL_CONFIG, else ./slackpoll.yaml; run and once
read the bot token from slack.token (default ${SLACK_BOT_TOKEN}). --config may also
come before the command, and flags may follow the arguments; "slackpoll COMMAND
--help" describes a command's flags.
Exit status: 0 success, 1 runtime failure, 2 usage or config error.
`

// Env is what a command may touch of the outside world.
type Env struct {
	// Stdin is read by `slackpoll mcp` (the MCP stdio transport); nil reads nothing.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads the environment (os.Getenv in main).
	Getenv func(string) string
	// Hangup receives a value on every SIGHUP (nil: none). `run` reloads its config;
	// every other command ends as on SIGINT.
	Hangup <-chan struct{}
}

// exitError carries the exit status a failure maps to.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{ExitUsage, fmt.Errorf(format, args...)}
}

func runtimeErr(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	if errors.Is(err, config.ErrInvalid) {
		return &exitError{ExitUsage, err}
	}
	return &exitError{ExitRuntime, err}
}

// Main runs the command line args (without the program name) and returns the exit
// status. ctx is cancelled on the first SIGINT/SIGTERM.
func Main(ctx context.Context, args []string, env Env) int {
	err := dispatch(ctx, args, env)
	if err == nil {
		return ExitOK
	}
	code := ExitRuntime
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	} else if errors.Is(err, config.ErrInvalid) {
		code = ExitUsage
	}
	fmt.Fprintf(env.Stderr, "slackpoll: %v\n", err)
	// A usage error says where the usage is rather than burying the error under it.
	var he *helpError
	if errors.As(err, &he) {
		fmt.Fprintln(env.Stderr, he.hint())
	}
	return code
}

type command struct {
	name  string
	about string // one line for COMMAND --help
	args  string // positional arguments, for errors
	nargs int
	run   func(ctx context.Context, c *cmdCtx) error
	flags func(fs *pflag.FlagSet, c *cmdCtx)
	// argsOK, if set, checks the positional arguments instead of nargs.
	argsOK func(c *cmdCtx) error
	// noConfig marks the commands that read no config file.
	noConfig bool
}

func (cmd *command) usesConfig() bool { return !cmd.noConfig }

// cmdCtx is what a command gets: parsed flags and arguments, and the environment.
type cmdCtx struct {
	env        Env
	configPath string
	// cmd is the command's name; workspace its --workspace (with store.dir: the
	// team_id of the workspace a command acts on).
	cmd       string
	workspace string
	jsonOut   bool
	record    string
	duration  string
	seed      int64
	postgres  string // demo --postgres
	// demo --workspaces: how many simulated workspaces one daemon runs
	workspaces int
	feed       feedFlags
	search     searchFlags
	live       demoLive // demo --listen: the explorable demo
	// healthcheck --live: /healthz instead of /readyz
	liveOnly bool
	// backup --force: replace an existing FILE
	force bool
	// config --defaults: the commented default config
	defaults bool
	mcp      mcpFlags
	ws       workspacesFlags
	args     []string
}

var commands = []command{
	{name: "run", about: "Poll Slack forever: a tick at once, then every tick.interval, until SIGINT/SIGTERM.", run: cmdRun},
	{name: "once", about: "Run one tick (bulk window, threads, users, tail rotation), then exit.", run: cmdOnce},
	{name: "status", about: "Show coverage, staleness, per-conversation state and the last tick.", run: cmdStatus, flags: func(fs *pflag.FlagSet, c *cmdCtx) {
		fs.BoolVar(&c.jsonOut, "json", false, "print JSON instead of a table")
	}},
	{name: "show", about: "Show one message with its thread, reactions and display names.", args: "CHANNEL TS | LINK", nargs: 2, argsOK: messageArgs("show"), run: cmdShow, flags: func(fs *pflag.FlagSet, c *cmdCtx) {
		fs.StringVar(&c.record, "record", "", "show the message tracked under this record key instead of CHANNEL TS")
		fs.BoolVar(&c.jsonOut, "json", false, "print the export line")
	}},
	{name: "export", about: "Print the whole read model as JSON Lines (conversations, messages, users).", run: cmdExport},
	{name: "track", about: "Track a message (read first on the next tick), optionally under a record key of yours.", args: "CHANNEL TS | LINK", nargs: 2, argsOK: messageArgs("track"), run: cmdTrack, flags: func(fs *pflag.FlagSet, c *cmdCtx) {
		fs.StringVar(&c.record, "record", "", "attach this record key (an id of yours, e.g. ticket-42)")
	}},
	{name: "changes", about: "Print the change feed as JSON Lines: what changed, in seq order; --follow keeps printing.", run: cmdChanges, flags: changesFlags},
	{name: "outbox", about: "List the webhooks' rows waiting for delivery (or parked after failing).", run: cmdOutbox, flags: func(fs *pflag.FlagSet, c *cmdCtx) {
		fs.StringVar(&c.feed.webhook, "webhook", "", "only this webhook's rows")
		fs.BoolVar(&c.feed.parked, "parked", false, "only parked rows")
		fs.BoolVar(&c.jsonOut, "json", false, "print JSON Lines")
		fs.BoolVar(&c.feed.drop, "drop", false, "delete every row of --webhook, a webhook removed from the config (its changes stay in the feed)")
	}},
	{name: "requeue", about: "Put a webhook's parked outbox rows back in line (all of them, or the SEQs given).", args: "[SEQ...]", nargs: -1, run: cmdRequeue, flags: func(fs *pflag.FlagSet, c *cmdCtx) {
		fs.StringVar(&c.feed.webhook, "webhook", "", "the webhook whose parked rows to requeue (required)")
	}},
	{name: "retry", about: "Read conversations that wait after an error (missing_scope, not_in_channel, …) at the next tick, not an hour later.", args: "[CHANNEL...]", nargs: -1, run: cmdRetry},
	{name: "untrack", about: "Stop tracking a message on request and free its record key; its stored content stays.", args: "CHANNEL TS", nargs: 2, run: cmdUntrack},
	{name: "demo", about: "Run the daemon against a built-in simulated Slack workspace; no token needed.", run: cmdDemo, flags: func(fs *pflag.FlagSet, c *cmdCtx) {
		fs.StringVar(&c.duration, "duration", "30s", "how long the simulated workspace changes before the final comparison")
		fs.Int64Var(&c.seed, "seed", 1, "seed of the generated workspace, its changes and faults")
		fs.StringVar(&c.postgres, "postgres", "", "also project into this Postgres database (schema "+demoSchema+", emptied first), e.g. postgres://user:pw@127.0.0.1:5432/db")
		fs.IntVar(&c.workspaces, "workspaces", 1, "simulated workspaces in one daemon; from 2, one has a rotating token and, from 3, one is revoked part-way")
		c.live.flags(fs)
	}, noConfig: true},
	{name: "search", about: "Search the messages (full text, newest first) in the SQL projection.", args: "QUERY...", nargs: -1, argsOK: func(c *cmdCtx) error {
		if len(c.args) == 0 {
			return usageErr("search needs a query: words (each matches the start of a word), \"a phrase\", or Chinese/Japanese/Korean text")
		}
		return nil
	}, run: cmdSearch, flags: searchFlagSet},
	{name: "projection", about: "Rebuild the SQL projection from the store (rebuild), or compare it with the store row for row (verify).", args: "rebuild|verify", nargs: 1, run: cmdProjection},
	{name: "mcp", about: "Serve the read model to AI agents over MCP on stdin/stdout (read-only); --print-config CLIENT prints a client's config.", run: cmdMCP, flags: mcpFlagSet},
	{name: "config", about: "Print the effective config (defaults, file, environment) with secrets redacted; --defaults prints the commented defaults to start a file from.", run: cmdConfig, flags: func(fs *pflag.FlagSet, c *cmdCtx) {
		fs.BoolVar(&c.defaults, "defaults", false, "print the built-in, commented default config (config/slackpoll.yaml) instead: slackpoll config --defaults > slackpoll.yaml")
	}},
	{name: "backup", about: "Write a consistent copy of the store to FILE, also while run holds it (through its API).", args: "FILE", nargs: 1, run: cmdBackup, flags: func(fs *pflag.FlagSet, c *cmdCtx) {
		fs.BoolVar(&c.force, "force", false, "replace FILE if it exists")
	}},
	{name: "restore", about: "Put the backup FILE in place of the store, for the daemon's user, mode 0600 (stop the daemon first); the change feed skips the seqs the replaced store handed out.", args: "FILE", nargs: 1, run: cmdRestore},
	{name: "healthcheck", about: "Exit 0 when the running daemon answers /readyz (store readable, token accepted), else 1: for container health checks.", run: cmdHealthcheck, flags: func(fs *pflag.FlagSet, c *cmdCtx) {
		fs.BoolVar(&c.liveOnly, "live", false, "ask /healthz (the process serves) instead of /readyz")
	}},
	{name: "workspaces", about: "List the workspaces of the running daemon (store.dir) with their state; add one (tokens from environment variables), or remove one (--purge: and what is kept of it).", args: "[list | add TEAM_ID | remove TEAM_ID]", nargs: -1, run: cmdWorkspaces, flags: workspacesFlagSet},
	{name: "version", about: "Print the version, VCS revision and Go version of this binary.", run: cmdVersion, noConfig: true},
}

func dispatch(ctx context.Context, args []string, env Env) error {
	c := &cmdCtx{env: env}
	args, done, err := globalFlags(args, c)
	if err != nil || done {
		return err
	}
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, usage+"\n")
		return usageErr("no command given")
	}
	var cmd *command
	for i := range commands {
		if commands[i].name == args[0] {
			cmd = &commands[i]
		}
	}
	if cmd == nil {
		return &helpError{usageErr("unknown command %q", args[0]), ""}
	}
	global := c.configPath
	c.cmd = cmd.name
	fs := pflag.NewFlagSet(cmd.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if cmd.usesConfig() {
		fs.StringVarP(&c.configPath, "config", "c", global, "config file (default $SLACKPOLL_CONFIG, else ./slackpoll.yaml)")
		fs.StringVarP(&c.workspace, "workspace", "w", "", "with many workspaces (store.dir): the team_id of the one to act on")
	} else if global != "" {
		return &helpError{usageErr("%s takes no --config", cmd.name), cmd.name}
	}
	if cmd.flags != nil {
		cmd.flags(fs, c)
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintf(env.Stdout, "Usage: slackpoll %s [flags] %s\n\n%s\n\nFlags:\n%s", cmd.name, cmd.args, cmd.about, fs.FlagUsages())
			return nil
		}
		return &helpError{usageErr("%s: %v", cmd.name, err), cmd.name}
	}
	c.args = fs.Args()
	want := cmd.nargs
	if cmd.name == "show" && c.record != "" {
		want = 0
	}
	if cmd.argsOK != nil {
		if err := cmd.argsOK(c); err != nil {
			return &helpError{err, cmd.name}
		}
	} else if want >= 0 && len(c.args) != want {
		if want == 0 {
			return &helpError{usageErr("%s takes no arguments, got %q", cmd.name, strings.Join(c.args, " ")), cmd.name}
		}
		return &helpError{usageErr("%s needs %s, got %q", cmd.name, cmd.args, strings.Join(c.args, " ")), cmd.name}
	}
	if cmd.name != "run" && env.Hangup != nil {
		// Only the daemon reloads on SIGHUP; for the others it is the terminal going
		// away: end as on SIGINT.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-env.Hangup:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return runtimeErr(cmd.run(ctx, c))
}
