package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	boltstore "github.com/slackpoll/slackpoll/internal/bolt"
)

// cmdRestore is `slackpoll restore FILE`: boltstore.Restore of the backup FILE onto
// store.path, with the daemon stopped (docs/operating.md, "Backup and restore").
func cmdRestore(ctx context.Context, c *cmdCtx) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	src, err := filepath.Abs(c.args[0])
	if err != nil {
		return err
	}
	res, err := boltstore.Restore(src, cfg.Store.Path, time.Now())
	if err != nil {
		return err
	}
	out := c.env.Stdout
	fmt.Fprintf(out, "restored %s to %s (mode 0600, owner %d:%d); its change feed ends at seq %d\n",
		src, cfg.Store.Path, res.UID, res.GID, res.FeedSeq)
	if r := res.Restore; r != nil {
		fmt.Fprintf(out, "the store it replaces handed out seqs up to %d: seqs %d to %d are never used again, new changes start at %d, and a feed cursor from %d to %d gets 410 Gone with this restore point\n",
			r.SkippedTo, r.Seq+1, r.SkippedTo, r.SkippedTo+1, r.Seq+1, r.SkippedTo)
	}
	if res.Replaced != "" {
		fmt.Fprintf(out, "the store it replaces is kept as %s: delete it once the restored store works\n", res.Replaced)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(c.env.Stderr, "slackpoll: warning: %s\n", w)
	}
	fmt.Fprintln(out, "start the daemon: its next ticks read again what changed in Slack since the backup")
	return nil
}
