package crashtest

import (
	"flag"
	"os"
	"testing"

	"github.com/slackpoll/slackpoll/internal/testsupport/testbin"
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

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(testbin.Run(m))
}

// slackpollBinary builds cmd/slackpoll once per test binary and returns its path. The
// crash tests need a real process to SIGKILL: a goroutine cannot be killed mid-write,
// and only a process exit shows that the store's lock and state survive the kill.
func slackpollBinary(t *testing.T) string {
	t.Helper()
	return testbin.Build(t)
}
