package workspace_test

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/workspace"
)

// The scale measurements (scale_bench_test.go, processes_test.go) share these: a
// Teams of many small generated workspaces, and what the process holds (heap, RSS,
// goroutines, file descriptors, CPU time) read from the runtime and /proc.

// fleetTeamID is the team ID of the i-th generated workspace: T0B and five digits.
func fleetTeamID(i int) string { return fmt.Sprintf("T0B%05d", i) }

// newFleetTeams returns a Teams of n workspaces, each generated with its own seed at
// size, its pages capped at page (0 = none), without blocks (the client's decoding
// of them is not what these measure).
func newFleetTeams(tb testing.TB, n int, size slackfake.GenSize, page int) *slackfake.Teams {
	tb.Helper()
	teams := slackfake.NewTeams()
	for i := range n {
		fake := slackfake.New(slackfake.Options{TeamID: fleetTeamID(i), Seed: int64(i + 1), PageCap: page, OmitBlocks: true})
		slackfake.Generate(fake, int64(i+1), size)
		if err := teams.Add(fake); err != nil {
			tb.Fatal(err)
		}
	}
	return teams
}

// fleetSpecs are the workspaces of teams, each discovering the conversations its bot
// is a member of.
func fleetSpecs(teams *slackfake.Teams) []workspace.Spec {
	var specs []workspace.Spec
	for _, id := range teams.TeamIDs() {
		specs = append(specs, workspace.Spec{TeamID: id, Source: workspace.SourceConfig,
			Credentials: workspace.StaticToken(teams.Server(id).Token()), Discover: true})
	}
	return specs
}

// footprint is what the process holds at one moment.
type footprint struct {
	heapInuse  uint64 // runtime.MemStats.HeapInuse after a GC, bytes
	rss        uint64 // VmRSS, bytes
	rssAnon    uint64 // RssAnon: heap, stacks, runtime (not the stores' mapped files)
	rssFile    uint64 // RssFile: file-backed pages, mostly the bbolt mmaps
	goroutines int
	fds        int
	cpu        time.Duration // user + system since the process started
}

// measure collects garbage first, so that the heap is what is live.
func measure(tb testing.TB) footprint {
	tb.Helper()
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st, err := procStatus("self")
	if err != nil {
		tb.Fatal(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatal(err)
	}
	return footprint{heapInuse: ms.HeapInuse, rss: st["VmRSS"], rssAnon: st["RssAnon"], rssFile: st["RssFile"],
		goroutines: runtime.NumGoroutine(), fds: len(fds), cpu: selfCPU(tb)}
}

// selfCPU is the process's user and system CPU time (getrusage).
func selfCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procStatus reads the kB fields (converted to bytes) and counts (Threads) of
// /proc/<pid>/status.
func procStatus(pid string) (map[string]uint64, error) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) == 2 && f[1] == "kB" {
			n *= 1024
		}
		out[k] = n
	}
	return out, nil
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// procCPU is the user and system CPU time of another process (/proc/<pid>/stat).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: the fields after it follow the
	// last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// tickOK reports whether a tick's outcome is a healthy one: it read all it had to
// (complete) or what its budget allowed (budget:*), with no error. With paced, a
// tick that reached its soft deadline is healthy too: a busy workspace at one
// call a minute calls until then, by design (the rotation benchmark's ticks end so).
func tickOK(lt *workspace.LastTick, paced bool) bool {
	return lt != nil && lt.Errors == 0 && (lt.StopReason == "complete" || strings.HasPrefix(lt.StopReason, "budget:") ||
		paced && lt.StopReason == "deadline")
}

// checkHealthy fails tb unless every workspace is active and its last tick healthy
// (tickOK), naming the first few that are not.
func checkHealthy(tb testing.TB, statuses []workspace.Status, paced bool) {
	tb.Helper()
	var bad []string
	for _, st := range statuses {
		if st.State != workspace.Active || !tickOK(st.LastTick, paced) {
			lt := "no tick"
			if st.LastTick != nil {
				lt = fmt.Sprintf("stop %s, %d errors", st.LastTick.StopReason, st.LastTick.Errors)
			}
			bad = append(bad, fmt.Sprintf("%s: %s %s (%s)", st.TeamID, st.State, st.Reason, lt))
		}
	}
	if len(bad) > 0 {
		tb.Fatalf("%d of %d workspaces not healthy, e.g.:\n%s", len(bad), len(statuses), strings.Join(bad[:min(len(bad), 5)], "\n"))
	}
}

// quantile is the q-quantile (nearest rank) of xs; xs is sorted in place.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	i := int(q*float64(len(xs))+0.5) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// envInt is the integer in the environment variable name, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
