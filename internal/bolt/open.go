package boltstore

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the layout version this build reads and writes (see doc.go). It is
// stored in meta/"schema" when the file is created.
const SchemaVersion = 1

// DefaultLockTimeout is how long Open waits for the file lock when
// Options.LockTimeout is zero.
const DefaultLockTimeout = time.Second

// Options configure Open.
type Options struct {
	// LockTimeout bounds the wait for the file lock held by another process (bbolt
	// retries every 50 ms). ≤ 0 means DefaultLockTimeout (1s): never wait forever, so a
	// second daemon fails fast with ErrLocked.
	LockTimeout time.Duration
	// ReadOnly opens an existing store with a shared lock; writes fail. A missing file is
	// an error instead of being created.
	ReadOnly bool
	// NoSync skips fsync on commit (and of the feed mark). A crash can then corrupt
	// the file: tests and benchmarks only.
	NoSync bool
	// Now is the clock of the restore records Open makes; nil is time.Now.
	Now func() time.Time
	// Logger gets what the store repairs by itself (an index rebuilt from the
	// messages); nil discards.
	Logger *slog.Logger
}

// Open opens the store at path, creating it (mode 0600, with the current schema
// version) unless opts.ReadOnly. Errors name the path and what to do: one matching
// ErrLocked when the lock is held elsewhere, a *SchemaError (ErrSchemaVersion) when the
// schema version differs, others for a missing directory, a permission problem or a file
// that is not a slackpoll store.
func Open(path string, opts Options) (s *Store, err error) {
	err = guard(path, func() error {
		s, err = open(path, opts)
		return err
	})
	return s, err
}

func open(path string, opts Options) (*Store, error) {
	timeout := opts.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	fi, statErr := os.Stat(path)
	if statErr == nil && fi.IsDir() {
		return nil, fmt.Errorf("store %s is a directory: set store.path to a file in it, e.g. %s", path, filepath.Join(path, "slackpoll.db"))
	}
	// bbolt would report a missing file as a bare ENOENT; say what to do instead.
	if opts.ReadOnly && errors.Is(statErr, fs.ErrNotExist) {
		return nil, fmt.Errorf("store %s does not exist yet: run \"slackpoll once\" or \"slackpoll track\" to create it, or fix store.path", path)
	}
	var opened os.FileInfo
	var file *os.File
	defer func() {
		// bbolt panicked or faulted on the file: release the descriptor, and with it
		// the file lock, before guard reports it. Not through db.Close, which waits
		// for the locks a panic inside bbolt may have left held.
		if p := recover(); p != nil {
			releaseFile(file)
			panic(p)
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:  timeout,
		ReadOnly: opts.ReadOnly,
		NoSync:   opts.NoSync,
		// The identity of the file bbolt opens, whatever the path names later.
		OpenFile: func(name string, flag int, mode os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, mode)
			if err != nil {
				return nil, err
			}
			if opened, err = f.Stat(); err == nil {
				err = writableByOwner(path, opts.ReadOnly, opened)
			}
			if err == nil {
				// A file shorter than its pages faults bbolt on the first page it
				// lacks, maybe inside bbolt's own goroutines: refuse it before.
				err = checkLength(f)
			}
			if err != nil {
				_ = f.Close()
				return nil, err
			}
			file = f
			return f, nil
		},
		// The hashmap freelist keeps commits cheap as the file grows large.
		FreelistType: bolt.FreelistMapType,
	})
	if err != nil {
		return nil, openError(path, err)
	}
	s := &Store{db: db, path: path, opened: opened, file: file, failed: make(chan struct{}), log: opts.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if opts.ReadOnly {
		err = db.View(func(btx *bolt.Tx) error { return checkSchema(btx, path) })
	} else {
		err = db.Update(func(btx *bolt.Tx) error { return initSchema(btx, path) })
	}
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	if !opts.ReadOnly {
		if err := s.private(file, opened); err != nil {
			_ = db.Close()
			return nil, err
		}
		now := time.Now
		if opts.Now != nil {
			now = opts.Now
		}
		s.mark = &feedMark{path: MarkPath(path), noSync: opts.NoSync, owner: ownerOf(opened)}
		if s.restored, err = s.catchUpFeed(now()); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("store %s: %w", path, err)
		}
	}
	return s, nil
}

// private takes the group's and other users' permissions off a store that has them
// (a copy, a restore), as a new store is created without: it holds message texts. It
// changes nothing else, and says what it did. It runs only once the file is known to
// be a store, on the descriptor bbolt opened (so nothing swapped in at the path since
// is touched), and not when the path is a symlink: the mode of a file elsewhere is its
// owner's choice.
func (s *Store) private(f *os.File, opened os.FileInfo) error {
	if f == nil || opened == nil || opened.Mode().Perm()&0o077 == 0 {
		return nil
	}
	if lfi, err := os.Lstat(s.path); err != nil || lfi.Mode()&fs.ModeSymlink != 0 || !os.SameFile(lfi, opened) {
		return nil
	}
	mode := opened.Mode().Perm() &^ 0o077
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("store %s is readable by other users and cannot be made private (chmod 600 it): %w", s.path, err)
	}
	s.log.Warn(fmt.Sprintf("store was readable by other users (mode %04o): made it %04o, as it holds message texts", opened.Mode().Perm(), mode), "store", s.path)
	return nil
}

// writableByOwner refuses to open for writing a store its owner cannot write: its
// owner made it read-only, and root, who can write it anyway, must not — nor make
// it writable behind the operator's back.
func writableByOwner(path string, readOnly bool, fi os.FileInfo) error {
	if readOnly || fi.Mode().Perm()&0o200 != 0 {
		return nil
	}
	return &readOnlyError{path: path, mode: fi.Mode().Perm()}
}

// readOnlyError is writableByOwner's refusal.
type readOnlyError struct {
	path string
	mode fs.FileMode
}

func (e *readOnlyError) Error() string {
	return fmt.Sprintf("store %s is read-only (mode %04o): slackpoll writes its store; if it should, make it writable (chmod 600 %s), else point store.path at another file",
		e.path, e.mode, e.path)
}

// openError turns a bbolt/os open failure into one that names the path and the fix.
func openError(path string, err error) error {
	switch {
	case errors.Is(err, bberrors.ErrTimeout):
		return &lockedError{path: path, err: err}
	case errors.As(err, new(errShort)):
		return &damagedError{path: path, cause: err}
	case errors.As(err, new(*readOnlyError)):
		return err
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("store %s: directory %s does not exist: create it or fix store.path: %w",
			path, filepath.Dir(path), err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("store %s: permission denied: check the permissions of the file and its directory, or fix store.path: %w",
			path, err)
	case errors.Is(err, bberrors.ErrInvalid), errors.Is(err, bberrors.ErrVersionMismatch),
		errors.Is(err, bberrors.ErrChecksum):
		return fmt.Errorf("store %s is not a readable bbolt file (%w): fix store.path, or move the file aside to start a new store",
			path, err)
	}
	return fmt.Errorf("open store %s: %w", path, err)
}

// topBuckets are created with the schema; every other bucket is nested in chan/.
var topBuckets = [][]byte{bMeta, bConv, bChan, bTail, bUsers, bRecords, bPacing, bState, bWatched, bChanges, bOutbox}

// initSchema creates the buckets and the schema version in a new file, or checks the
// version of an existing one.
func initSchema(btx *bolt.Tx, path string) error {
	if btx.Bucket(bMeta) != nil {
		if err := checkSchema(btx, path); err != nil {
			return err
		}
		if err := addWatched(btx, path); err != nil {
			return err
		}
		return addFeed(btx, path)
	}
	// A file with buckets but no meta was not written by slackpoll: don't add ours to it.
	if err := btx.ForEach(func([]byte, *bolt.Bucket) error { return errForeign }); err != nil {
		return fmt.Errorf("store %s is a bbolt file without slackpoll's meta bucket: fix store.path, or move the file aside to start a new store", path)
	}
	for _, name := range topBuckets {
		if _, err := btx.CreateBucket(name); err != nil {
			return fmt.Errorf("store %s: create bucket %s: %w", path, name, err)
		}
	}
	return btx.Bucket(bMeta).Put(kSchema, []byte(strconv.Itoa(SchemaVersion)))
}

var errForeign = errors.New("foreign bucket")

// checkSchema fails with a *SchemaError unless meta/"schema" is SchemaVersion.
func checkSchema(btx *bolt.Tx, path string) error {
	meta := btx.Bucket(bMeta)
	if meta == nil {
		return fmt.Errorf("store %s has no meta bucket: it was not written by slackpoll; fix store.path, or move the file aside to start a new store", path)
	}
	raw := meta.Get(kSchema)
	have, err := strconv.Atoi(string(raw))
	if err != nil {
		return fmt.Errorf("store %s: unreadable schema version %q: move the file aside to start a new store", path, raw)
	}
	if have != SchemaVersion {
		return &SchemaError{Path: path, Have: have, Want: SchemaVersion}
	}
	return nil
}
