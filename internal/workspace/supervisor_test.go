package workspace_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackapi"
	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/workspace"
)

// fleet is n fake workspaces T0W0… in one Teams, generated small, and a
// Supervisor over them in dir, reached in memory.
func fleet(t *testing.T, n int, dir string) (*slackfake.Teams, []*slackfake.Server, *workspace.Supervisor) {
	t.Helper()
	teams := slackfake.NewTeams()
	fakes := addTeams(t, teams, n)
	_, _, sup := fleetWith(t, teams, dir, time.Hour, nil)
	return teams, fakes, sup
}

// addTeams adds n generated fake workspaces T0W0… to teams.
func addTeams(t *testing.T, teams *slackfake.Teams, n int) []*slackfake.Server {
	t.Helper()
	var fakes []*slackfake.Server
	for i := range n {
		s := slackfake.New(slackfake.Options{TeamID: fmt.Sprintf("T0W%d", i), Seed: int64(i)})
		slackfake.Generate(s, int64(i+1), slackfake.GenSize{Conversations: 2, Messages: 30, Users: 3})
		if err := teams.Add(s); err != nil {
			t.Fatal(err)
		}
		fakes = append(fakes, s)
	}
	return fakes
}

// fleetWith is a Supervisor over teams in dir, ticking every interval, whose ticks
// onTick sees.
func fleetWith(t *testing.T, teams *slackfake.Teams, dir string, interval time.Duration, onTick func(*workspace.Unit, rm.TickSummary)) (*slackfake.Teams, []*slackfake.Server, *workspace.Supervisor) {
	t.Helper()
	rates := map[string]float64{}
	for _, m := range slackapi.Methods {
		rates[m] = 6000
	}
	sup := workspace.New(t.Context(), workspace.Options{
		Dir:    dir,
		Store:  boltstore.Options{NoSync: true},
		Slack:  slackapi.Options{APIURL: "http://slack.fake/api/", HTTPClient: teams.Client(), Rates: rates, RequestTimeout: time.Hour},
		Poller: poller.Config{Rates: rates, Interval: interval, Budget: poller.Budget{HistoryCalls: 100, RepliesCalls: 100, UsersInfoCalls: 100, ReactionsCalls: 100}},
		OnTick: onTick,
	})
	t.Cleanup(func() {
		if err := sup.Close(); err != nil {
			t.Error(err)
		}
	})
	return teams, nil, sup
}

func spec(f *slackfake.Server) workspace.Spec {
	return workspace.Spec{TeamID: f.TeamID(), Source: workspace.SourceConfig, Credentials: workspace.StaticToken(f.Token()), Discover: true}
}

// One workspace revoked, one whose store file is damaged, one whose Slack answers
// auth.test an hour late: each is stopped or slowed alone; the healthy one finishes
// its first tick as if it ran alone, and the list says what each is and why.
func TestAWorkspaceFailingOrSlowLeavesTheOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		_, fakes, sup := fleet(t, 4, dir)
		healthy, revoked, damaged, slow := fakes[0], fakes[1], fakes[2], fakes[3]
		revoked.RevokeToken()
		if err := os.WriteFile(workspace.StorePath(dir, damaged.TeamID()), []byte("not a bbolt file, long enough to be read as one ...................................................................................................................................................................."), 0o600); err != nil {
			t.Fatal(err)
		}
		slow.InjectFault(slackfake.Fault{Method: "auth.test", Kind: slackfake.Slow, Delay: time.Hour})
		start := time.Now()
		for _, f := range fakes {
			if _, err := sup.Start(spec(f)); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		for {
			u, _ := sup.Unit(healthy.TeamID())
			if u.Status().LastTick != nil {
				break
			}
			time.Sleep(time.Second)
			synctest.Wait()
		}
		if took := time.Since(start); took > time.Minute {
			t.Errorf("the healthy workspace's first tick took %v beside a workspace stuck for an hour", took)
		}
		got := map[string]workspace.Status{}
		for _, st := range sup.Statuses() {
			got[st.TeamID] = st
		}
		if st := got[healthy.TeamID()]; st.State != workspace.Active || st.LastTick.StopReason != "complete" {
			t.Errorf("healthy workspace = %+v, want active with a complete tick", st)
		}
		if st := got[revoked.TeamID()]; st.State != workspace.TokenRejected || st.Reason == "" {
			t.Errorf("revoked workspace = %+v, want token_rejected with Slack's reason", st)
		}
		if st := got[damaged.TeamID()]; st.State != workspace.Damaged {
			t.Errorf("workspace with a damaged store = %+v, want damaged", st)
		}
		if st := got[slow.TeamID()]; st.State != workspace.Active || st.LastTick != nil {
			t.Errorf("slow workspace = %+v, want active, still in its first tick", st)
		}
		// The healthy one's store holds its team's messages only.
		u, _ := sup.Unit(healthy.TeamID())
		var id rm.Identity
		if err := u.Store().View(func(tx rm.Tx) error { id, _, _ = tx.Identity(); return nil }); err != nil || id.TeamID != healthy.TeamID() {
			t.Errorf("healthy store's identity = %+v, %v", id, err)
		}
	})
}

// Stop keeps a workspace's store; Purge removes it and what the store keeps beside
// it; a token of another team is refused before anything is written.
func TestStopPurgeAndAnotherTeamsToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		_, fakes, sup := fleet(t, 2, dir)
		a, b := fakes[0], fakes[1]
		for _, f := range fakes {
			if _, err := sup.Start(spec(f)); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if ok, err := sup.Stop(a.TeamID()); !ok || err != nil {
			t.Fatalf("Stop = %v, %v", ok, err)
		}
		if _, err := os.Stat(workspace.StorePath(dir, a.TeamID())); err != nil {
			t.Errorf("a stopped workspace's store is gone: %v", err)
		}
		if err := sup.Purge(a.TeamID()); err != nil {
			t.Fatal(err)
		}
		left, _ := filepath.Glob(filepath.Join(dir, a.TeamID()+"*"))
		if len(left) > 0 {
			t.Errorf("purge left %v", left)
		}
		// b's token under a's team_id: refused by auth.test's team, nothing written.
		u, err := sup.Start(workspace.Spec{TeamID: a.TeamID(), Credentials: workspace.StaticToken(b.Token()), Discover: true})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if st := u.Status(); st.State != workspace.TokenRejected {
			t.Errorf("another team's token = %+v, want token_rejected", st)
		}
		var n int
		if err := u.Store().View(func(tx rm.Tx) error {
			return tx.Conversations(func(rm.Conversation) error { n++; return nil })
		}); err != nil || n != 0 {
			t.Errorf("the store of a workspace given another team's token holds %d conversations (%v)", n, err)
		}
		if err := sup.Purge("not a team"); err == nil {
			t.Error("Purge of a bad team_id: no error")
		}
	})
}
