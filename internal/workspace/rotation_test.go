package workspace_test

import (
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackpoll/slackpoll/internal/installs"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackapi"
	"github.com/slackpoll/slackpoll/internal/workspace"
)

// A workspace whose token rotates (12-hour tokens, single-use refresh tokens) is
// polled for 48 simulated hours, a tick every 5 minutes: every tick completes, none meets
// token_expired, no gap between two tick starts exceeds the interval, and the token
// was refreshed on the way (8 times: at half-life).
func TestRotatingWorkspace48HoursWithoutAGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		teams, fakes, _ := fleet(t, 1, dir)
		fake := fakes[0]
		access, refresh, expiresIn := fake.EnableRotation("1.2", "secret")
		key, err := installs.NewKey([]byte("0123456789abcdef0123456789abcdef"))
		if err != nil {
			t.Fatal(err)
		}
		reg, err := installs.OpenRegistry(filepath.Join(dir, "installations.db"), key)
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Close()
		err = reg.Put(installs.Installation{TeamID: fake.TeamID(), BotToken: installs.Secret(access),
			RefreshToken: installs.Secret(refresh), ExpiresAt: time.Now().Add(expiresIn)})
		if err != nil {
			t.Fatal(err)
		}
		rot, err := installs.NewRotator(installs.RotatorOptions{TeamID: fake.TeamID(), Store: reg,
			OAuth: slackapi.OAuthOptions{APIURL: "http://slack.fake/api/", HTTPClient: teams.Client(), ClientID: "1.2", ClientSecret: "secret"}})
		if err != nil {
			t.Fatal(err)
		}
		var ticks []rm.TickSummary
		_, _, sup := fleetWith(t, teams, dir, 5*time.Minute, func(_ *workspace.Unit, s rm.TickSummary) { ticks = append(ticks, s) })
		if _, err := sup.Start(workspace.Spec{TeamID: fake.TeamID(), Credentials: rot, Discover: true}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(48 * time.Hour)
		synctest.Wait()
		u, _ := sup.Unit(fake.TeamID())
		if st := u.Status(); st.State != workspace.Active || !st.Rotating {
			t.Fatalf("after 48 h: %+v, want active and rotating", st)
		}
		if _, err := sup.Stop(fake.TeamID()); err != nil {
			t.Fatal(err)
		}
		if len(ticks) < 48*12 {
			t.Fatalf("%d ticks in 48 h at one every 5 minutes", len(ticks))
		}
		for i, s := range ticks {
			if i == len(ticks)-1 && s.StopReason == "shutdown" {
				break // the tick Stop interrupted
			}
			if s.StopReason != "complete" || len(s.Errors) > 0 {
				t.Fatalf("tick %d at %v: %s %v", i, s.Started, s.StopReason, s.Errors)
			}
			if i > 0 {
				if gap := s.Started.Sub(ticks[i-1].Started); gap > 5*time.Minute+time.Second {
					t.Fatalf("tick %d started %v after the one before", i, gap)
				}
			}
		}
		if access == fake.Token() {
			t.Error("the token never rotated")
		}
		in, _, err := reg.Get(fake.TeamID())
		if err != nil || string(in.BotToken) != fake.Token() {
			t.Errorf("kept %v (%v), want the current token", in, err)
		}
	})
}
