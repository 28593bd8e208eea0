package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	boltstore "github.com/slackpoll/slackpoll/internal/bolt"
)

// cmdBackup is `slackpoll backup FILE`: a consistent copy of the store in FILE, made
// in one bbolt read transaction (Tx.WriteTo), from the store file, or through the
// daemon's API (GET /v1/backup) while it holds the store. FILE is replaced only once
// the copy is complete and synced, and the copy is opened to check that it is a
// store of this version before the command succeeds.
func cmdBackup(ctx context.Context, c *cmdCtx) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	dst, err := filepath.Abs(c.args[0])
	if err != nil {
		return err
	}
	if same, _ := boltstore.SameFile(dst, cfg.Store.Path); same || dst == cfg.Store.Path {
		return usageErr("backup: %s is the store itself: give another file", c.args[0])
	}
	if st, err := os.Stat(filepath.Dir(dst)); err != nil || !st.IsDir() {
		return fmt.Errorf("backup: directory %s does not exist: create it first (mkdir -p %s)", filepath.Dir(dst), filepath.Dir(dst))
	}
	if _, err := os.Lstat(dst); err == nil && !c.force {
		return fmt.Errorf("backup: %s exists: give another name (e.g. with the date), or --force to replace it", c.args[0])
	}
	r, err := openReader(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }() // read-only
	var n int64
	from := "store " + cfg.Store.Path
	if r.api != nil {
		from = "the running daemon at " + r.api.base
		n, err = boltstore.WriteFileAtomic(dst, func(w io.Writer) (int64, error) {
			n, _, err := r.api.stream("/v1/backup", w)
			return n, err
		})
	} else {
		n, err = boltstore.WriteFileAtomic(dst, r.store.Backup)
	}
	if err != nil {
		return err
	}
	copyStore, err := boltstore.Open(dst, boltstore.Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("backup %s was written but does not open as a store: %w", dst, err)
	}
	if err := copyStore.Close(); err != nil {
		return err
	}
	fmt.Fprintf(c.env.Stdout, "backed up %s to %s (%d bytes)\n", from, dst, n)
	return nil
}
