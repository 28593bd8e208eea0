package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/slackpoll/slackpoll/config"
	"github.com/slackpoll/slackpoll/internal/boltstore"
)

// readLockTimeout bounds the wait for the store's lock in the read commands. The
// daemon holds the lock for as long as it runs, so waiting longer buys nothing; short,
// so that the fallback to the API (or the failure) comes within a second.
const readLockTimeout = 300 * time.Millisecond

// reader is where a read command reads: the store file, or (while the daemon holds
// it) the daemon's HTTP API. Exactly one of store and api is set.
type reader struct {
	store *boltstore.Store
	api   *apiClient
}

// Close releases the store, if one was opened.
func (r *reader) Close() error {
	if r.store != nil {
		return r.store.Close()
	}
	return nil
}

// openReader opens the store read-only; when another process holds its lock and
// http.listen is set, it reads through the daemon's API instead. Without http.listen
// a held lock fails at once, saying why and what to do.
func openReader(cfg *config.Config) (*reader, error) {
	return openStoreOrAPI(cfg, true, "read commands", readLockTimeout, nil)
}

// openWriter opens the store read-write for cmd (track, untrack, requeue); like
// openReader it falls back to the daemon's API when the lock is held and http.listen
// is set. What the store changes by itself (its mode) is logged to stderr.
func openWriter(cfg *config.Config, cmd string, stderr io.Writer) (*reader, error) {
	return openStoreOrAPI(cfg, false, cmd, readLockTimeout, newLogger(logLevel(cfg.Log.Level), cfg.Log.Format, stderr))
}

// openStoreOrAPI opens the store, or names the daemon's API when another process
// holds the store's lock (waiting for it up to lockTimeout) and http.listen is set;
// who is what the advice to set it names. log receives what the store changes by
// itself (nil: nothing is logged).
func openStoreOrAPI(cfg *config.Config, readOnly bool, who string, lockTimeout time.Duration, log *slog.Logger) (*reader, error) {
	s, err := boltstore.Open(cfg.Store.Path, boltstore.Options{ReadOnly: readOnly, LockTimeout: lockTimeout, Logger: log})
	if err == nil {
		return &reader{store: s}, nil
	}
	if errors.Is(err, boltstore.ErrLocked) {
		if cfg.HTTP.Listen != "" {
			return &reader{api: newAPIClient(cfg)}, nil
		}
		return nil, fmt.Errorf("%w\n(set http.listen so %s can ask the running daemon instead)", err, who)
	}
	return nil, err
}
