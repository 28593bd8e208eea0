package demo

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/ctxsleep"
	"github.com/slackpoll/slackpoll/internal/installs"
	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackapi"
	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/workspace"
)

// The workspaces of RunWorkspaces with a role: the rotating one (from two
// workspaces) and the revoked one (from three).
const (
	rotatingIndex = 1
	revokedIndex  = 2
)

// The demo app's credentials, as the fake's oauth.v2.access checks them.
const (
	demoClientID     = "1000000001.2000000002"
	demoClientSecret = "demo-client-secret"
)

// defaultTokenLifetime is the rotating workspace's token life unless
// Options.TokenLifetime says otherwise.
const defaultTokenLifetime = 4 * time.Second

// WorkspaceResult is one workspace of RunWorkspaces: its Result as Run's, its role,
// and its state at the end.
type WorkspaceResult struct {
	Result
	TeamID string
	// Rotating: its token rotates; Refreshes counts the token refreshes Slack
	// answered (oauth.v2.access). Revoked: its token was revoked part-way.
	Rotating, Revoked bool
	Refreshes         int
	// State and Reason are the workspace's at the end (workspace.Status).
	State  workspace.State
	Reason string
	// Err is why its observation ended early (the workspace stopped), nil if it
	// did not.
	Err error
}

// Problems lists what is wrong with the workspace at the end: for a live one, any
// difference between its read model or change feed and its truth, or its stop; for
// the revoked one, any state but token_rejected. Empty: as expected.
func (w WorkspaceResult) Problems() []string {
	if w.Revoked {
		if w.State != workspace.TokenRejected {
			return []string{fmt.Sprintf("%s: revoked part-way, but its state is %s (%s), want %s", w.TeamID, w.State, w.Reason, workspace.TokenRejected)}
		}
		return nil
	}
	var out []string
	if w.Err != nil {
		out = append(out, fmt.Sprintf("%s: %v", w.TeamID, w.Err))
	}
	if w.State != workspace.Active {
		out = append(out, fmt.Sprintf("%s: state %s (%s)", w.TeamID, w.State, w.Reason))
	}
	for _, d := range w.Report.Differences {
		out = append(out, w.TeamID+": "+d)
	}
	for _, d := range w.Feed.Differences {
		out = append(out, w.TeamID+": change feed: "+d)
	}
	return out
}

// Fleet is what RunWorkspaces measured: one result per workspace, by team ID.
type Fleet struct {
	Workspaces []WorkspaceResult
	Elapsed    time.Duration
}

// Problems lists every workspace's problems (WorkspaceResult.Problems).
func (f Fleet) Problems() []string {
	var out []string
	for _, w := range f.Workspaces {
		out = append(out, w.Problems()...)
	}
	return out
}

// Summary is the run in one line: "read model matches every workspace: N
// workspaces, … , 0 differences", or "read model differs: …" with the number of
// problems.
func (f Fleet) Summary() string {
	var msgs, threads, users, refreshes int
	var parts []string
	for _, w := range f.Workspaces {
		if !w.Revoked {
			msgs, threads, users = msgs+w.Report.Messages, threads+w.Report.Threads, users+w.Report.Users
		}
		refreshes += w.Refreshes
	}
	parts = append(parts, fmt.Sprintf("%d workspaces, %d messages, %d threads, %d users", len(f.Workspaces), msgs, threads, users))
	for _, w := range f.Workspaces {
		switch {
		case w.Rotating:
			parts = append(parts, fmt.Sprintf("1 rotating (%d refreshes)", w.Refreshes))
		case w.Revoked:
			parts = append(parts, fmt.Sprintf("1 revoked part-way (%s)", w.State))
		}
	}
	n := len(f.Problems())
	head := "read model matches every workspace: "
	if n > 0 {
		head = "read model differs: "
	}
	return fmt.Sprintf("%s%s, %d differences", head, strings.Join(parts, ", "), n)
}

// teamID names workspace i of n: T and i zero-padded to at least 4 digits.
func teamID(i, n int) string {
	return fmt.Sprintf("T%0*d", max(4, len(fmt.Sprint(n-1))), i)
}

// fleetMember is one workspace while RunWorkspaces runs.
type fleetMember struct {
	res   WorkspaceResult
	fake  *slackfake.Server
	seed  int64
	convs []string
	rec   *recorder
	unit  *workspace.Unit
}

// RunWorkspaces runs o.Workspaces generated workspaces (at least one) in one
// workspace.Supervisor, as the daemon runs its installations: each its own fake team
// in one slackfake.Teams (own token, data, rate limits, faults), store, client and
// poller. They all change at once for MutateFor; the rotating one's token expires
// every TokenLifetime and is refreshed by an installs.Rotator; the revoked one's
// token is revoked at MutateFor/2. Then each live workspace is observed as Run
// observes its one, and its change feed checked. SQL projections are not run
// (Options.Projections is ignored): Run checks them for one workspace.
//
// The error is for a run that could not go on (ctx ended, a store or registry that
// cannot be opened); differences are in the Fleet.
func RunWorkspaces(ctx context.Context, o Options) (Fleet, error) {
	o.fill()
	start := time.Now()
	n := max(1, o.Workspaces)
	rates, _ := o.rateTables()
	lifetime := o.TokenLifetime
	if lifetime <= 0 {
		lifetime = defaultTokenLifetime
	}

	teams := slackfake.NewTeams()
	members := make([]*fleetMember, n)
	byTeam := make(map[string]*fleetMember, n)
	for i := range members {
		m := &fleetMember{seed: o.Seed + int64(i)}
		m.res.TeamID = teamID(i, n)
		m.res.Rotating = n >= 2 && i == rotatingIndex
		m.res.Revoked = n >= 3 && i == revokedIndex
		id := slackfake.Options{TeamID: m.res.TeamID, TeamName: fmt.Sprintf("demo workspace %d", i)}
		if m.res.Rotating {
			id.TokenLifetime = lifetime
		}
		m.fake = o.newFake(m.seed, id)
		if err := teams.Add(m.fake); err != nil {
			return Fleet{}, err
		}
		m.convs = m.fake.ConversationIDs()
		m.res.Result = Result{Calls: map[string]int{}, TicksToConverge: -1}
		prefix := ""
		if n > 1 {
			prefix = m.res.TeamID + " "
		}
		out := o.Out
		if n > 10 {
			out = io.Discard // a line per tick of hundreds of workspaces says nothing
		}
		m.rec = newRecorder(&m.res.Result, out, prefix)
		members[i], byTeam[m.res.TeamID] = m, m
	}

	apiURL, httpClient := "http://slack.fake/api/", teams.Client()
	if o.Loopback {
		srv := httptest.NewServer(teams)
		defer srv.Close()
		apiURL, httpClient = srv.URL+"/api/", &http.Client{}
	}
	sup := workspace.New(ctx, workspace.Options{
		Dir:   o.Dir,
		Store: boltstore.Options{NoSync: o.NoSync},
		Slack: slackapi.Options{APIURL: apiURL, HTTPClient: httpClient, RequestTimeout: o.RequestTimeout,
			Rates: rates, Logger: o.Log},
		Poller: o.pollerConfig(rates, poller.Config{}),
		Logger: o.Log,
		OnTick: func(u *workspace.Unit, s rm.TickSummary) {
			if m := byTeam[u.Spec().TeamID]; m != nil {
				m.rec.onTick(s)
			}
		},
	})
	defer func() { _ = sup.Close() }()

	var reg *installs.Registry
	tracked := 0
	for _, m := range members {
		creds := workspace.Credentials(workspace.StaticToken(m.fake.Token()))
		if m.res.Rotating {
			if reg == nil {
				var err error
				if reg, err = openDemoRegistry(filepath.Join(o.Dir, "installations.db")); err != nil {
					return Fleet{}, err
				}
				defer func() { _ = reg.Close() }()
			}
			rot, err := rotatingCredentials(m.fake, reg, m.convs, slackapi.OAuthOptions{APIURL: apiURL, HTTPClient: httpClient,
				ClientID: demoClientID, ClientSecret: demoClientSecret}, o)
			if err != nil {
				return Fleet{}, err
			}
			creds = rot
		}
		u, err := sup.Start(workspace.Spec{TeamID: m.res.TeamID, Source: workspace.SourceConfig,
			Credentials: creds, Conversations: m.convs})
		if err != nil {
			return Fleet{}, err
		}
		if st := u.Status(); st.State == workspace.Damaged {
			return Fleet{}, fmt.Errorf("workspace %s: %s", m.res.TeamID, st.Reason)
		}
		m.unit = u
		k, err := trackOlder(u.Model(), m.fake.Truth(), time.Now().Add(-bulkWindow), o.Track)
		if err != nil {
			return Fleet{}, err
		}
		tracked += k
	}
	fmt.Fprintf(o.Out, "%d fake workspaces in one daemon; %d older messages tracked; mutating for %s with %.1f%% injected faults\n",
		n, tracked, o.MutateFor, 100*o.FaultRate)

	// Every workspace changes at once, each on its own goroutine; OnChange is called
	// one change at a time.
	mo := o
	if o.OnChange != nil {
		var mu sync.Mutex
		mo.OnChange = func(d string) { mu.Lock(); defer mu.Unlock(); o.OnChange(d) }
	}
	until := time.Now().Add(o.MutateFor)
	revokeAt := time.Now().Add(o.MutateFor / 2)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, m := range members {
		// Not the rotating workspace's: a fault that destroys the answer to a refresh
		// Slack processed is the one loss no client can undo (package installs'
		// doc); it ends refresh_failed by design, and installs' kill test covers it.
		// The demo holds that workspace to a match. Queued faults (Setup) still
		// reach its other calls.
		if !m.res.Rotating {
			m.fake.SetFaultRate(o.faults(), o.FaultRate)
		}
		var each func()
		if m.res.Revoked {
			each = func() {
				if !time.Now().Before(revokeAt) {
					m.fake.RevokeToken() // the app uninstalled from this workspace
					revokeAt = until.Add(time.Hour)
				}
			}
		}
		wg.Go(func() { errs[i] = mutate(ctx, &mo, m.fake, m.seed, until, &m.res.Result, each) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Fleet{}, err
	}
	total := 0
	for _, m := range members {
		total += m.res.Mutations
	}
	fmt.Fprintf(o.Out, "%d changes applied; comparing every workspace after each of its ticks until its read model matches, then for a full tail rotation more\n", total)

	for i, m := range members {
		if m.res.Revoked {
			continue
		}
		wg.Go(func() {
			if errs[i] = m.observe(ctx, &o); errs[i] != nil {
				return
			}
			// Observed to the end: its state now, then it stops polling, so that the
			// slowest workspace's wait costs only its own ticks.
			st := m.unit.Status()
			m.res.State, m.res.Reason = st.State, st.Reason
			if _, err := sup.Stop(m.res.TeamID); err != nil {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Fleet{}, err
	}
	if ms := members[min(revokedIndex, n-1)]; ms.res.Revoked {
		// Its poller meets the revoked token at its first call after the revoke: by
		// now, long ago. A little more time, for a slow machine.
		for deadline := time.Now().Add(time.Minute); ms.unit.Status().State == workspace.Active && time.Now().Before(deadline); {
			if err := ctxsleep.Sleep(ctx, o.Interval); err != nil {
				return Fleet{}, err
			}
		}
	}
	f := Fleet{Workspaces: make([]WorkspaceResult, n)}
	for i, m := range members {
		if m.res.Revoked {
			st := m.unit.Status()
			m.res.State, m.res.Reason = st.State, st.Reason
		}
		m.res.Requests = m.fake.Requests()
		for _, r := range m.res.Requests {
			if r.Method == "oauth.v2.access" && r.Status == http.StatusOK && r.Error == "" {
				m.res.Refreshes++
			}
		}
		f.Workspaces[i] = m.res
	}
	f.Elapsed = time.Since(start)
	return f, nil
}

// observe waits until the workspace's read model matches its truth as Run does, then
// checks its change feed (with Options.Feed.Backfill: a feed of every first read). The workspace keeps polling meanwhile (the others are
// still observed): the feed check reads one snapshot of its store.
func (m *fleetMember) observe(ctx context.Context, o *Options) error {
	stopped := make(chan struct{})
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for m.unit.Status().State == workspace.Active {
			if ctxsleep.Sleep(octx, o.Interval) != nil {
				return
			}
		}
		close(stopped)
	}()
	store := m.unit.Store()
	cv := newConvergence(o, store, m.fake, m.convs, m.rec)
	err := cv.wait(ctx, stopped, func() error {
		st := m.unit.Status()
		return fmt.Errorf("the workspace stopped: %s: %s", st.State, st.Reason)
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	m.res.Err = err
	// Without Backfill the feed reports changes, not first reads: it cannot rebuild
	// the store from nothing, so there is nothing to check it against.
	if o.Feed.Backfill {
		if m.res.Feed, err = checkFeed(store, cv.seqAtMatch, m.fake.Truth()); err != nil {
			return err
		}
	}
	return store.View(func(tx rm.Tx) error {
		return tx.Conversations(func(c rm.Conversation) error {
			n, err := tx.Counts(c.ID)
			m.res.Tracked += n.Tracked
			return err
		})
	})
}

// openDemoRegistry opens the installations registry of the rotating workspace under
// a key of this run only.
func openDemoRegistry(path string) (*installs.Registry, error) {
	raw := make([]byte, installs.KeySize)
	_, _ = rand.Read(raw) // crypto/rand.Read never fails
	key, err := installs.NewKey(raw)
	if err != nil {
		return nil, err
	}
	return installs.OpenRegistry(path, key)
}

// rotatingCredentials turns token rotation on in fake (an install of an app with
// rotation), registers the installation and returns its Rotator as the workspace's
// credentials.
func rotatingCredentials(fake *slackfake.Server, reg *installs.Registry, convs []string, oauth slackapi.OAuthOptions, o Options) (workspace.Rotation, error) {
	access, refresh, expiresIn := fake.EnableRotation(oauth.ClientID, oauth.ClientSecret)
	now := time.Now()
	team := fake.TeamID()
	if err := reg.Put(installs.Installation{TeamID: team, BotToken: installs.Secret(access),
		RefreshToken: installs.Secret(refresh), ExpiresAt: now.Add(expiresIn), Conversations: convs, AddedAt: now}); err != nil {
		return nil, err
	}
	rot, err := installs.NewRotator(installs.RotatorOptions{TeamID: team, Store: reg, OAuth: oauth, Logger: o.Log})
	if err != nil {
		return nil, err
	}
	return rot, nil
}

// rotator is an installs.Rotator as a workspace.Rotation (whose Run returns nothing:
// the Rotator's Run only ever returns nil, when ctx ends).
