package demo

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/testsupport/mock"
)

// backlogWorkspace adds to fake a busy channel with 80 messages five minutes apart
// (6 pages of 15, over the last ~7 hours, inside the bulk window) and a quiet one with
// one message, and returns their IDs.
func backlogWorkspace(t *testing.T, fake *slackfake.Server) []string {
	t.Helper()
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
	return convs
}

// Under the non_marketplace profile a tick reaches only a few history pages of 15
// messages. A backlog inside the bulk window deeper than that — the first start on a
// busy channel, or a restart after downtime — must still be read whole over the
// following ticks: a walk cut short resumes where it stopped instead of starting again
// from the newest message, which would leave everything below the first pages unread
// forever (messages no read ever stored, so no tail read ever refreshes them either).
func TestNonMarketplaceBacklogDeeperThanATickIsReadWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake, rates := nonMarketplaceFake(t)
		convs := backlogWorkspace(t, fake)
		store := openTestStore(t)
		p := poller.New(store, fakeSource(t, fake, rates, store), poller.Config{Conversations: convs, Budget: defaultBudget, Rates: rates})
		runFor(t, p, 3*time.Hour)
		requireMatchesWorkspace(t, store, fake, convs)
	})
}

// The backlog test plus one BadMessage fault (one message of one history page
// undecodable, once) while the backlog walk is being resumed: the message the walk
// went on below must still be read.
func TestNonMarketplaceBacklogWithAnUndecodableMessageIsReadWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake, rates := nonMarketplaceFake(t)
		convs := backlogWorkspace(t, fake)
		store := openTestStore(t)
		// One BadMessage fault goes into the first page of the first resumed walk
		// (latest set, not inclusive).
		client, done := fakeSource(t, fake, rates, store), false
		faultOnResume := &mock.Source{Next: client, HistoryFn: func(ctx context.Context, req rm.HistoryRequest) (rm.Page, error) {
			if !done && req.Latest != "" && !req.Inclusive {
				done = true
				fake.InjectFault(slackfake.Fault{Method: "conversations.history", Kind: slackfake.BadMessage})
			}
			return client.History(ctx, req)
		}}
		p := poller.New(store, faultOnResume, poller.Config{Conversations: convs, Budget: defaultBudget, Rates: rates, OnTick: func(s rm.TickSummary) {
			if len(s.Errors) > 0 {
				t.Logf("%s calls %v stop %s errors %q", s.Started.Format("15:04"), s.Calls, s.StopReason, s.Errors)
			}
		}})
		runFor(t, p, 3*time.Hour)
		requireMatchesWorkspace(t, store, fake, convs)
	})
}
