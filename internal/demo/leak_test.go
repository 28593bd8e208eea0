package demo

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackpoll/slackpoll/internal/converge"
	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackapi"
	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// TestStoreOfAnotherTeamDiffers: the multi-workspace checks would see one team's data
// in another's store. Two teams generated from the same seed hold the same
// conversations and messages, byte for byte, apart from their team ID; a store polled
// with team B's token matches B's truth, and differs from A's on every message,
// conversation and user line (team_id is compared), so a store filled through the
// wrong token can never pass for A's.
func TestStoreOfAnotherTeamDiffers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		size := slackfake.GenSize{Conversations: 2, Messages: 20, Users: 3}
		teams := slackfake.NewTeams()
		var fakes []*slackfake.Server
		for _, id := range []string{"T0000LEAKA", "T0000LEAKB"} {
			f := slackfake.New(slackfake.Options{TeamID: id, Seed: 1, OmitBlocks: true})
			slackfake.Generate(f, 1, size)
			must(t, teams.Add(f))
			fakes = append(fakes, f)
		}
		a, b := fakes[0], fakes[1]
		convs := a.ConversationIDs()
		if strings.Join(convs, ",") != strings.Join(b.ConversationIDs(), ",") {
			t.Fatal("the two teams of one seed have different conversations: the test would compare more than team_id")
		}
		store := openTestStore(t)
		rates := map[string]float64{}
		for _, m := range slackapi.Methods {
			rates[m] = 600
		}
		src, err := slackapi.New(slackapi.Options{Token: b.Token(), APIURL: "http://slack.fake/api/",
			HTTPClient: teams.Client(), Rates: rates, Pacing: slackapi.StorePacing(store)})
		must(t, err)
		p := poller.New(store, src, poller.Config{Conversations: convs, Interval: time.Second, Rates: rates, BulkWindow: bulkWindow,
			Budget: poller.Budget{HistoryCalls: 20, RepliesCalls: 20, UsersInfoCalls: 10, ReactionsCalls: 10}})
		runFor(t, p, time.Minute)

		since := rm.TSFromUnix(time.Now().Add(-bulkWindow).Unix())
		model, err := converge.ModelLines(store, convs)
		must(t, err)
		if len(model.Messages) == 0 {
			t.Fatal("nothing polled")
		}
		if d := converge.Diff(model, converge.Lines(b.Truth()), since).Differences; len(d) > 0 {
			t.Fatalf("the store does not match the team it was polled from (%d differences), the first: %s", len(d), d[0])
		}
		rep := converge.Diff(model, converge.Lines(a.Truth()), since)
		if want := rep.Messages; want == 0 || len(rep.Differences) < want {
			t.Fatalf("a store of team B compared with team A's truth: %d differences, want one at least per message (%d):\n%s",
				len(rep.Differences), want, strings.Join(rep.Differences, "\n"))
		}
		for _, d := range rep.Differences {
			if !strings.Contains(d, "TeamID") && !strings.Contains(d, "team") {
				t.Errorf("a difference other than the team: %s", d)
			}
		}
		for _, m := range model.Messages {
			if m.TeamID != "T0000LEAKB" {
				t.Fatalf("export line of %s/%s carries team_id %q, want T0000LEAKB", m.Channel, m.TS, m.TeamID)
			}
		}
	})
}
