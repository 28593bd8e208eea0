package demo

import (
	"context"
	"flag"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// fleetSize is the number of workspaces of TestManyWorkspacesInOneSupervisor.
var fleetSize = flag.Int("workspaces", 200, "number of workspaces TestManyWorkspacesInOneSupervisor runs in one supervisor")

// tinyFleetOptions are options of many tiny workspaces in virtual time: a few
// conversations and messages each, changing for 8 s, with faults.
func tinyFleetOptions(t *testing.T, n int) Options {
	o := DefaultOptions()
	o.Loopback = false
	o.Workspaces = n
	o.Seed = 7
	o.Dir = t.TempDir()
	o.NoSync = true
	o.Size = slackfake.GenSize{Conversations: 3, Messages: 30, Users: 4}
	o.MutateFor = 8 * time.Second
	o.MutateEvery = 400 * time.Millisecond
	o.PageCap = 8
	o.Track = 5
	o.FaultRate = 0.02
	o.Budget = poller.Budget{HistoryCalls: 30, RepliesCalls: 30, UsersInfoCalls: 20, ReactionsCalls: 20}
	o.Interval = time.Second
	o.UserCacheTTL = 5 * time.Second
	o.InfoRefresh = 10 * time.Second
	o.MaxTicks = 200
	o.Feed.Backfill = true
	return o
}

// assertFleet holds a fleet run to the demo's promise: every live workspace's read
// model and change feed match its truth, the rotating one refreshed its token and
// matched too, the revoked one ended token_rejected with Slack's error, and the
// summary line says so.
func assertFleet(t *testing.T, f Fleet, n int) {
	t.Helper()
	if len(f.Workspaces) != n {
		t.Fatalf("%d workspace results, want %d", len(f.Workspaces), n)
	}
	for _, p := range f.Problems()[:min(20, len(f.Problems()))] {
		t.Error(p)
	}
	for _, w := range f.Workspaces {
		switch {
		case w.Revoked:
			if !strings.HasPrefix(w.Reason, "token_revoked") {
				t.Errorf("%s: revoked, reason %q, want Slack's token_revoked", w.TeamID, w.Reason)
			}
		case w.TicksToConverge < 0 || w.Report.Messages == 0:
			t.Errorf("%s: never matched (%s)", w.TeamID, w.Report)
		case w.Rotating && w.Refreshes < 2:
			t.Errorf("%s: rotating, %d refreshes, want several (tokens live %v)", w.TeamID, w.Refreshes, defaultTokenLifetime)
		}
		if n >= 2 && w.Rotating != (w.TeamID == teamID(rotatingIndex, n)) || n >= 3 && w.Revoked != (w.TeamID == teamID(revokedIndex, n)) {
			t.Errorf("%s: roles rotating=%v revoked=%v", w.TeamID, w.Rotating, w.Revoked)
		}
	}
	if s := f.Summary(); !strings.HasPrefix(s, "read model matches every workspace: ") || !strings.HasSuffix(s, ", 0 differences") {
		t.Errorf("summary %q", s)
	}
}

// TestManyWorkspacesInOneSupervisor is issue 19's demo as a test: -workspaces (200)
// tiny workspaces in one supervisor, in virtual time, each changing under faults,
// one with a token that expires every 4 s and is refreshed, one revoked half-way.
// Every live workspace's read model and change feed must match its own truth; the
// revoked one must stop as token_rejected while the others go on.
func TestManyWorkspacesInOneSupervisor(t *testing.T) {
	n := *fleetSize
	if n < 3 {
		t.Fatalf("-workspaces %d: want 3 or more (a rotating and a revoked one)", n)
	}
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		f, err := RunWorkspaces(context.Background(), tinyFleetOptions(t, n))
		must(t, err)
		assertFleet(t, f, n)
		t.Logf("%s (%v virtual)", f.Summary(), time.Since(start))
	})
}
