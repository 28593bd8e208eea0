package demo

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// Under the non_marketplace profile a tick reaches only a few history pages of 15
// messages. A backlog inside the bulk window deeper than that — the first start on a
// busy channel, or a restart after downtime — must still be read whole over the
// following ticks: a walk cut short resumes where it stopped instead of starting again
// from the newest message, which would leave everything below the first pages unread
// forever (messages no read ever stored, so no tail read ever refreshes them either).
func TestNonMarketplaceBacklogDeeperThanATickIsReadWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rates, _ := rm.ProfileRates(rm.ProfileNonMarketplace)
		fakeRates := map[string]int{}
		for m, r := range rates {
			fakeRates[m] = int(r)
		}
		fake := slackfake.New(slackfake.Options{OmitBlocks: true, PageCap: 15, RatePerMinute: fakeRates})
		must(t, fake.AddUser(slackfake.User{ID: "U0AAAAAAA", DisplayName: "avery"}))
		convs := []string{"C0BUSY000", "C0QUIET00"}
		for i, id := range convs {
			must(t, fake.AddConversation(slackfake.PublicChannel(id, fmt.Sprintf("chan-%d", i))))
		}
		for i := range 80 { // 6 pages of 15, in the last ~7 hours
			_, err := fake.Post(convs[0], "U0AAAAAAA", fmt.Sprintf("backlog %d", i))
			must(t, err)
			time.Sleep(5 * time.Minute)
		}
		_, err := fake.Post(convs[1], "U0AAAAAAA", "hello")
		must(t, err)

		store := openTestStore(t)
		p := rm.NewPoller(store, fakeSource(t, fake, rates, store), rm.PollerConfig{Conversations: convs, Budget: defaultBudget})
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
		defer cancel()
		must(t, p.Run(ctx))

		requireMatchesWorkspace(t, store, fake, convs)
	})
}
