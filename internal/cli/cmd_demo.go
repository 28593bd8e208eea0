package cli

import (
	"context"
	"errors"
	"fmt"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/slackpoll/slackpoll/internal/demo"
	"github.com/slackpoll/slackpoll/internal/projection"
)

// cmdDemo is `slackpoll demo`: the real poller, Slack client and store against the
// built-in fake Slack on loopback, while a seeded stream of changes and injected faults
// hits the workspace; it ends by comparing the read model with the workspace. It
// needs no token and writes only to a temporary directory.
func cmdDemo(ctx context.Context, c *cmdCtx) error {
	if c.live.listen != "" {
		return cmdDemoLive(ctx, c)
	}
	o := demo.DefaultOptions()
	d, err := time.ParseDuration(c.duration)
	if err != nil || d <= 0 {
		return usageErr("demo: --duration %q: want a positive duration such as 30s", c.duration)
	}
	o.MutateFor = d
	o.Seed = c.seed
	switch {
	case c.workspaces < 1:
		return usageErr("demo: --workspaces %d: want 1 or more", c.workspaces)
	case c.workspaces > 1 && c.postgres != "":
		return usageErr("demo: --postgres projects one workspace: leave out --workspaces")
	}
	dir, err := os.MkdirTemp("", "slackpoll-demo-")
	if err != nil {
		return err
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(c.env.Stderr, "slackpoll demo: could not remove %s: %v\n", dir, err)
		}
	}()
	o.Dir = dir
	o.Out = c.env.Stdout
	o.Log = slog.New(slog.NewTextHandler(c.env.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	if c.workspaces > 1 {
		o.Workspaces = c.workspaces
		// Every first read in the feed too, so that each workspace's feed alone must
		// rebuild its store (checked at the end).
		o.Feed = rm.FeedConfig{Backfill: true}
		return demoWorkspaces(ctx, c, o)
	}
	o.Projections = demoProjections(dir, c.postgres)

	fmt.Fprintf(c.env.Stdout, "slackpoll demo: seed %d, fake Slack on 127.0.0.1, store %s/demo.db\n", o.Seed, dir)
	res, err := demo.Run(ctx, o)
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("demo interrupted")
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.env.Stdout, "%d ticks in %s (%d after the last change); Slack calls: %s; %d tracked messages\n",
		res.Ticks, res.Elapsed.Round(time.Second), res.TicksToConverge, demoCalls(res.Calls), res.Tracked)
	if n := len(res.Report.Differences); n > 0 {
		for _, d := range res.Report.Differences[:min(n, 20)] {
			fmt.Fprintln(c.env.Stdout, d)
		}
		return fmt.Errorf("read model differs from the workspace: %s (replay with: slackpoll demo --seed %d --duration %s)", res.Report, o.Seed, c.duration)
	}
	fmt.Fprintf(c.env.Stdout, "read model matches the workspace: %s\n", res.Report)
	return demoProjectionResults(c, res)
}

// demoWorkspaces is `slackpoll demo --workspaces N`: N simulated workspaces in one
// daemon (demo.RunWorkspaces), one line per workspace, then the summary. A workspace
// that differs from its truth, or a revoked one not stopped as token_rejected, is an
// error (exit status 1).
func demoWorkspaces(ctx context.Context, c *cmdCtx, o demo.Options) error {
	fmt.Fprintf(c.env.Stdout, "slackpoll demo: seed %d, %d workspaces in one daemon, fake Slack on 127.0.0.1, stores in %s (no SQL projection with several workspaces)\n",
		o.Seed, o.Workspaces, o.Dir)
	f, err := demo.RunWorkspaces(ctx, o)
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("demo interrupted")
	}
	if err != nil {
		return err
	}
	for _, w := range f.Workspaces {
		if w.Revoked {
			fmt.Fprintf(c.env.Stdout, "%s (revoked part-way): %s; %d changes, %d ticks; %s\n", w.TeamID, w.State, w.Mutations, w.Ticks, w.Reason)
			continue
		}
		role := ""
		if w.Rotating {
			role = fmt.Sprintf(" (rotating token: %d refreshes)", w.Refreshes)
		}
		fmt.Fprintf(c.env.Stdout, "%s%s: %s; %d changes, %d ticks (%d after the last change); %s\n",
			w.TeamID, role, w.State, w.Mutations, w.Ticks, w.TicksToConverge, w.Report)
	}
	if p := f.Problems(); len(p) > 0 {
		for _, d := range p[:min(len(p), 20)] {
			fmt.Fprintln(c.env.Stdout, d)
		}
		fmt.Fprintln(c.env.Stdout, f.Summary())
		return fmt.Errorf("read model differs from its workspace in %d places (replay with: slackpoll demo --workspaces %d --seed %d --duration %s)",
			len(p), o.Workspaces, o.Seed, c.duration)
	}
	fmt.Fprintf(c.env.Stdout, "%s in %s\n", "done", f.Elapsed.Round(time.Second))
	fmt.Fprintln(c.env.Stdout, f.Summary())
	return nil
}

// demoProjections are the demo's SQL projection targets: a SQLite file in dir, and
// Postgres when --postgres names a database (a schema of the demo's own, dropped at
// the end).
func demoProjections(dir, dsn string) []projection.Spec {
	path := filepath.Join(dir, "demo.sqlite")
	specs := []projection.Spec{{Kind: projection.KindSQLite, Name: path,
		Open: func(ctx context.Context) (*projection.Target, error) { return projection.OpenSQLiteNoSync(ctx, path) }}}
	if dsn != "" {
		specs = append(specs, projection.Spec{Kind: projection.KindPostgres, Name: "postgres (schema " + demoSchema + ")",
			Open: func(ctx context.Context) (*projection.Target, error) {
				t, err := projection.OpenPostgres(ctx, dsn, demoSchema)
				if err == nil {
					err = t.Reset(ctx)
				}
				return t, err
			}})
	}
	return specs
}

// demoSchema is the Postgres schema `demo --postgres` projects into; it is emptied
// at the start of each demo.
const demoSchema = "slackpoll_demo"

// demoProjectionResults prints each projection's comparison with the read model and
// the search it ran; a difference is an error.
func demoProjectionResults(c *cmdCtx, res demo.Result) error {
	var failed []string
	for _, p := range res.Projections {
		if p.Err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", p.Kind, p.Err))
		}
		if p.Query != "" {
			fmt.Fprintf(c.env.Stdout, "search %q in %s: %d messages (found the one it was taken from: %v)\n", p.Query, p.Kind, p.Hits, p.Found)
		}
		fmt.Fprintf(c.env.Stdout, "SQL projection (%s) matches: %d messages, %d reactions, %d differences\n",
			p.Kind, p.Report.Messages, p.Report.Reactions, len(p.Report.Differences)+p.Report.More)
		for _, d := range p.Report.Differences[:min(len(p.Report.Differences), 20)] {
			fmt.Fprintln(c.env.Stdout, "  "+d)
		}
		if !p.Report.Equal() {
			failed = append(failed, p.Kind+" differs from the read model")
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("SQL projection: %s", strings.Join(failed, "; "))
	}
	return nil
}

func demoCalls(calls map[string]int) string {
	total := 0
	var parts []string
	for _, m := range rm.Methods() {
		if n := calls[m]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", m, n))
			total += n
		}
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
}
