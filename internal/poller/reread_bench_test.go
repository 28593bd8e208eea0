package poller_test

import (
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// BenchmarkRereadPage measures a tick that re-reads one 999-message page, unchanged,
// from a stub Slack: the writer's cost per page, with the change feed's comparison of
// every message against the stored one (which finds nothing to record).
//
//	go test ./internal/poller -run '^$' -bench RereadPage
func BenchmarkRereadPage(b *testing.B) {
	src := newStub()
	src.addChannel(ch)
	src.pageSize = 999
	for i := range 999 {
		m := msg(ch, ts(3600-i, 0), "U0AAAAAAA", "a message of ordinary length, with a reaction on it")
		m.Reactions = []rm.Reaction{{Name: "eyes", Count: 1, Users: []string{"U0BBBBBBB"}}}
		src.post(m)
	}
	store := openStore(b)
	clock := &fixedClock{t: epoch}
	p := poller.New(store, src, poller.Config{
		Conversations: []string{ch}, Budget: poller.Budget{HistoryCalls: 1}, Now: clock.Now,
	})
	mustTick(b, p)
	b.ResetTimer()
	for range b.N {
		clock.Advance(time.Hour)
		mustTick(b, p)
	}
}
