package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/slackpoll/slackpoll/config"
	"github.com/slackpoll/slackpoll/internal/boltstore"
)

// readLockTimeout bounds the wait for the store's lock in the read commands. The
// daemon holds the lock for as long as it runs, so waiting longer buys nothing; short,
// so that the fallback to the API (or the failure) comes within a second. A variable
// for the test that shows the daemon's API is asked without this wait.
var readLockTimeout = 300 * time.Millisecond

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
//
// With http.listen set, the lock is tried once, without waiting: a held lock is most
// likely the running daemon's, and its API answers at once. Only when nothing listens
// there (the holder is a short command, not the daemon) does it wait lockTimeout for
// the lock, as it does without http.listen.
func openStoreOrAPI(cfg *config.Config, readOnly bool, who string, lockTimeout time.Duration, log *slog.Logger) (*reader, error) {
	open := func(timeout time.Duration) (*boltstore.Store, error) {
		return boltstore.Open(cfg.Store.Path, boltstore.Options{ReadOnly: readOnly, LockTimeout: timeout, Logger: log})
	}
	if cfg.HTTP.Listen != "" {
		s, err := open(lockTryOnce)
		if err == nil {
			return &reader{store: s}, nil
		}
		if !errors.Is(err, boltstore.ErrLocked) {
			return nil, err
		}
		if apiListening(cfg.HTTP.Listen) {
			return &reader{api: newAPIClient(cfg)}, nil
		}
	}
	s, err := open(lockTimeout)
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

// lockTryOnce makes Open try the lock once: bbolt gives up after its first attempt
// when the timeout is shorter than its 50 ms retry interval.
const lockTryOnce = time.Nanosecond

// apiListening reports whether something accepts connections at the address the API
// client dials for listen (on loopback: a refusal is immediate).
func apiListening(listen string) bool {
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(apiBaseURL(listen), "http://"), apiDialTimeout)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}
