package workspace_test

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/demo"
	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackapi"
	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/testsupport/bubble"
	"github.com/slackpoll/slackpoll/internal/workspace"
)

// The scale benchmarks run many workspaces in one Supervisor, as one daemon with
// store.dir does, against a fake Teams reached in memory:
//
//	nice -n 5 go test ./internal/workspace -run '^$' -bench IdleWorkspaces -benchtime 1x -timeout 30m
//	nice -n 5 go test ./internal/workspace -run '^$' -bench BusyWorkspaces -benchtime 1x -timeout 60m
//
// SCALE_WORKSPACES sets the number of workspaces (default 1,000), SCALE_IDLE the idle
// seconds CPU is measured over (default 20), SCALE_HEAPPROFILE a file for the heap
// profile of the idle fleet. Neither runs the SQL projection: the CLI's Attach starts
// it, not the Supervisor (TestProcesses measures the binary with it).

// idleSize is a small workspace: 8 conversations, 200 messages, 10 users.
var idleSize = slackfake.GenSize{Conversations: 8, Messages: 200, Users: 10}

// daemonBudget is the config's default per-tick budget.
var daemonBudget = poller.Budget{HistoryCalls: 250, RepliesCalls: 250, UsersInfoCalls: 100, ReactionsCalls: 250}

// BenchmarkIdleWorkspaces starts 1,000 small workspaces in one Supervisor (tick
// interval 1h, fast rates so that the first tick reads each one whole), waits until
// every first tick is done and nothing is due, and measures what each idle workspace
// costs: live heap, RSS, goroutines, file descriptors, and CPU over the idle seconds.
func BenchmarkIdleWorkspaces(b *testing.B) {
	n := envInt("SCALE_WORKSPACES", 1000)
	idle := time.Duration(envInt("SCALE_IDLE", 20)) * time.Second
	for b.Loop() {
		teams := newFleetTeams(b, n, idleSize, 0)
		// The fake caches each message's JSON the first time it serves it and logs
		// every request: a first fleet fills the caches, the logs are emptied, so that
		// what the measured fleet adds is the daemon's own.
		warm := startIdleFleet(b, teams, b.TempDir())
		if err := warm.Close(); err != nil {
			b.Fatal(err)
		}
		resetRequests(teams)
		base := measure(b)

		start := time.Now()
		sup := startIdleFleet(b, teams, b.TempDir())
		started := time.Since(start)
		checkHealthy(b, sup.Statuses(), false)
		resetRequests(teams)

		up := measure(b)
		if f := os.Getenv("SCALE_HEAPPROFILE"); f != "" {
			writeHeapProfile(b, f)
		}
		stopProfile := startCPUProfile(b, os.Getenv("SCALE_CPUPROFILE"))
		cpu0 := selfCPU(b)
		time.Sleep(idle)
		cpu := selfCPU(b) - cpu0
		stopProfile()
		checkHealthy(b, sup.Statuses(), false)
		for _, u := range sup.Units() {
			if _, running := u.Poller().Running(); running {
				b.Fatalf("%s ticked while idle: tick interval 1h", u.TeamID())
			}
		}

		per := func(a, z uint64) float64 { return (float64(z) - float64(a)) / float64(n) }
		b.ReportMetric(per(base.heapInuse, up.heapInuse), "heap-B/workspace")
		b.ReportMetric(per(base.rss, up.rss), "rss-B/workspace")
		b.ReportMetric(per(base.rssAnon, up.rssAnon), "rss-anon-B/workspace")
		b.ReportMetric(per(base.rssFile, up.rssFile), "rss-file-B/workspace")
		b.ReportMetric(float64(up.goroutines-base.goroutines)/float64(n), "goroutines/workspace")
		b.ReportMetric(float64(up.fds-base.fds)/float64(n), "fds/workspace")
		b.ReportMetric(float64(cpu.Microseconds())/1000/idle.Seconds(), "cpu-ms/s-idle")
		b.ReportMetric(float64(cpu.Microseconds())/1000/idle.Seconds()/float64(n), "cpu-ms/s-idle/workspace")
		b.ReportMetric(started.Seconds(), "s-to-idle")
		b.ReportMetric(float64(up.heapInuse), "heap-B-total")
		b.ReportMetric(float64(up.rss), "rss-B-total")
		b.Logf("%d idle workspaces: heap %d → %d B, RSS %d → %d B (anon %d → %d, file %d → %d), goroutines %d → %d, fds %d → %d, CPU %v over %v idle; first ticks done in %v",
			n, base.heapInuse, up.heapInuse, base.rss, up.rss, base.rssAnon, up.rssAnon, base.rssFile, up.rssFile,
			base.goroutines, up.goroutines, base.fds, up.fds, cpu, idle, started.Round(time.Millisecond))

		if err := sup.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// startIdleFleet starts every workspace of teams in a Supervisor storing in dir, at
// fast rates and a 1h tick interval, and returns once all of them are idle: each
// first tick done (reading the workspace whole), nothing due for an hour.
func startIdleFleet(tb testing.TB, teams *slackfake.Teams, dir string) *workspace.Supervisor {
	tb.Helper()
	fast := map[string]float64{}
	for _, m := range rm.Methods() {
		fast[m] = 60_000
	}
	sup := workspace.New(context.Background(), workspace.Options{
		Dir:   dir,
		Slack: slackapi.Options{APIURL: "http://slack.fake/api/", HTTPClient: teams.Client(), Rates: fast},
		Poller: poller.Config{Rates: fast, Interval: time.Hour, Budget: daemonBudget,
			BulkWindow: 30 * 24 * time.Hour},
	})
	for _, spec := range fleetSpecs(teams) {
		if _, err := sup.Start(spec); err != nil {
			tb.Fatal(err)
		}
	}
	waitIdle(tb, sup)
	return sup
}

// resetRequests empties every fake's request log.
func resetRequests(teams *slackfake.Teams) {
	for _, id := range teams.TeamIDs() {
		teams.Server(id).ResetRequests()
	}
}

// waitIdle waits until every workspace has finished a tick and none is ticking.
func waitIdle(tb testing.TB, sup *workspace.Supervisor) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Minute)
	for {
		idle := true
		for _, u := range sup.Units() {
			st := u.Status()
			if st.State != workspace.Active {
				tb.Fatalf("%s: %s: %s", st.TeamID, st.State, st.Reason)
			}
			if _, running := u.Poller().Running(); running || st.LastTick == nil {
				idle = false
				break
			}
		}
		if idle {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatal("the workspaces' first ticks did not finish in 20 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func writeHeapProfile(tb testing.TB, path string) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		tb.Fatal(err)
	}
}

// startCPUProfile profiles the CPU into path until the returned stop; "" does
// nothing.
func startCPUProfile(tb testing.TB, path string) (stop func()) {
	tb.Helper()
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		tb.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// busySize is a workspace with more tracked messages than the non_marketplace rates
// re-read in a tick (a page of 15 a minute per method): 8 conversations, 300
// messages, threads on about one message in eight.
var busySize = slackfake.GenSize{Conversations: 8, Messages: 300, Users: 10}

// BenchmarkBusyWorkspaces runs 1,000 busy workspaces in one Supervisor under
// testing/synctest, at the non_marketplace rates (1 conversations.history and 1
// conversations.replies call a minute per workspace, pages of 15), each store read
// whole beforehand and older than the bulk window, so that only the tail rotation
// reads it. It measures each workspace's rotation against its physical limit, two
// ways: the poller's own estimate (the last TickSummary's RotationPeriod ÷
// PhysicalLimit), and the time the second full rotation took (every tracked entry
// re-read after the first one ended, as BenchmarkRotation in internal/demo measures
// one workspace) ÷ PhysicalLimit. Each must stay within 1.2× for every workspace.
// CPU per busy workspace is CPU time per simulated minute of polling.
func BenchmarkBusyWorkspaces(b *testing.B) {
	n := envInt("SCALE_WORKSPACES", 1000)
	var res busyResult
	for b.Loop() {
		res = bubble.Run(b, func(t *testing.T) busyResult { return measureBusy(t, n) })
	}
	b.ReportMetric(quantile(res.estimate, 1), "max-x-limit")
	b.ReportMetric(quantile(res.estimate, 0.5), "p50-x-limit")
	b.ReportMetric(quantile(res.measured, 1), "max-measured-x-limit")
	b.ReportMetric(quantile(res.measured, 0.5), "p50-measured-x-limit")
	b.ReportMetric(quantile(res.exact, 1), "max-measured-x-exact-limit")
	b.ReportMetric(quantile(res.exact, 0.5), "p50-measured-x-exact-limit")
	b.ReportMetric(quantile(res.limits, 0.5), "p50-limit-min")
	b.ReportMetric(quantile(res.limits, 1), "max-limit-min")
	b.ReportMetric(res.heapPer, "heap-B/workspace")
	b.ReportMetric(res.goroutinesPer, "goroutines/workspace")
	b.ReportMetric(res.cpuPerMin, "cpu-ms/sim-min/workspace")
	b.ReportMetric(res.simulated.Minutes(), "sim-min")
	// The estimate is reported, not held to 1.2×: PhysicalLimit counts a bound of the
	// replies calls never above the exact one (a thread of more than page − 1
	// replies needs more pages than it counts), and the estimate's lag is read at
	// the end of a tick, up to one busy tick (the 4-minute soft deadline) late.
	if worst := quantile(res.exact, 1); worst > 1.2 {
		b.Errorf("a workspace's measured rotation is %.2f× its exact physical limit, want ≤ 1.2×", worst)
	}
}

// busyResult is what measureBusy found: per workspace (rotation ÷ limit, limits in
// minutes) and per busy workspace.
type busyResult struct {
	estimate, measured, limits []float64
	// exact is the measured rotation ÷ the exact limit: Σ⌈(replies + 1) ÷ page⌉
	// replies calls, where PhysicalLimit counts a bound never above it.
	exact                  []float64
	heapPer, goroutinesPer float64
	cpuPerMin              float64 // CPU milliseconds per simulated minute
	simulated              time.Duration
}

func measureBusy(t *testing.T, n int) busyResult {
	teams := newFleetTeams(t, n, busySize, 15)
	dir := t.TempDir()
	populateFleet(t, teams, dir)
	time.Sleep(100 * time.Hour) // older than the bulk window: only the rotation reads them
	resetRequests(teams)
	base := measure(t)

	rates, _ := rm.ProfileRates(rm.ProfileNonMarketplace)
	var mu sync.Mutex
	last := map[string]rm.TickSummary{}
	var bad []string
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sup := workspace.New(ctx, workspace.Options{
		Dir: dir, Store: boltstore.Options{NoSync: true},
		Slack:  slackapi.Options{APIURL: "http://slack.fake/api/", HTTPClient: teams.Client(), Rates: rates},
		Poller: poller.Config{Rates: rates, Budget: daemonBudget},
		OnTick: func(u *workspace.Unit, s rm.TickSummary) {
			mu.Lock()
			defer mu.Unlock()
			last[u.Spec().TeamID] = s
			if !tickOK(&workspace.LastTick{StopReason: s.StopReason, Errors: len(s.Errors)}, true) && len(bad) < 5 {
				bad = append(bad, fmt.Sprintf("%s tick at %v: stop %s, errors %v", u.Spec().TeamID, s.Started, s.StopReason, s.Errors))
			}
		},
	})
	for _, spec := range fleetSpecs(teams) {
		if _, err := sup.Start(spec); err != nil {
			t.Fatal(err)
		}
	}
	cpu0 := selfCPU(t)
	start := time.Now()
	// Per workspace: when its first full rotation ended (every tail entry re-read
	// after start), and how long the second one took.
	first := map[string]time.Time{}
	second := map[string]time.Duration{}
	for len(second) < n {
		time.Sleep(time.Minute)
		if time.Since(start) > 24*time.Hour {
			t.Fatalf("%d of %d workspaces did not rotate twice in 24 h", n-len(second), n)
		}
		for _, u := range sup.Units() {
			id := u.Spec().TeamID
			if _, done := second[id]; done {
				continue
			}
			oldest, err := demo.OldestPolled(u.Store())
			if err != nil {
				t.Fatal(err)
			}
			switch f, ok := first[id]; {
			case !ok && oldest.After(start):
				first[id] = time.Now()
			case ok && oldest.After(f):
				second[id] = time.Since(f)
			}
		}
	}
	// The poller's estimate keeps the lag of its last 16 ticks (4 minutes each at
	// these rates: a busy tick calls until its soft deadline), which still hold the
	// first rotation's, of messages last read before the 100 h pause: let them pass.
	time.Sleep(70 * time.Minute)
	simulated := time.Since(start)
	cpu := selfCPU(t) - cpu0
	resetRequests(teams)
	busy := measure(t)
	checkHealthy(t, sup.Statuses(), true)
	mu.Lock()
	if len(bad) > 0 {
		t.Fatalf("unhealthy ticks:\n%s", strings.Join(bad, "\n"))
	}
	res := busyResult{
		heapPer:       (float64(busy.heapInuse) - float64(base.heapInuse)) / float64(n),
		goroutinesPer: float64(busy.goroutines-base.goroutines) / float64(n),
		cpuPerMin:     float64(cpu.Microseconds()) / 1000 / simulated.Minutes() / float64(n),
		simulated:     simulated,
	}
	for id, s := range last {
		if os.Getenv("SCALE_VERBOSE") != "" {
			t.Logf("%s: rotation %v (measured %v) limit %v tracked %d threads %d pagecap %d stop %s calls %v", id, s.RotationPeriod, second[id], s.PhysicalLimit, s.Tracked, s.Threads, s.PageCap, s.StopReason, s.Calls)
		}
		if s.PhysicalLimit <= 0 || s.RotationPeriod <= 0 {
			t.Fatalf("%s: rotation %v, physical limit %v: want both known", id, s.RotationPeriod, s.PhysicalLimit)
		}
		res.estimate = append(res.estimate, s.RotationPeriod.Seconds()/s.PhysicalLimit.Seconds())
		res.measured = append(res.measured, second[id].Seconds()/s.PhysicalLimit.Seconds())
		u, _ := sup.Unit(id)
		exact, err := exactLimit(u.Store(), 15, rates)
		if err != nil {
			t.Fatal(err)
		}
		res.exact = append(res.exact, second[id].Seconds()/exact.Seconds())
		res.limits = append(res.limits, s.PhysicalLimit.Minutes())
	}
	mu.Unlock()
	cancel()
	if err := sup.Close(); err != nil {
		t.Fatal(err)
	}
	return res
}

// populateFleet reads every workspace of teams whole into its store in dir with a
// fast poller: the state a daemon reaches once its first sync is done.
func populateFleet(t *testing.T, teams *slackfake.Teams, dir string) {
	fast := map[string]float64{}
	for _, m := range rm.Methods() {
		fast[m] = 600_000
	}
	var ticks sync.Map // team_id → *atomic.Int32
	sup := workspace.New(t.Context(), workspace.Options{
		Dir: dir, Store: boltstore.Options{NoSync: true},
		Slack: slackapi.Options{APIURL: "http://slack.fake/api/", HTTPClient: teams.Client(), Rates: fast},
		Poller: poller.Config{Rates: fast, BulkWindow: 10_000 * time.Hour,
			Budget: poller.Budget{HistoryCalls: 100_000, RepliesCalls: 100_000, UsersInfoCalls: 100}},
		OnTick: func(u *workspace.Unit, _ rm.TickSummary) {
			c, _ := ticks.LoadOrStore(u.Spec().TeamID, new(atomic.Int32))
			c.(*atomic.Int32).Add(1)
		},
	})
	specs := fleetSpecs(teams)
	for _, spec := range specs {
		if _, err := sup.Start(spec); err != nil {
			t.Fatal(err)
		}
	}
	for {
		time.Sleep(time.Minute)
		done := 0
		ticks.Range(func(_, c any) bool {
			if c.(*atomic.Int32).Load() >= 3 {
				done++
			}
			return true
		})
		if done == len(specs) {
			break
		}
	}
	checkHealthy(t, sup.Statuses(), false)
	if err := sup.Close(); err != nil {
		t.Fatal(err)
	}
}

// exactLimit is the least time rates allow to re-read every message and thread of
// the readable conversations in s at page messages a page, both methods at once:
// Σ⌈messages ÷ page⌉ history calls over the conversations, Σ⌈(replies + 1) ÷ page⌉
// replies calls over the threads.
func exactLimit(s *boltstore.Store, page int, rates map[string]float64) (time.Duration, error) {
	var history, replies int
	err := s.View(func(tx rm.Tx) error {
		var readable []string
		if err := tx.Conversations(func(c rm.Conversation) error {
			if c.Status == rm.StatusOK {
				readable = append(readable, c.ID)
			}
			return nil
		}); err != nil {
			return err
		}
		for _, ch := range readable {
			n := 0
			if err := tx.Timeline(ch, "", "", func(m rm.Message) error {
				n++
				if m.ReplyCount > 0 {
					replies += (m.ReplyCount + 1 + page - 1) / page
				}
				return nil
			}); err != nil {
				return err
			}
			history += (n + page - 1) / page
		}
		return nil
	})
	calls := func(n int, method string) time.Duration {
		return time.Duration(float64(n) / rates[method] * float64(time.Minute))
	}
	return max(calls(history, rm.MethodHistory), calls(replies, rm.MethodReplies)), err
}
