package demo

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	boltstore "github.com/slackpoll/slackpoll/internal/bolt"
	"github.com/slackpoll/slackpoll/internal/converge"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackapi"
	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// Under the non_marketplace profile (history and replies 1 per minute) with the
// default budgets, interval and soft deadline, a workspace of six quiet channels —
// one recent thread and one older tracked message each, twelve messages in all —
// must be read whole within three hours: every thread synced, every tracked message
// read. The bulk window alone needs one history call per channel, six minutes, past
// the 4-minute soft deadline; what comes after it in the tick (thread sync, users,
// the tail) must still get its turn on some tick.
func TestNonMarketplaceSixChannelsConverge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		check := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		rates, _ := rm.ProfileRates(rm.ProfileNonMarketplace)
		fakeRates := map[string]int{}
		for m, r := range rates {
			fakeRates[m] = int(r)
		}
		fake := slackfake.New(slackfake.Options{OmitBlocks: true, PageCap: 15, RatePerMinute: fakeRates})
		check(fake.AddUser(slackfake.User{ID: "U0AAAAAAA", DisplayName: "avery"}))
		var convs []string
		var older []rm.TS
		for i := range 6 {
			id := fmt.Sprintf("C0CHAN%03d", i)
			convs = append(convs, id)
			check(fake.AddConversation(slackfake.PublicChannel(id, fmt.Sprintf("chan-%d", i))))
			ts, err := fake.Post(id, "U0AAAAAAA", "an older message")
			check(err)
			older = append(older, ts)
		}
		time.Sleep(96 * time.Hour) // the older messages fall out of the 72 h bulk window
		for _, id := range convs {
			parent, err := fake.Post(id, "U0AAAAAAA", "deploy?")
			check(err)
			_, err = fake.Reply(id, parent, "U0AAAAAAA", "done")
			check(err)
		}

		store, err := boltstore.Open(filepath.Join(t.TempDir(), "s.db"), boltstore.Options{NoSync: true})
		check(err)
		defer store.Close()
		for i, id := range convs {
			check(rm.Track(store, id, older[i], ""))
		}
		src, err := slackapi.New(slackapi.Options{Token: fake.Token(), APIURL: "http://slack.fake/api/",
			HTTPClient: fake.Client(), Rates: rates, Pacing: slackapi.StorePacing(store)})
		check(err)
		p := rm.NewPoller(store, src, rm.PollerConfig{Conversations: convs,
			Budget: rm.Budget{HistoryPages: 8, RepliesCalls: 12, UsersInfoCalls: 20, TailFetches: 25}})
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
		defer cancel()
		check(p.Run(ctx))

		model, err := converge.ModelLines(store, convs)
		check(err)
		r := converge.Diff(model, converge.Lines(fake.Truth()), "")
		for _, d := range r.Differences {
			t.Error(d)
		}
	})
}
