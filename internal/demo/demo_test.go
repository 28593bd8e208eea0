package demo

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/testsupport/pgtest"
	"github.com/slackpoll/slackpoll/internal/workspace"
)

// seeds is the number of seeds of TestConvergesUnderMutationsAndFaults: 200 in CI
// (about a minute on 2 cores). Long mode, e.g. before a release (about 4 seeds a
// second on 2 cores; -v prints the totals and the distribution of ticks to converge):
//
//	go test ./internal/demo -run TestConverges -seeds 10000 -timeout 3h -v | grep -v '^tick'
//
// A failing seed prints the command that replays it alone.
var seeds = flag.Int("seeds", 200, "number of seeds TestConvergesUnderMutationsAndFaults runs")

// firstSeed lets a long run continue where another stopped.
var firstSeed = flag.Int64("first-seed", 1, "first seed TestConvergesUnderMutationsAndFaults runs")

// allFaults are the injected failures of the simulation: every kind the fake has.
// Slow stalls a response past the request timeout (a timeout, affordable in virtual
// time).
var allFaults = []slackfake.FaultKind{
	slackfake.Status5xx, slackfake.ConnReset, slackfake.Slow, slackfake.MalformedJSON,
	slackfake.TruncatedBody, slackfake.BadMessage, slackfake.RateLimitNoRetryAfter,
	slackfake.RepeatCursor, slackfake.InvalidCursor,
}

// outpaced are the methods of which one per seed has a fake limit (requests per
// minute) below the client's rate and below what a seed asks of it in its first
// minute, so that Slack answers real 429s with a Retry-After.
var outpaced = []struct {
	method string
	limit  int
}{{rm.MethodHistory, 40}, {rm.MethodReplies, 30}}

// TestConvergesUnderMutationsAndFaults runs the whole daemon (poller, slack-go client,
// bbolt store) against the fake workspace in virtual time, one seed per subtest. A
// seed is a workspace, a stream of changes — posts, replies, broadcasts, bot posts,
// edits, deletes of messages, replies and thread parents, reactions added and
// removed, user renames and deactivations, archives and unarchives, the bot removed
// and re-added — and faults, at random and at least one of each kind: 5xx, reset,
// timeout, malformed and truncated bodies, a bad message in a page, 429 without
// Retry-After, a repeated cursor, invalid_cursor; plus real 429s with Retry-After
// from one method whose Slack limit is below the client's rate (in most seeds: one
// whose conversations are mostly unreadable sends too little to reach it).
//
// After the last change the read model must equal the truth (converge.Diff) within
// convergenceBound (from the rotation period the poller reports), stay equal for a
// further full tail rotation, and the request log must obey the pacing rules
// (checkPacing, with internal/testsupport/compliance).
func TestConvergesUnderMutationsAndFaults(t *testing.T) {
	var agg aggregate
	t.Run("seeds", func(t *testing.T) {
		for seed := *firstSeed; seed < *firstSeed+int64(*seeds); seed++ {
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				t.Parallel()
				convergeSeed(t, seed, &agg)
			})
		}
	})
	t.Log(agg.String())
	if agg.seeds >= 20 && 2*agg.limitedSeeds < agg.seeds {
		t.Errorf("only %d of %d seeds met a 429 with Retry-After: the fake limits of seedOptions no longer outpace the client", agg.limitedSeeds, agg.seeds)
	}
	// Rarer kinds (reaction_count_changed needs more reactors than the fake lists,
	// message_reappeared a message back from missing) have tests of their own.
	for _, k := range []string{rm.ChangeMessagePosted, rm.ChangeMessageEdited, rm.ChangeMessageDeleted, rm.ChangeMessageMissing,
		rm.ChangeReactionAdded, rm.ChangeReactionRemoved, rm.ChangeReplyAdded, rm.ChangeReplyRemoved, rm.ChangeUserRenamed} {
		if agg.seeds >= 20 && agg.feed[k] == 0 {
			t.Errorf("no %s change in %d seeds: the mutations no longer reach the change feed, or the writer no longer sees them", k, agg.seeds)
		}
	}
	if agg.seeds >= 20 && agg.located == 0 {
		t.Errorf("no tracked reply was looked up with conversations.replies in %d seeds: trackOlder no longer tracks replies of threads the store lacks", agg.seeds)
	}
}

// seedOptions are the options of one seed: a small workspace (each seed costs a
// fraction of a CPU-second), a short change phase, every fault kind.
func seedOptions(seed int64) Options {
	rng := rand.New(rand.NewPCG(uint64(seed), 0xc0ffee))
	o := DefaultOptions()
	o.Seed = seed
	o.Loopback = false
	o.Size = slackfake.GenSize{Conversations: 10, Messages: 300, Users: 12}
	o.MutateFor = 12 * time.Second
	o.MutateEvery = 40 * time.Millisecond
	o.Disruptive = true
	o.Faults = allFaults
	o.FaultRate = 0.03
	o.PageCap = []int{5, 8}[rng.IntN(2)]
	o.Track = 60
	o.Budget = poller.Budget{HistoryCalls: 90, RepliesCalls: 80, UsersInfoCalls: 40, ReactionsCalls: 30}
	o.Interval = time.Second
	o.UserCacheTTL = 5 * time.Second
	o.InfoRefresh = 10 * time.Second
	op := outpaced[rng.IntN(len(outpaced))]
	o.FakeRates = map[string]int{op.method: op.limit}
	// Run waits this long for convergence; the test then holds it to the tighter
	// convergenceBound, so that slow convergence and none at all read differently.
	o.MaxTicks = 400
	o.NoSync = true
	o.Feed = rm.FeedConfig{Backfill: true}
	if rng.IntN(2) == 0 {
		// Half the seeds restart the SQL projectors mid-changes, as a daemon restart
		// would: the new ones sync from the store, then follow it.
		o.RestartProjectionsAt = time.Duration(rng.Int64N(int64(o.MutateFor)))
	}
	return o
}

// seedProjections are the SQL projection targets of a seed: a SQLite file in dir,
// and a Postgres schema of its own (where Postgres is available: always in CI).
func seedProjections(t *testing.T, dir string) []projection.Spec {
	path := filepath.Join(dir, "projection.sqlite")
	specs := []projection.Spec{{Kind: projection.KindSQLite, Name: path,
		Open: func(ctx context.Context) (*projection.Target, error) { return projection.OpenSQLiteNoSync(ctx, path) }}}
	if os.Getenv(pgtest.EnvDSN) != "" || os.Getenv(pgtest.EnvRequired) == "required" {
		dsn, schema := pgtest.Schema(t)
		specs = append(specs, projection.Spec{Kind: projection.KindPostgres, Name: schema,
			Open: func(ctx context.Context) (*projection.Target, error) {
				return projection.OpenPostgres(ctx, dsn, schema)
			}})
	}
	return specs
}

// assertProjections holds the SQL projection to its promise: at the end of the run,
// each target equals the store row for row, and search finds a stored message by one
// of its words.
func assertProjections(t *testing.T, o Options, res Result) {
	t.Helper()
	if len(res.Projections) != len(o.Projections) {
		t.Errorf("%d projection checks, want %d", len(res.Projections), len(o.Projections))
	}
	for _, c := range res.Projections {
		switch {
		case c.Err != nil:
			t.Errorf("SQL projection (%s): %v", c.Kind, c.Err)
		case !c.Report.Equal():
			t.Errorf("SQL projection (%s) differs from the store (restarted at %v): %v\n%s", c.Kind, o.RestartProjectionsAt, c.Report,
				strings.Join(c.Report.Differences[:min(10, len(c.Report.Differences))], "\n"))
		case c.Report.Messages == 0:
			t.Errorf("SQL projection (%s): no message compared", c.Kind)
		}
	}
}

// queuedFaults are one fault of each kind, in a seeded order, each for a seeded
// method it applies to, so that every seed meets every kind (random faults alone
// would miss the rarer ones in some seeds).
func queuedFaults(seed int64) []slackfake.Fault {
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	pages := []string{rm.MethodHistory, rm.MethodReplies}
	any := append([]string{rm.MethodConversationInfo, rm.MethodUsersInfo}, pages...)
	var out []slackfake.Fault
	for _, i := range rng.Perm(len(allFaults)) {
		k := allFaults[i]
		methods := any
		switch k {
		case slackfake.BadMessage:
			methods = pages
		case slackfake.RepeatCursor, slackfake.InvalidCursor:
			// Most threads fit in one replies page; history windows rarely do.
			methods = pages[:1]
		}
		out = append(out, slackfake.Fault{Kind: k, Method: methods[rng.IntN(len(methods))]})
	}
	return out
}

// convergenceBound is the time after the last change within which the read model
// must match, derived from the rotation period the poller reports (README, "How it works": the
// worst-case staleness of a change): what the poller's timers need — the user cache
// TTL and the conversations.info refresh (archives, the bot's membership) — plus two
// rotation periods (a message read just before the last change waits a full
// rotation; a read lost to a fault, one more), plus two of the longest ticks (the one
// in progress at the last change, and the one that reads the match). The rotation
// period is the longest any tick reported from the last change to the match; ok is
// false when none reported one (no tail read in their window): then the poller made
// no promise to hold it to.
func convergenceBound(o Options, res Result) (bound, rotation time.Duration, ok bool) {
	var longest time.Duration
	for _, s := range res.TickLog {
		if s.Finished.Before(res.LastChange) || s.Started.After(res.ConvergedAt) {
			continue
		}
		rotation = max(rotation, s.RotationPeriod)
		longest = max(longest, s.Finished.Sub(s.Started), o.Interval)
	}
	return max(o.UserCacheTTL, o.InfoRefresh) + 2*rotation + 2*longest, rotation, rotation > 0
}

// seedResult is what one seed contributes to the aggregate.
type seedResult struct {
	mutations, ticksToConverge int
	noRotation                 bool // no tick reported a rotation period
	changes                    map[string]int
	faults                     map[slackfake.FaultKind]int
	limited                    int
	// located counts answered conversations.replies calls with limit=1: only the
	// poller's search for the thread of a tracked reply makes them.
	located int
	feed    map[string]int
}

// seedWorkspaces is the number of workspaces of a seed: 1, 2 or 3 in turn, so that
// the seeds cover one workspace (Run, with the SQL projections), two in one
// supervisor (one with a rotating token) and three (one revoked part-way too).
func seedWorkspaces(seed int64) int { return 1 + int(seed%3) }

func convergeSeed(t *testing.T, seed int64, agg *aggregate) {
	synctest.Test(t, func(t *testing.T) {
		o := seedOptions(seed)
		o.Dir = t.TempDir()
		n := seedWorkspaces(seed)
		if testing.Verbose() && *seeds == 1 {
			o.Out = os.Stdout
		}
		o.Setup = func(f *slackfake.Server) {
			for _, q := range queuedFaults(seed) {
				f.InjectFault(q)
			}
		}
		changes := map[string]int{}
		o.OnChange = func(d string) { changes[changeKind(d)]++ }
		if n == 1 {
			o.Projections = seedProjections(t, o.Dir)
			res, err := Run(context.Background(), o)
			if err != nil {
				t.Fatalf("%v\n%s", err, replay(seed))
			}
			out := checkSeedWorkspace(t, o, res, "")
			out.changes = changes
			agg.add(out)
			assertProjections(t, o, res)
			if t.Failed() {
				t.Log(replay(seed))
			}
			return
		}
		// Several workspaces share the seed's cost: each is a share of the one
		// workspace's size and changes as often in all.
		o.Workspaces = n
		o.Size.Conversations = max(3, o.Size.Conversations/n)
		o.Size.Messages /= n
		o.Track /= n
		o.MutateEvery *= time.Duration(n)
		f, err := RunWorkspaces(context.Background(), o)
		if err != nil {
			t.Fatalf("%v\n%s", err, replay(seed))
		}
		for i, w := range f.Workspaces {
			if w.Revoked {
				if w.State != workspace.TokenRejected || !strings.HasPrefix(w.Reason, "token_revoked") {
					t.Errorf("%s, revoked part-way: state %s (%s), want token_rejected with Slack's token_revoked", w.TeamID, w.State, w.Reason)
				}
				continue
			}
			if w.State != workspace.Active || w.Err != nil {
				t.Errorf("%s: state %s (%s), err %v; want active", w.TeamID, w.State, w.Reason, w.Err)
			}
			if w.Rotating && w.Refreshes < 2 {
				t.Errorf("%s: rotating token refreshed %d times, want several", w.TeamID, w.Refreshes)
			}
			out := checkSeedWorkspace(t, o, w.Result, w.TeamID+": ")
			if i == 0 {
				out.changes = changes
			}
			agg.add(out)
		}
		if t.Failed() {
			t.Log(replay(seed))
		}
	})
}

// checkSeedWorkspace holds one workspace of a seed to the simulation's promises: its
// read model matches its truth within convergenceBound and stays so, its change feed
// rebuilds its store, every fault kind was injected, and its request log obeys the
// pacing rules.
func checkSeedWorkspace(t *testing.T, o Options, res Result, prefix string) seedResult {
	t.Helper()
	var out seedResult
	out.mutations, out.ticksToConverge = res.Mutations, res.TicksToConverge
	took := res.ConvergedAt.Sub(res.LastChange)
	bound, rotation, promised := convergenceBound(o, res)
	switch {
	case len(res.Report.Differences) > 0 && res.TicksToConverge >= 0:
		t.Errorf("%sread model matched after %d ticks, then differed again (%s):\n%s", prefix, res.TicksToConverge, res.Report, differences(res))
	case len(res.Report.Differences) > 0:
		t.Errorf("%sread model still differs %d ticks after the last change (%s):\n%s", prefix, res.Ticks, res.Report, differences(res))
	case promised && took > bound:
		t.Errorf("%sread model matched %s (%d ticks) after the last change, want within %s (rotation period reported: %s)",
			prefix, took, res.TicksToConverge, bound, rotation)
	}
	out.noRotation = !promised
	assertFeed(t, res)
	out.feed = res.Feed.Kinds
	if res.Report.Messages == 0 || res.Mutations == res.Skipped {
		t.Errorf("%snothing compared or changed: %+v", prefix, res.Report)
	}
	// The rotating workspace's refreshes (oauth.v2.access) are not paced by the
	// client's limiters: Slack allows them at Tier 4, and they are a few.
	var reqs []slackfake.Request
	for _, r := range res.Requests {
		if r.Method != "oauth.v2.access" {
			reqs = append(reqs, r)
		}
	}
	violations, ra := checkPacing(reqs, rates(o), fakeRates(o))
	if len(violations) > 0 {
		t.Errorf("%s%d pacing violations in the request log, the first: %s", prefix, len(violations), strings.Join(violations[:min(len(violations), 5)], "; "))
	}
	out.faults = map[slackfake.FaultKind]int{}
	for _, r := range reqs {
		out.faults[r.Fault]++
		if r.Method == rm.MethodReplies && r.Params.Get("limit") == "1" && r.Status == 200 && r.Error == "" {
			out.located++
		}
	}
	for _, k := range allFaults {
		if out.faults[k] == 0 {
			t.Errorf("%sfault %s was never injected", prefix, k)
		}
	}
	// Whether the fake's limit is reached depends on the seed's traffic (a seed
	// whose conversations are mostly archived or left sends little): the run as a
	// whole must meet real 429s (see TestConvergesUnderMutationsAndFaults).
	out.limited = ra.WithRetryAfter
	t.Logf("%s%s after %d changes; matched %s (%d ticks) after the last change (bound %s, rotation period %s); %d requests, %d 429s with Retry-After",
		prefix, res.Report, res.Mutations, took, res.TicksToConverge, bound, rotation, len(res.Requests), out.limited)
	return out
}

// assertFeed holds the change feed to its promise: complete and exact (replayed from
// seq 1 over nothing, it gives what the store holds: text, edited, reactions,
// replies, deleted, missing), and silent when nothing changes (no change after the
// read model matched the truth and the workspace had stopped changing).
func assertFeed(t *testing.T, res Result) {
	t.Helper()
	f := res.Feed
	if n := len(f.Differences); n > 0 {
		t.Errorf("the change feed (%d changes) does not rebuild the store: %d differences, the first:\n%s",
			f.Changes, n, strings.Join(f.Differences[:min(n, 5)], "\n"))
	}
	if n := len(f.AfterMatch); n > 0 && len(res.Report.Differences) == 0 {
		var first []string
		for _, c := range f.AfterMatch[:min(n, 5)] {
			b, _ := json.Marshal(c)
			first = append(first, string(b))
		}
		t.Errorf("%d changes were written after the read model matched the unchanging workspace: a re-read without change must emit none; the first:\n%s",
			n, strings.Join(first, "\n"))
	}
}

func replay(seed int64) string {
	return fmt.Sprintf("replay: go test ./internal/demo -run 'TestConvergesUnderMutationsAndFaults/seeds/seed=%d$' -first-seed %d -seeds 1 -v", seed, seed)
}

func differences(res Result) string {
	d := res.Report.Differences
	return strings.Join(d[:min(10, len(d))], "\n")
}

// rates and fakeRates are the client's and the fake's requests per minute, as Run
// sets them.
func rates(o Options) map[string]float64 {
	out := map[string]float64{}
	for _, m := range rm.Methods() {
		out[m] = o.RatePerMinute
	}
	return out
}

func fakeRates(o Options) map[string]int {
	out := map[string]int{}
	for _, m := range rm.Methods() {
		out[m] = int(o.RatePerMinute)
	}
	for m, n := range o.FakeRates {
		out[m] = n
	}
	return out
}

// changeKind names the kind of a mutator change from its description: its words up
// to the first ID, ts or quote ("delete thread parent", "react", "skip").
func changeKind(d string) string {
	if strings.HasPrefix(d, "skip") || strings.Contains(d, "(skipped") {
		return "skip"
	}
	var words []string
	for _, w := range strings.Fields(d) {
		if w == "by" || w == "on" || w == "to" || w == "from" || strings.ContainsAny(w, "0123456789:\"") {
			break
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

// aggregate sums the seeds of one run, for the log.
type aggregate struct {
	mu                       sync.Mutex
	seeds, mutations, limit  int
	located                  int
	noRotation, limitedSeeds int
	ticks                    []int
	changes                  map[string]int
	faults                   map[slackfake.FaultKind]int
	// feed counts the change feed's changes by kind, over all seeds.
	feed map[string]int
}

func (a *aggregate) add(r seedResult) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.changes == nil {
		a.changes, a.faults, a.feed = map[string]int{}, map[slackfake.FaultKind]int{}, map[string]int{}
	}
	for k, n := range r.feed {
		a.feed[k] += n
	}
	a.seeds++
	a.mutations += r.mutations
	a.limit += r.limited
	a.located += r.located
	if r.noRotation {
		a.noRotation++
	}
	if r.limited > 0 {
		a.limitedSeeds++
	}
	a.ticks = append(a.ticks, r.ticksToConverge)
	for k, n := range r.changes {
		a.changes[k] += n
	}
	for k, n := range r.faults {
		a.faults[k] += n
	}
}

func (a *aggregate) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seeds == 0 {
		return "no seed finished"
	}
	slices.Sort(a.ticks)
	q := func(p float64) int { return a.ticks[int(p*float64(len(a.ticks)-1))] }
	var b strings.Builder
	fmt.Fprintf(&b, "%d seeds, %.0f changes per seed; ticks from the last change to a match: min %d, median %d, p90 %d, p99 %d, max %d\n",
		a.seeds, float64(a.mutations)/float64(a.seeds), a.ticks[0], q(0.5), q(0.9), q(0.99), a.ticks[len(a.ticks)-1])
	hist := map[int]int{}
	for _, n := range a.ticks {
		hist[n]++
	}
	fmt.Fprintf(&b, "ticks to a match (-1: never): seeds %v; %d seeds without a reported rotation period\n", hist, a.noRotation)
	fmt.Fprintf(&b, "changes: %v\nfaults: %v; 429s with Retry-After: %d, in %d seeds; tracked replies found through their thread: %d\nchange feed: %v",
		a.changes, a.faults, a.limit, a.limitedSeeds, a.located, a.feed)
	return b.String()
}
