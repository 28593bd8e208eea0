package config

import (
	"errors"
	"strconv"
	"strings"
)

// ErrInvalid matches (with errors.Is) every error of this package: a config
// file that cannot be read, parsed or validated, or a missing token. The
// command maps it to exit status 2.
var ErrInvalid = errors.New("invalid configuration")

// Error is one configuration problem. Its message names the file, the line
// when known, the key path and what is allowed, e.g.
//
//	slackpoll.yaml: line 7: tick.interval: invalid duration "5" (…)
//
// It never contains a secret value.
type Error struct {
	File string // the config file as given to Load, or "built-in defaults"
	Line int    // 1-based line in File; 0 when not known
	Key  string // dotted key path, e.g. "tick.interval", "conversations[2]"; "" for the whole file
	Msg  string // what is wrong and what is allowed
	Err  error  // underlying cause, if any (e.g. an *fs.PathError)

	keyInMsg bool // Msg already names Key: do not prefix it
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Line > 0 {
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteString(": ")
	}
	if e.Key != "" && !e.keyInMsg {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Is reports whether target is ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }
