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

// The backlog test plus one BadMessage fault (one message of one
// history page undecodable, once) while the backlog walk is being resumed.
func TestNonMarketplaceBacklogWithAnUndecodableMessageIsReadWhole(t *testing.T) {
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
		for i := range 80 {
			_, err := fake.Post(convs[0], "U0AAAAAAA", fmt.Sprintf("backlog %d", i))
			must(t, err)
			time.Sleep(5 * time.Minute)
		}
		_, err := fake.Post(convs[1], "U0AAAAAAA", "hello")
		must(t, err)

		store := openTestStore(t)
		p := rm.NewPoller(store, &faultOnResume{Source: fakeSource(t, fake, rates, store), fake: fake}, rm.PollerConfig{Conversations: convs, Budget: defaultBudget, OnTick: func(s rm.TickSummary) {
			if len(s.Errors) > 0 {
				t.Logf("%s calls %v stop %s errors %q", s.Started.Format("15:04"), s.Calls, s.StopReason, s.Errors)
			}
		}})
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
		defer cancel()
		must(t, p.Run(ctx))

		requireMatchesWorkspace(t, store, fake, convs)
	})
}

// faultOnResume injects one BadMessage fault into the first page of the first resumed
// walk (latest set, not inclusive).
type faultOnResume struct {
	rm.Source
	fake *slackfake.Server
	done bool
}

func (f *faultOnResume) History(ctx context.Context, req rm.HistoryRequest) (rm.Page, error) {
	if !f.done && req.Latest != "" && !req.Inclusive {
		f.done = true
		f.fake.InjectFault(slackfake.Fault{Method: "conversations.history", Kind: slackfake.BadMessage})
	}
	return f.Source.History(ctx, req)
}
