package crashtest

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Flags of the long mode, e.g.
//
//	go test ./internal/crashtest -run TestCrashSafety -v -crash.kills 500 -crash.seed 7
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
