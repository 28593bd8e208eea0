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
	o.Projections = demoProjections(dir, c.postgres)
	o.Out = c.env.Stdout
	o.Log = slog.New(slog.NewTextHandler(c.env.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))

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
