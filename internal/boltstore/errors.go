package boltstore

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// ErrLocked is matched (errors.Is) by the error Open returns when another process, or
// another Open in this one, holds the store's file lock beyond Options.LockTimeout.
var ErrLocked = errors.New("store is locked by another process")

// ErrSchemaVersion is matched (errors.Is) by the error Open returns when the file was
// written with another schema version than this build uses.
var ErrSchemaVersion = errors.New("store schema version mismatch")

// ErrDamaged is matched (errors.Is) by the error of Open, View or Update when the
// file turned out damaged (truncated, overwritten): bbolt panicked or faulted reading
// it.
var ErrDamaged = errors.New("store is damaged")

// damagedError names the store, what bbolt hit and what to do.
type damagedError struct {
	path  string
	cause any
}

func (e *damagedError) Error() string {
	return fmt.Sprintf("store %s is damaged: %v (restore a backup or move it aside)", e.path, e.cause)
}

func (e *damagedError) Is(target error) bool { return target == ErrDamaged }

// guard runs fn and turns a panic — bbolt panics on pages it cannot make sense of —
// or a memory fault in the mmap of a truncated file into a *damagedError: data from
// disk must never crash the process. It is the store boundary: Open, View and Update
// go through it.
func guard(path string, fn func() error) (err error) {
	// Faults on the mmap (SIGBUS past the end of a truncated file, SIGSEGV) become
	// panics of this goroutine, recovered below, instead of killing the process.
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if p := recover(); p != nil {
			err = &damagedError{path: path, cause: p}
		}
	}()
	return fn()
}

// lockedError names the store and the likely culprit; it unwraps to bbolt's ErrTimeout.
type lockedError struct {
	path string
	err  error
}

func (e *lockedError) Error() string {
	return fmt.Sprintf("store %s is locked by another process (is \"slackpoll run\" running?)", e.path)
}

func (e *lockedError) Is(target error) bool { return target == ErrLocked }
func (e *lockedError) Unwrap() error        { return e.err }

// SchemaError reports a store written with schema version Have by a slackpoll that
// needs Want. It matches ErrSchemaVersion.
type SchemaError struct {
	Path       string
	Have, Want int
}

func (e *SchemaError) Error() string {
	what := "move it aside or delete it and slackpoll rebuilds it from Slack on the next tick " +
		"(tracked record keys must then be tracked again), or run the slackpoll version that wrote it"
	if e.Have > e.Want {
		what = "upgrade slackpoll, or move the file aside to start a new store"
	}
	return fmt.Sprintf("store %s has schema version %d, this slackpoll needs %d: %s",
		e.Path, e.Have, e.Want, what)
}

func (e *SchemaError) Is(target error) bool { return target == ErrSchemaVersion }

// decodeError names the value that could not be decoded.
func decodeError(bucket string, key []byte, err error) error {
	return fmt.Errorf("store: decode %s/%q: %w", bucket, key, err)
}
