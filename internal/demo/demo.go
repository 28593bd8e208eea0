// Package demo runs slackpoll end to end against the fake Slack of internal/slackfake:
// a generated workspace changes under a seeded stream of mutations (and a few injected
// faults) while the real poller, Slack client and bbolt store keep a read model of it;
// then the read model is compared with the workspace's truth. It backs `slackpoll demo`
// and the convergence tests.
package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/converge"
	"github.com/slackpoll/slackpoll/internal/export"
	"github.com/slackpoll/slackpoll/internal/poller"
	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackapi"
	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// Options configure Run. Zero values take the defaults of DefaultOptions.
type Options struct {
	Seed int64
	Size slackfake.GenSize
	// MutateFor is how long the workspace changes; MutateEvery the pause between two
	// changes.
	MutateFor, MutateEvery time.Duration
	// FaultRate is the probability that a Slack call gets an injected fault (429
	// with and without Retry-After, 5xx, reset, malformed or truncated body, a bad
	// message in a page).
	FaultRate float64
	// RatePerMinute is the request rate per method of both the fake's limits and the
	// client's pacing.
	RatePerMinute float64
	// PageCap caps the fake's page sizes (Slack returns 15 to non-Marketplace apps).
	PageCap int
	// Budget, Interval and UserCacheTTL configure the poller.
	Budget       poller.Budget
	Interval     time.Duration
	UserCacheTTL time.Duration
	// Track is how many messages older than the bulk window are tracked (as an app
	// would with `slackpoll track`), so the tail rotation has work.
	Track int
	// MaxRotations bounds the wait for convergence after the last change, in tail
	// rotations; past it the differences found are reported.
	MaxRotations int
	// MaxTicks, if positive, bounds that wait in ticks instead of MaxRotations.
	MaxTicks int
	// Faults are the kinds of fault injected at FaultRate; nil means every kind but
	// Slow (see demoFaults).
	Faults []slackfake.FaultKind
	// Disruptive lets the mutations also archive and unarchive conversations and
	// remove the bot from and re-add it to them (slackfake.Mutator.Disruptive).
	Disruptive bool
	// FakeRates overrides the fake's limit (requests per minute) for some methods.
	// Below RatePerMinute, the client outpaces Slack and gets real 429s with a
	// Retry-After.
	FakeRates map[string]int
	// RequestTimeout bounds one HTTP attempt (default 5s).
	RequestTimeout time.Duration
	// Setup, if set, is called with the fake once its workspace is generated, before
	// the poller starts (tests queue faults with it). OnChange is called with the
	// description of every change the mutator applies (slackfake.Mutator.Step).
	Setup    func(*slackfake.Server)
	OnChange func(string)
	// InfoRefresh is the poller's conversations.info refresh and per-conversation
	// retry period (0 = the poller's default, 1h).
	InfoRefresh time.Duration
	// Dir holds the store file (RunWorkspaces: a store per workspace, <team_id>.db,
	// and the installations registry of the rotating workspace).
	Dir string
	// Workspaces is the number of workspaces RunWorkspaces runs in one supervisor
	// (0 or 1: one; Run always runs one, as it always has). Workspace i is team
	// T<i, zero-padded>, generated from seed Seed+i. With two or more, workspace 1's
	// token rotates, expiring every TokenLifetime; with three or more, workspace 2's
	// token is revoked half-way through the changes.
	Workspaces int
	// TokenLifetime is the life of the rotating workspace's access tokens (default
	// 4 s: several expiries in any demo).
	TokenLifetime time.Duration
	// NoSync skips fsync on store commits (tests: the simulation never crashes).
	NoSync bool
	// Loopback serves the fake on 127.0.0.1 (as `slackpoll demo` does); otherwise it is
	// reached through an in-memory transport, which tests run under testing/synctest.
	Loopback bool
	// Out receives one line per tick and the progress; Log the poller's logs.
	Out io.Writer
	Log *slog.Logger
	// Feed configures the change feed (Backfill on: every message read reports
	// itself, so the feed alone rebuilds the store from empty). Result.Feed says
	// whether it did.
	Feed rm.FeedConfig
	// Projections are SQL projection targets kept from the store's commits as the
	// daemon keeps them; Result.Projections says whether each equals the store at
	// the end. RestartProjectionsAt, if positive, restarts their projectors that
	// long into the changes (a daemon restart: the new ones sync).
	Projections          []projection.Spec
	RestartProjectionsAt time.Duration
}

// DefaultOptions are the demo's: a small workspace changing for 30 s, at rates high
// enough to finish in about a minute.
func DefaultOptions() Options {
	return Options{
		Seed: 1, Size: slackfake.Small,
		MutateFor: 30 * time.Second, MutateEvery: 25 * time.Millisecond,
		FaultRate: 0.01, RatePerMinute: 3000, PageCap: 200,
		Budget:   poller.Budget{HistoryCalls: 340, RepliesCalls: 150, UsersInfoCalls: 100, ReactionsCalls: 300},
		Interval: time.Second, UserCacheTTL: 5 * time.Second, MaxRotations: 4, Track: 300,
		Loopback: true, Out: io.Discard,
	}
}

// maxTicks bounds the wait for convergence after the last change: MaxTicks if set,
// else MaxRotations rotations of the tracked set the history stream can cover, at
// one message per call (a bound: a range re-reads a page of them).
func (o *Options) maxTicks() int {
	if o.MaxTicks > 0 {
		return o.MaxTicks
	}
	perRotation := (o.Size.Messages + o.Track) / max(1, o.Budget.HistoryCalls)
	return o.MaxRotations * (perRotation + 2)
}

// demoFaults are the injected failures: every kind but Slow, whose minutes-long
// stalls would only make the demo wait on request timeouts.
var demoFaults = []slackfake.FaultKind{
	slackfake.Status5xx, slackfake.ConnReset, slackfake.MalformedJSON, slackfake.TruncatedBody,
	slackfake.BadMessage, slackfake.RateLimitNoRetryAfter, slackfake.RepeatCursor, slackfake.InvalidCursor,
}

// Result is what a run measured.
type Result struct {
	// Report is the last comparison: the first one with differences after the read
	// model had matched (a regression), else the last one made.
	Report converge.Report
	// Mutations applied (Skipped of them found nothing to act on); Ticks run in all;
	// TicksToConverge: ticks after the last change until the read model first
	// matched the truth, -1 if it never did.
	Mutations, Skipped, Ticks, TicksToConverge int
	Calls                                      map[string]int
	Tracked                                    int
	Elapsed                                    time.Duration
	// Requests is the fake's request log (slackfake.Server.Requests), for rate
	// compliance checks.
	Requests []slackfake.Request
	// LastChange is when the last change was applied; ConvergedAt when the read model
	// first matched after it (zero if never). TickLog holds every tick's summary.
	LastChange, ConvergedAt time.Time
	TickLog                 []rm.TickSummary
	// Feed is the change feed's check: replayed from seq 1 over nothing, it must
	// give what the store holds.
	Feed FeedCheck
	// Projections are the SQL projection's checks, one per Options.Projections.
	Projections []ProjectionCheck
}

// FeedCheck is the outcome of replaying the change feed.
type FeedCheck struct {
	// Changes is the number of changes written; Kinds counts them by kind.
	Changes int
	Kinds   map[string]int
	// Differences between the replayed feed and the store (converge.DiffFeed), and
	// the changes the replay could not apply.
	Differences []string
	// AfterMatch lists the changes written after the read model first matched the
	// truth, when nothing changed any more, other than first reads of messages and
	// what a later read learns of a message gone from the workspace (deleted after
	// missing): re-reads must emit none.
	AfterMatch []rm.Change
}

// Run runs the demo until the read model matches the truth after the last change, or
// MaxRotations tail rotations have passed, or ctx ends.
func Run(ctx context.Context, o Options) (Result, error) {
	o.fill()
	start := time.Now()
	rates, _ := o.rateTables()
	fake := o.newFake(o.Seed, slackfake.Options{})
	convs := fake.ConversationIDs()
	window := bulkWindow

	apiURL, httpClient := "http://slack.fake/api/", fake.Client()
	if o.Loopback {
		srv := httptest.NewServer(fake)
		defer srv.Close()
		apiURL, httpClient = srv.URL+"/api/", &http.Client{}
	}
	store, err := boltstore.Open(filepath.Join(o.Dir, "demo.db"), boltstore.Options{NoSync: o.NoSync})
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = store.Close() }() // the comparison is done; nothing is written after it
	model := projection.Watch(store)
	var proj *projectors
	if len(o.Projections) > 0 {
		if proj, err = startProjectors(ctx, model, o.Log, o.Projections); err != nil {
			return Result{}, err
		}
		defer proj.close()
	}
	src, err := slackapi.New(slackapi.Options{
		Token: fake.Token(), APIURL: apiURL, HTTPClient: httpClient, RequestTimeout: o.RequestTimeout,
		Rates: rates, Pacing: slackapi.StorePacing(store), Logger: o.Log,
	})
	if err != nil {
		return Result{}, err
	}

	res := Result{Calls: map[string]int{}}
	rec := newRecorder(&res, o.Out, "")
	pl := poller.New(model, src, o.pollerConfig(rates, poller.Config{
		Conversations: convs, Logger: o.Log, OnTick: rec.onTick,
	}))
	tracked, err := trackOlder(model, fake.Truth(), time.Now().Add(-window), o.Track)
	if err != nil {
		return res, err
	}
	pctx, stop := context.WithCancel(ctx)
	var runErr error
	finished := make(chan struct{})
	go func() { runErr = pl.Run(pctx); close(finished) }()
	stopPoller := func() { stop(); <-finished }
	defer stopPoller()

	fmt.Fprintf(o.Out, "fake workspace: %d conversations; %d older messages tracked; mutating for %s with %.1f%% injected faults\n",
		len(convs), tracked, o.MutateFor, 100*o.FaultRate)
	fake.SetFaultRate(o.faults(), o.FaultRate)
	restartAt := time.Now().Add(o.RestartProjectionsAt)
	until := time.Now().Add(o.MutateFor)
	if err := mutate(ctx, &o, fake, o.Seed, until, &res, func() {
		if proj != nil && o.RestartProjectionsAt > 0 && !time.Now().Before(restartAt) {
			proj.restart()
			restartAt = until
		}
	}); err != nil {
		return res, err
	}
	fmt.Fprintf(o.Out, "%d changes applied; comparing after every tick until the read model matches, then for a full tail rotation more\n", res.Mutations)

	cv := newConvergence(&o, store, fake, convs, rec)
	if err := cv.wait(ctx, finished, func() error { return fmt.Errorf("poller stopped: %w", runErr) }); err != nil {
		return res, err
	}
	stopPoller() // before reading what its ticks recorded
	if res.Feed, err = checkFeed(store, cv.seqAtMatch, fake.Truth()); err != nil {
		return res, err
	}
	if proj != nil {
		res.Projections = proj.check(ctx, store, 5*time.Minute)
	}
	res.Requests = fake.Requests()
	res.Elapsed = time.Since(start)
	_ = store.View(func(tx rm.Tx) error {
		return tx.Conversations(func(c rm.Conversation) error {
			n, err := tx.Counts(c.ID)
			res.Tracked += n.Tracked
			return err
		})
	})
	return res, nil
}

// trackOlder tracks up to n messages older than before, spread evenly over the
// truth's top-level messages, each with a record key "demo-<i>". For every fourth
// one that is a thread parent, its newest reply is tracked instead: a reply in a
// thread the store does not hold, which conversations.history never returns and the
// poller must find through conversations.replies.
func trackOlder(store rm.Store, truth slackfake.Truth, before time.Time, n int) (int, error) {
	var older []export.MessageLine
	cut := rm.TSFromUnix(before.Unix())
	for _, m := range truth.Messages {
		if m.TS.Before(cut) && (m.ThreadTS == "" || m.ThreadTS == m.TS) {
			older = append(older, m)
		}
	}
	if n <= 0 || len(older) == 0 {
		return 0, nil
	}
	step := max(1, len(older)/n)
	count := 0
	for i := 0; i < len(older) && count < n; i += step {
		ts := older[i].TS
		if r := older[i].Replies; count%4 == 3 && len(r) > 0 {
			ts = r[len(r)-1].TS
		}
		if err := rm.Track(store, older[i].Channel, ts, fmt.Sprintf("demo-%d", count)); err != nil {
			return count, err
		}
		count++
	}
	return count, nil
}

// OldestPolled returns the RotatedAt of the least recently refreshed tracked message
// (with its thread, for a parent) in a conversation the poller reads (status ok), zero
// when one was never read. Conversations it cannot read keep stale data by design.
func OldestPolled(s rm.Store) (time.Time, error) {
	var t time.Time
	err := s.View(func(tx rm.Tx) error {
		readable := map[string]bool{}
		if err := tx.Conversations(func(c rm.Conversation) error {
			readable[c.ID] = c.Status == rm.StatusOK
			return nil
		}); err != nil {
			return err
		}
		e, err := tx.TailOldest(1, func(e rm.TailEntry) bool { return !readable[e.Channel] })
		if err != nil || len(e) == 0 || e[0].RotatedAt == nil {
			return err
		}
		t = *e[0].RotatedAt
		return nil
	})
	return t, err
}

func callsString(calls map[string]int) string {
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(calls)) {
		parts = append(parts, fmt.Sprintf("%s=%d", strings.TrimPrefix(m, "conversations."), calls[m]))
	}
	return strings.Join(parts, " ")
}

func lastSeq(s rm.Store) (last uint64, err error) {
	err = s.View(func(tx rm.Tx) error {
		_, last, err = tx.ChangeBounds()
		return err
	})
	return last, err
}

// checkFeed replays the whole change feed over an empty model and compares it with
// the store; seqAtMatch is the last seq when the read model first matched the truth
// (0 if it never did).
func checkFeed(s rm.Store, seqAtMatch uint64, truth slackfake.Truth) (FeedCheck, error) {
	exists := map[rm.Ref]bool{} // undeleted messages of the workspace, replies included
	for _, m := range truth.Messages {
		exists[rm.Ref{Channel: m.Channel, TS: m.TS}] = !m.Deleted
		for _, r := range m.Replies {
			exists[rm.Ref{Channel: m.Channel, TS: r.TS}] = true
		}
	}
	fc := FeedCheck{Kinds: map[string]int{}}
	replayed := converge.FeedModel{}
	err := s.View(func(tx rm.Tx) error {
		return tx.Changes(0, func(c rm.Change) error {
			fc.Changes++
			fc.Kinds[c.Kind]++
			// A message read for the first time after the match (a tracked one
			// older than the compared window) is news to the feed, not a re-read.
			_, known := replayed[rm.Ref{Channel: c.Channel, TS: c.TS}]
			firstRead := !known && (c.Kind == rm.ChangeMessagePosted || c.Kind == rm.ChangeReplyAdded)
			// A message gone from the workspace matches as missing or deleted; a
			// later read may learn the other (thread_not_found after missing).
			gone := !exists[rm.Ref{Channel: c.Channel, TS: c.TS}] &&
				(c.Kind == rm.ChangeMessageDeleted || c.Kind == rm.ChangeMessageMissing || c.Kind == rm.ChangeReplyRemoved)
			if seqAtMatch > 0 && c.Seq > seqAtMatch && !firstRead && !gone {
				fc.AfterMatch = append(fc.AfterMatch, c)
			}
			if err := replayed.Apply(&c); err != nil {
				fc.Differences = append(fc.Differences, err.Error())
			}
			return nil
		})
	})
	if err != nil {
		return fc, err
	}
	stored, err := converge.StoreFeedModel(s)
	if err != nil {
		return fc, err
	}
	fc.Differences = append(fc.Differences, converge.DiffFeed(replayed, stored)...)
	return fc, nil
}
