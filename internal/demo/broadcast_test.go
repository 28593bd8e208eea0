package demo

import (
	"context"
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

// A thread_broadcast reply read from history joins its parent's reply set before the
// thread was ever synced. If the reply is deleted before the sync (here: the first
// tick has no replies budget), the parent's latest_reply goes back to "" — equal to
// its never-written watermark — and it is no longer a thread parent, so no later read
// looks at its thread: the deleted reply must still leave the parent's replies.
// Found by TestConvergesUnderMutationsAndFaults, seed 22.
func TestDeletedBroadcastLeavesItsParentsReplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		must := func(t *testing.T, err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		fake := slackfake.New(slackfake.Options{OmitBlocks: true})
		must(t, fake.AddUser(slackfake.User{ID: "U0AAAAAAA", DisplayName: "avery"}))
		must(t, fake.AddConversation(slackfake.PublicChannel("C0GENERAL", "general")))
		parent, err := fake.Post("C0GENERAL", "U0AAAAAAA", "deploy?")
		must(t, err)
		time.Sleep(time.Second)
		reply, err := fake.ReplyBroadcast("C0GENERAL", parent, "U0AAAAAAA", "done")
		must(t, err)
		time.Sleep(time.Second)

		store, err := boltstore.Open(filepath.Join(t.TempDir(), "s.db"), boltstore.Options{NoSync: true})
		must(t, err)
		defer store.Close()
		src, err := slackapi.New(slackapi.Options{Token: fake.Token(), APIURL: "http://slack.fake/api/",
			HTTPClient: fake.Client(), Rates: map[string]float64{rm.MethodHistory: 600, rm.MethodReplies: 600}})
		must(t, err)
		tick := func(b rm.Budget) {
			t.Helper()
			p := rm.NewPoller(store, src, rm.PollerConfig{Conversations: []string{"C0GENERAL"}, Budget: b})
			if _, err := p.Tick(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		full := rm.Budget{HistoryPages: 8, RepliesCalls: 12, UsersInfoCalls: 20, TailFetches: 25}
		noReplies := full
		noReplies.RepliesCalls = 0

		tick(noReplies) // the parent and the broadcast are read; the thread is not
		must(t, fake.Delete("C0GENERAL", reply))
		for range 3 {
			time.Sleep(time.Minute)
			tick(full)
		}

		model, err := converge.ModelLines(store, []string{"C0GENERAL"})
		must(t, err)
		r := converge.Diff(model, converge.Lines(fake.Truth()), "")
		for _, d := range r.Differences {
			t.Error(d)
		}
	})
}
