package demo

import (
	"context"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/converge"
	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackapi"
	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

// defaultBudget is the per-tick caps of the default configuration.
var defaultBudget = poller.Budget{HistoryCalls: 33, RepliesCalls: 12, UsersInfoCalls: 20, ReactionsCalls: 25}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// openTestStore opens a store in the test's directory (no fsync: tests only), closed
// when the test ends.
func openTestStore(t *testing.T) *boltstore.Store {
	t.Helper()
	return storetest.Open(t)
}

// fakeSource is the real Slack client reaching fake through its in-memory transport
// (no sockets, so it runs inside a synctest bubble), paced at rates and persisting its
// pacing state in store.
func fakeSource(t *testing.T, fake *slackfake.Server, rates map[string]float64, store rm.Store) *slackapi.Client {
	t.Helper()
	src, err := slackapi.New(slackapi.Options{Token: fake.Token(), APIURL: "http://slack.fake/api/",
		HTTPClient: fake.Client(), Rates: rates, Pacing: slackapi.StorePacing(store)})
	must(t, err)
	return src
}

// nonMarketplaceFake is a fake Slack that limits the token as Slack limits a
// non-Marketplace app (conversations.history and .replies 1 a minute, 15 messages a
// page), with one user, avery (U0AAAAAAA); rates are the client's rates of that
// profile.
func nonMarketplaceFake(t *testing.T) (fake *slackfake.Server, rates map[string]float64) {
	t.Helper()
	rates, _ = rm.ProfileRates(rm.ProfileNonMarketplace)
	fakeRates := map[string]int{}
	for m, r := range rates {
		fakeRates[m] = int(r)
	}
	fake = slackfake.New(slackfake.Options{OmitBlocks: true, PageCap: 15, RatePerMinute: fakeRates})
	must(t, fake.AddUser(slackfake.User{ID: "U0AAAAAAA", DisplayName: "avery"}))
	return fake, rates
}

// runFor runs p until d has passed on the clock (inside a synctest bubble, at once).
func runFor(t *testing.T, p *poller.Poller, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	must(t, p.Run(ctx))
}

// requireMatchesWorkspace fails the test with every difference between the read model
// of convs and the fake's truth.
func requireMatchesWorkspace(t *testing.T, store rm.Store, fake *slackfake.Server, convs []string) {
	t.Helper()
	model, err := converge.ModelLines(store, convs)
	must(t, err)
	for _, d := range converge.Diff(model, converge.Lines(fake.Truth()), "").Differences {
		t.Error(d)
	}
}
