package demo

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
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
		fake, rates := nonMarketplaceFake(t)
		var convs []string
		var older []rm.TS
		for i := range 6 {
			id := fmt.Sprintf("C0CHAN%03d", i)
			convs = append(convs, id)
			must(t, fake.AddConversation(slackfake.PublicChannel(id, fmt.Sprintf("chan-%d", i))))
			ts, err := fake.Post(id, "U0AAAAAAA", "an older message")
			must(t, err)
			older = append(older, ts)
		}
		time.Sleep(96 * time.Hour) // the older messages fall out of the 72 h bulk window
		for _, id := range convs {
			parent, err := fake.Post(id, "U0AAAAAAA", "deploy?")
			must(t, err)
			_, err = fake.Reply(id, parent, "U0AAAAAAA", "done")
			must(t, err)
		}

		store := openTestStore(t)
		for i, id := range convs {
			must(t, rm.Track(store, id, older[i], ""))
		}
		p := poller.New(store, fakeSource(t, fake, rates, store), poller.Config{Conversations: convs, Budget: defaultBudget, Rates: rates})
		runFor(t, p, 3*time.Hour)

		requireMatchesWorkspace(t, store, fake, convs)
	})
}
