package demo

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// A thread_broadcast reply read from history joins its parent's reply set before the
// thread was ever synced. If the reply is deleted before the sync (here: the first
// tick has no replies budget), the parent's latest_reply goes back to "" — equal to
// its never-written watermark — and it is no longer a thread parent, so no later read
// looks at its thread: the deleted reply must still leave the parent's replies.
// Found by TestConvergesUnderMutationsAndFaults, seed 22.
func TestDeletedBroadcastLeavesItsParentsReplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := slackfake.New(slackfake.Options{OmitBlocks: true})
		must(t, fake.AddUser(slackfake.User{ID: "U0AAAAAAA", DisplayName: "avery"}))
		must(t, fake.AddConversation(slackfake.PublicChannel("C0GENERAL", "general")))
		parent, err := fake.Post("C0GENERAL", "U0AAAAAAA", "deploy?")
		must(t, err)
		time.Sleep(time.Second)
		reply, err := fake.ReplyBroadcast("C0GENERAL", parent, "U0AAAAAAA", "done")
		must(t, err)
		time.Sleep(time.Second)

		store := openTestStore(t)
		src := fakeSource(t, fake, map[string]float64{rm.MethodHistory: 600, rm.MethodReplies: 600}, store)
		tick := func(b poller.Budget) {
			t.Helper()
			p := poller.New(store, src, poller.Config{Conversations: []string{"C0GENERAL"}, Budget: b})
			if _, err := p.Tick(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		full := defaultBudget
		noReplies := full
		noReplies.RepliesCalls = 0

		tick(noReplies) // the parent and the broadcast are read; the thread is not
		must(t, fake.Delete("C0GENERAL", reply))
		for range 3 {
			time.Sleep(time.Minute)
			tick(full)
		}

		requireMatchesWorkspace(t, store, fake, []string{"C0GENERAL"})
	})
}
