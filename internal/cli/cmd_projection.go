package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/slackpoll/slackpoll/config"
	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/projection"
)

// cmdProjection is `slackpoll projection rebuild|verify`.
func cmdProjection(ctx context.Context, c *cmdCtx) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	switch c.args[0] {
	case "rebuild":
		return projectionRebuild(ctx, c, cfg)
	case "verify":
		return projectionVerify(ctx, c, cfg)
	}
	return usageErr("projection: %q is not a subcommand: want rebuild or verify", c.args[0])
}

// projectionRebuild drops the projection's rows and writes them again from the
// store: through the running daemon (which logs the progress), or from the store
// file.
func projectionRebuild(ctx context.Context, c *cmdCtx, cfg *config.Config) error {
	r, err := openReader(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }() // read-only
	if r.api != nil {
		var out struct {
			Rebuilding int `json:"rebuilding"`
		}
		if err := r.api.post("/v1/projection/rebuild", struct{}{}, &out); err != nil {
			return err
		}
		fmt.Fprintf(c.env.Stdout, "the running daemon is rebuilding %d projection(s); its log and `slackpoll status` show the progress\n", out.Rebuilding)
		return nil
	}
	specs := projectionSpecs(cfg)
	if len(specs) == 0 {
		return projection.ErrNoProjection
	}
	log := slog.New(slog.NewTextHandler(c.env.Stderr, nil))
	for _, s := range specs {
		t, err := s.Open(ctx)
		if err != nil {
			return err
		}
		p := projection.New(projection.Options{Store: r.store, Target: t, Log: log})
		err = p.Sync(ctx, true)
		_ = t.Close()
		if err != nil {
			return fmt.Errorf("rebuilding the %s projection: %w", s.Kind, err)
		}
		st := p.Status()
		fmt.Fprintf(c.env.Stdout, "%s projection rebuilt: %d messages, cursor %d\n", s.Kind, st.Applied.Inserted, st.CursorSeq)
	}
	return nil
}

// projectionVerify compares each projection with the store row for row; a
// difference is exit status 1. The store must not change meanwhile: it needs the
// store file, so no daemon may hold it.
func projectionVerify(ctx context.Context, c *cmdCtx, cfg *config.Config) error {
	s, err := boltstore.Open(cfg.Store.Path, boltstore.Options{ReadOnly: true, LockTimeout: readLockTimeout})
	if err != nil {
		return fmt.Errorf("%w (verify compares the projection with a store that does not change: stop the daemon first)", err)
	}
	defer func() { _ = s.Close() }() // read-only
	specs := projectionSpecs(cfg)
	if len(specs) == 0 {
		return projection.ErrNoProjection
	}
	differ := false
	for _, spec := range specs {
		var t *projection.Target
		if spec.Kind == projection.KindSQLite {
			t, err = projection.OpenSQLiteReader(ctx, cfg.SQLitePath())
		} else {
			t, err = projection.OpenPostgresReader(ctx, cfg.Projection.Postgres.DSN.Reveal(), cfg.Projection.Postgres.Schema)
		}
		if err != nil {
			return err
		}
		rep, err := projection.Verify(ctx, s, t)
		_ = t.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(c.env.Stdout, "SQL projection (%s) matches: %s\n", spec.Kind, rep)
		if !rep.Equal() {
			differ = true
			fmt.Fprintln(c.env.Stdout, "  "+strings.Join(rep.Differences, "\n  "))
		}
	}
	if differ {
		return fmt.Errorf("the projection differs from the store: start the daemon (it syncs at start) or run slackpoll projection rebuild")
	}
	return nil
}
