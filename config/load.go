package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// EnvConfig is the environment variable naming the config file when no
// --config flag is given.
const EnvConfig = "SLACKPOLL_CONFIG"

// DefaultPath is the config file used when neither --config nor
// $SLACKPOLL_CONFIG is given: slackpoll.yaml in the working directory.
const DefaultPath = "slackpoll.yaml"

// LoadEnvOrDefault returns the config path to use: flagPath if it is not
// empty, else $SLACKPOLL_CONFIG if set and not empty, else DefaultPath.
func LoadEnvOrDefault(flagPath string) (path string) {
	if flagPath != "" {
		return flagPath
	}
	if p := os.Getenv(EnvConfig); p != "" {
		return p
	}
	return DefaultPath
}

// Load reads the YAML config file at path and returns the configuration:
// the built-in defaults (see Default) overridden by the keys the file sets,
// with ${VAR} expanded from the environment in every value (an unset VAR
// expands to ""), then validated with Validate. A file that does not exist
// is an error that also matches fs.ErrNotExist. Every error matches
// ErrInvalid; several problems are reported together (errors.Join of
// *Error). Load does not require a token: see RequireToken.
func Load(path string) (*Config, error) {
	data, err := readLimited(path)
	if err != nil {
		msg := err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			msg = pe.Err.Error()
		}
		msg = "cannot read config file: " + msg
		if errors.Is(err, fs.ErrNotExist) {
			msg += " (give the path with --config or $" + EnvConfig + ")"
		}
		return nil, &Error{File: path, Msg: msg, Err: err}
	}
	c, err := parse(path, data, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	c.resolvePaths(path)
	return c, nil
}

// resolvePaths makes a relative store.path relative to the directory of the config
// file at path, and absolute: a command run from another directory (cron, systemd, a
// second terminal) then opens the same store instead of creating a new one where it
// happens to run.
func (c *Config) resolvePaths(path string) {
	dir := filepath.Dir(path)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if !filepath.IsAbs(c.Store.Path) {
		c.Store.Path = filepath.Join(dir, c.Store.Path)
	}
	if p := c.Store.Dir; p != "" && !filepath.IsAbs(p) {
		c.Store.Dir = filepath.Join(dir, p)
	}
	if p := c.Install.KeyFile; p != "" && !filepath.IsAbs(p) {
		c.Install.KeyFile = filepath.Join(dir, p)
	}
	if p := c.Projection.SQLite.Path; p != "" && !filepath.IsAbs(p) {
		c.Projection.SQLite.Path = filepath.Join(dir, p)
	}
}

// MaxFileSize bounds the config file: a real one is a few KB; a huge file (a wrong
// path to a log or a database) would be read whole into memory before YAML
// rejects it.
const MaxFileSize = 1 << 20

// readLimited reads the file at path, failing for one larger than MaxFileSize.
func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("file is larger than %d bytes: is this the config file?", MaxFileSize)
	}
	return data, nil
}

// parse decodes data on top of the defaults and validates the result.
func parse(file string, data []byte, lookup func(string) (string, bool)) (*Config, error) {
	c := &Config{}
	if err := decode(c, DefaultFile, defaultYAML, lookup, nil); err != nil {
		return nil, err
	}
	c.src = &source{file: file, lines: map[string]int{}}
	// Report decoding and validation problems together; a value that failed
	// to decode keeps its (valid) default, so Validate adds no noise for it.
	if err := errors.Join(decode(c, file, data, lookup, c.src), c.Validate()); err != nil {
		return nil, err
	}
	return c, nil
}

// source records where a Config was loaded from, for error messages.
type source struct {
	file     string
	lines    map[string]int // key path → line of the key in file
	warnings []Warning      // renamed and removed keys met (keyChanges)
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandVars replaces every ${NAME} in s by lookup(NAME), "" when unset. The
// result is not expanded again.
func expandVars(s string, lookup func(string) (string, bool)) string {
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		v, _ := lookup(ref[2 : len(ref)-1])
		return v
	})
}
