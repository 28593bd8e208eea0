package cli

import (
	"context"
	"errors"
	"fmt"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// cmdExport is `slackpoll export`: the whole read model as JSON Lines on stdout
// (design.md §6).
func cmdExport(ctx context.Context, c *cmdCtx) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	store, err := openStoreReadOnly(cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	return store.View(func(tx rm.Tx) error { return rm.Export(tx, c.env.Stdout, cfg.Conversations) })
}

// cmdTrack is `slackpoll track [--record KEY] CHANNEL TS`: adds the message to the
// tracked set (created in the store if needed); the next tick reads it.
func cmdTrack(ctx context.Context, c *cmdCtx) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	ch, tsArg := c.args[0], c.args[1]
	ts, err := rm.ParseTS(tsArg)
	if err != nil {
		return usageErr("track: %v", err)
	}
	store, err := openStore(cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := rm.Track(store, ch, ts, c.record); err != nil {
		if errors.Is(err, rm.ErrRecordConflict) {
			return fmt.Errorf("track: %w", err)
		}
		return err
	}
	fmt.Fprintf(c.env.Stdout, "tracking %s %s", ch, ts)
	if c.record != "" {
		fmt.Fprintf(c.env.Stdout, " as %s", c.record)
	}
	fmt.Fprintln(c.env.Stdout)
	return nil
}
