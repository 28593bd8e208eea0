package crashtest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/converge"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/testsupport/compliance"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

// raEvery is how often (in kills) the fake's history window is filled before a
// restart, so that the next process meets 429s with a Retry-After. Each time stalls
// history for about 3 s (Retry-After plus the client's margin).
const raEvery = 16

// TestCrashSafety SIGKILLs `slackpoll run` at seeded points while the workspace
// changes between restarts, and checks the store after every kill; then it lets the
// daemon converge and compares the read model with the workspace; then it checks
// the whole request log for rate compliance (see package compliance).
//
// The kill points, kinds and workspace changes are fixed by -crash.seed; where the
// daemon is when a timed kill lands depends on the machine, which is the point.
func TestCrashSafety(t *testing.T) {
	slackpollBinary(t)
	seed, kills := *flagSeed, *flagKills
	t.Logf("seed %d, %d kills; replay: go test ./internal/testsupport/crashtest -run 'TestCrashSafety$' -v -crash.seed %d -crash.kills %d",
		seed, kills, seed, kills)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d; replay: go test ./internal/testsupport/crashtest -run 'TestCrashSafety$' -v -crash.seed %d -crash.kills %d",
				seed, seed, kills)
		}
	})
	start := time.Now()
	e := newEnv(t, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0xc4a54))
	mut := slackfake.NewMutator(e.fake, seed)
	cfg := e.writeConfig("slackpoll.yaml", "")

	var (
		before   Threads
		restarts []time.Time
		lost     []int
		byKind   = map[string]int{}
		changes  int
		episodes int
		syncs    syncCount
		// threadsChecked counts (kill, stored thread) pairs the invariants looked at.
		threadsChecked int
	)
	for i := range kills {
		if i > 0 {
			for range rng.IntN(6) {
				mut.Step()
				changes++
			}
		}
		if i%raEvery == min(raEvery/2, kills/2) { // at least one episode in a short run
			e.fillHistoryWindow()
			episodes++
		}
		// The workspace does not change while a daemon runs, so every thread read in
		// this run sees the same truth: CheckWholeSets can name the one complete set.
		truth := TruthThreads(e.fake.Truth())
		plan := planKill(rng)
		held := e.aim(plan)
		p := e.start(cfg)
		if i > 0 {
			restarts = append(restarts, p.started)
		}
		kind := plan.kind.String()
		if held == nil {
			time.Sleep(plan.delay)
		} else {
			select {
			case what := <-held:
				if testing.Verbose() && i < 3 {
					t.Logf("kill %d: %s: %s held in flight", i, kind, what)
				}
			case <-time.After(3 * time.Second):
				kind += " (not reached: killed after 3 s)"
			}
		}
		byKind[kind]++
		killAt := time.Now()
		p.kill(t)
		e.setHook(nil)
		e.fake.ClearFaults()
		after, bad := e.checkStore(killAt, before, truth)
		failf(t, fmt.Sprintf("after kill %d (%s, %v into the process)", i, kind, killAt.Sub(p.started).Round(time.Millisecond)), bad)
		if t.Failed() {
			t.Logf("daemon output:\n%s", p.out.tail(3000))
			t.FailNow()
		}
		syncs.add(before, after.threads, truth)
		threadsChecked += len(after.threads)
		before = after.threads
		lost = append(lost, after.lost...)
	}
	killPhase := time.Since(start)

	e.converge(t, seed)

	calls := e.rec.Calls()
	for _, i := range lost {
		calls[i].Lost = true
	}
	e.checkCompliance(t, calls, restarts)
	t.Logf("%d kills in %v (%v), %d workspace changes, %d Retry-After episodes, %d calls checked; total %v",
		kills, killPhase.Round(time.Millisecond), kindsString(byKind), changes, episodes, len(calls), time.Since(start).Round(time.Millisecond))
	t.Logf("threads checked after kills: %d; reply sets that differed from the workspace at a start: %d written whole before the kill, %d left as they were",
		threadsChecked, syncs.whole, syncs.kept)
	if byKind[killMidThread.String()] == 0 {
		t.Errorf("no kill landed between two pages of a thread sync (%v): the workspace has no thread longer than a page?", kindsString(byKind))
	}
}

// syncCount shows that CheckWholeSets had work: stored threads whose replies differed
// from the workspace when a process started, and whether the kill found them synced
// (whole) or untouched (kept). CheckWholeSets fails on anything else.
type syncCount struct{ whole, kept int }

func (c *syncCount) add(before, after, truth Threads) {
	for ref, got := range after {
		switch {
		case slices.Equal(before[ref], truth[ref]):
		case slices.Equal(got, truth[ref]):
			c.whole++
		default:
			c.kept++
		}
	}
}

func kindsString(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(mapsKeys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// converge stops changing the workspace and runs the daemon until its tail rotation
// has re-read every tracked message (and thread) since the last change and the user
// cache has expired, then stops it with SIGTERM (exit 0 within 5 s) and compares the
// read model with the workspace: 0 differences. A rotation that still differs is
// followed by up to two more, as a changed message can be re-read just before a
// later change shows (the demo does the same).
func (e *env) converge(t *testing.T, seed int64) {
	t.Helper()
	listen := freePort(t)
	cfg := e.writeConfig("converge.yaml", listen)
	lastChange := time.Now()
	var report converge.Report
	for attempt := 1; attempt <= 3; attempt++ {
		ref := time.Now()
		p := e.start(cfg)
		ok := waitFor(2*time.Minute, func() bool {
			if p.exited() {
				return true
			}
			st, err := daemonStatus(listen)
			return err == nil && st.Coverage.NeverPolled == 0 && st.Coverage.OldestPolledAt != nil &&
				st.Coverage.OldestPolledAt.After(ref) && time.Since(lastChange) > 4*time.Second
		})
		if !ok || p.exited() {
			t.Fatalf("converge: the tail rotation did not pass %v within 2 min (exited: %v):\n%s", ref, p.exited(), p.out.tail(3000))
		}
		code, took := p.terminate(5 * time.Second)
		if code != 0 {
			t.Fatalf("converge: slackpoll run exited %d on SIGTERM after %v, want 0 within 5 s:\n%s", code, took, p.out.tail(3000))
		}
		s := storetest.OpenAt(t, e.storePath, boltstore.Options{ReadOnly: true})
		model, err := converge.ModelLines(s, e.convs)
		storetest.Close(t, s)
		if err != nil {
			t.Fatal(err)
		}
		since := rm.TSFromUnix(time.Now().Add(-72 * time.Hour).Unix())
		report = converge.Diff(model, converge.Lines(e.fake.Truth()), since)
		t.Logf("converge: rotation %d: %v (SIGTERM exit in %v)", attempt, report, took.Round(time.Millisecond))
		if len(report.Differences) == 0 {
			return
		}
	}
	diffs := report.Differences
	if len(diffs) > 20 {
		diffs = diffs[:20]
	}
	t.Errorf("read model differs from the workspace after 3 rotations (seed %d): %v\n%s", seed, report, strings.Join(diffs, "\n"))
}

// statusReport is the part of GET /v1/status that says how far the rotation got.
type statusReport struct {
	Coverage struct {
		NeverPolled    int        `json:"never_polled"`
		OldestPolledAt *time.Time `json:"oldest_last_polled_at"`
	} `json:"coverage"`
}

func daemonStatus(listen string) (statusReport, error) { return getStatus[statusReport](listen) }

// getStatus decodes the running daemon's GET /v1/status into the part T a test needs.
func getStatus[T any](listen string) (T, error) {
	var st T
	resp, err := http.Get("http://" + listen + "/v1/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("status %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// checkCompliance checks the whole request log of the run — every process, every
// kill — against the configured rates.
func (e *env) checkCompliance(t *testing.T, calls []compliance.Call, restarts []time.Time) {
	t.Helper()
	spacing := map[string]time.Duration{}
	for m, r := range clientRates {
		spacing[m] = compliance.Spacing(r)
	}
	stats, bad := compliance.CheckRates(calls, clientRates, jitter)
	for _, s := range stats {
		if s.Calls > 0 {
			t.Logf("rate: %v", s)
		}
	}
	failf(t, "rates", bad)
	ra := compliance.CheckRetryAfter(calls, spacing)
	t.Logf("Retry-After: %d 429s with Retry-After, %d without, %d lost with a killed process; least margin %v",
		ra.WithRetryAfter, ra.WithoutRetryAfter, ra.Lost, ra.MinMargin.Round(time.Millisecond))
	failf(t, "Retry-After", ra.Violations)
	if ra.WithRetryAfter == 0 {
		t.Errorf("no 429 with Retry-After reached a live daemon: the Retry-After check checked nothing")
	}
	rs := compliance.CheckRestarts(calls, restarts, spacing, jitter)
	t.Logf("restarts: %d (restart, method) pairs, least slack over the spacing %v", rs.Pairs, rs.MinSlack.Round(time.Millisecond))
	failf(t, "restarts", rs.Violations)
	if rs.Pairs == 0 {
		t.Errorf("no method was called on both sides of a restart: the restart check checked nothing")
	}
}
