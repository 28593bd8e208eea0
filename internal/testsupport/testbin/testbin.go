// Package testbin builds cmd/slackpoll for the tests that need the real process: a
// subprocess to SIGKILL (internal/crashtest), or to speak to over its stdin and
// stdout (`slackpoll mcp`). Test code only.
package testbin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	dir      string
	once     sync.Once
	bin      string
	buildErr error
)

// Run is a TestMain's body: it runs the tests, then removes the binary Build made.
// It returns the exit code for os.Exit.
func Run(m *testing.M) int {
	code := m.Run()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	return code
}

// Build builds cmd/slackpoll once per test binary and returns its path; it skips
// the test in -short mode. Use it from a package whose TestMain calls Run.
func Build(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the real slackpoll binary; skipped in -short mode")
	}
	once.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		statSources(root)
		gobin, err := exec.LookPath("go")
		if err != nil {
			buildErr = fmt.Errorf("go tool not found to build cmd/slackpoll: %w", err)
			return
		}
		if dir, err = os.MkdirTemp("", "slackpoll-testbin-"); err != nil {
			buildErr = err
			return
		}
		bin = filepath.Join(dir, "slackpoll")
		cmd := exec.Command(gobin, "build", "-o", bin, "github.com/slackpoll/slackpoll/cmd/slackpoll")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/slackpoll: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bin
}

// moduleRoot is the directory of go.mod, above the test's working directory.
func moduleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", errors.New("go.mod not found above the test's directory")
		}
		d = up
	}
}

// statSources stats every .go file of the module. go test caches a test's result
// keyed on the files the test consulted; the binary is built by a child process,
// whose reads it does not see, so without this a changed daemon would get the cached
// verdict of the old one.
func statSources(root string) {
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".go") || d.Name() == "go.mod" || d.Name() == "go.sum" {
			_, _ = os.Stat(path)
		}
		return nil
	})
}
