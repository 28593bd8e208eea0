package cli

import (
	"context"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"

	"github.com/slackpoll/slackpoll/config"
	"github.com/slackpoll/slackpoll/internal/projection"
)

// projectionSpecs are the SQL projection's configured targets (projection:).
func projectionSpecs(cfg *config.Config) []projection.Spec {
	var specs []projection.Spec
	if cfg.Projection.SQLite.Enabled {
		path := cfg.SQLitePath()
		specs = append(specs, projection.Spec{Kind: projection.KindSQLite, Name: path,
			Open: func(ctx context.Context) (*projection.Target, error) { return projection.OpenSQLite(ctx, path) }})
	}
	if dsn := cfg.Projection.Postgres.DSN; dsn.IsSet() {
		schema := cfg.Projection.Postgres.Schema
		specs = append(specs, projection.Spec{Kind: projection.KindPostgres, Name: "postgres (schema " + schema + ")",
			Open: func(ctx context.Context) (*projection.Target, error) {
				return projection.OpenPostgres(ctx, dsn.Reveal(), schema)
			}})
	}
	return specs
}

// runProjections starts the projectors and returns the function that stops them and
// waits for them.
func (d *daemon) runProjections(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); d.proj.Run(ctx) }()
	return func() { cancel(); <-done }
}

// projectionDrain bounds how long `once` waits for the projection to apply what its
// tick wrote; runDrain how long `run` waits on SIGTERM, within its 5 s.
const (
	projectionDrain = time.Minute
	runDrain        = 1500 * time.Millisecond
)

// drainProjections waits up to d for the projectors to apply what the ticks wrote,
// so that `once` (and a stopped `run`) leave the projection current; past it (or a
// signal) it goes on: the next start syncs what is left.
func (d *daemon) drainProjections(ctx context.Context, wait time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := d.proj.WaitIdle(ctx); err != nil {
		d.log.Warn("projection: not current at exit; the next start syncs it", "err", err)
	}
}

// offlineProjections reads each configured projection's progress from its database,
// for `status` with no daemon: its cursor against the store's feed.
func offlineProjections(ctx context.Context, cfg *config.Config, store rm.Store) []projection.Status {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out []projection.Status
	for _, spec := range projectionSpecs(cfg) {
		var t *projection.Target
		var err error
		if spec.Kind == projection.KindSQLite {
			t, err = projection.OpenSQLiteReader(ctx, cfg.SQLitePath())
		} else {
			t, err = projection.OpenPostgresReader(ctx, cfg.Projection.Postgres.DSN.Reveal(), cfg.Projection.Postgres.Schema)
		}
		if err != nil {
			out = append(out, projection.Status{Target: spec.Kind, Name: spec.Name, State: projection.StateError, LastError: err.Error()})
			continue
		}
		st, err := projection.Offline(ctx, store, t)
		_ = t.Close()
		if err != nil {
			st.State, st.LastError = projection.StateError, err.Error()
		}
		out = append(out, st)
	}
	return out
}
