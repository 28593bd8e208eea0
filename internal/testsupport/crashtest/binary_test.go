package crashtest

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Flags of the long mode, e.g.
//
//	go test ./internal/testsupport/crashtest -run TestCrashSafety -v -crash.kills 500 -crash.seed 7
//
// The default run (50 kills, seed 1) takes well under a minute; every seed is a
// different but repeatable sequence of kill points, kill kinds and workspace changes.
var (
	flagKills = flag.Int("crash.kills", 50, "SIGKILLs of the daemon in TestCrashSafety (long mode: 500)")
	flagSeed  = flag.Int64("crash.seed", 1, "seed of the kill points, kill kinds and workspace changes")
)

var (
	buildDir  string
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "slackpoll-crashtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// slackpollBinary builds cmd/slackpoll once per test binary and returns its path. The
// crash tests need a real process to SIGKILL: a goroutine cannot be killed mid-write,
// and only a process exit shows that the store's lock and state survive the kill.
func slackpollBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("crash tests build and SIGKILL the real slackpoll binary; skipped in -short mode")
	}
	buildOnce.Do(func() {
		statSources()
		gobin, err := exec.LookPath("go")
		if err != nil {
			buildErr = fmt.Errorf("go tool not found to build cmd/slackpoll: %w", err)
			return
		}
		binPath = filepath.Join(buildDir, "slackpoll")
		cmd := exec.Command(gobin, "build", "-o", binPath, "github.com/slackpoll/slackpoll/cmd/slackpoll")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/slackpoll: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// statSources stats every .go file of the module. go test caches a test's result
// keyed on the files the test consulted; the binary is built by a child process,
// whose reads it does not see, so without this a changed daemon would get the cached
// verdict of the old one.
func statSources() {
	root, err := moduleRoot()
	if err != nil {
		return
	}
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

// moduleRoot returns the directory of the go.mod above the working directory (the
// test's package directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
		dir = parent
	}
}
