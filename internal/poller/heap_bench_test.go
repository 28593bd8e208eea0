package poller_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

// BenchmarkTickHeap1M measures the Go heap in use after a tick with default budgets on
// a store of 1,000,000 tracked messages (target: under 64 MiB). The store lives in
// bbolt's mmap, not the Go heap; the tick holds at most a page of messages.
//
//	go test ./internal/poller -run '^$' -bench TickHeap1M -benchtime 1x
func BenchmarkTickHeap1M(b *testing.B) {
	const total, channels = 1_000_000, 10
	store := storetest.Open(b)
	polled := epoch.Add(-time.Hour)
	src := newStub()
	for c := 0; c < channels; c++ {
		src.addChannel(fmt.Sprintf("C%09d", c))
	}
	const batch = 50_000
	for start := 0; start < total; start += batch {
		err := store.Update(func(tx rm.Tx) error {
			for i := start; i < start+batch; i++ {
				m := rm.Message{
					Channel: fmt.Sprintf("C%09d", i%channels), TS: rm.TS(fmt.Sprintf("%d.%06d", 1600000000+i/channels, i%channels)),
					User: "U0AAAAAAA", Text: "a message of ordinary length, with a reaction on it",
					Reactions:    []rm.Reaction{{Name: "eyes", Count: 1, Users: []string{"U0BBBBBBB"}}},
					LastPolledAt: &polled,
				}
				if err := tx.PutMessage(m); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	// Recent traffic for the head reads: 999 messages in one channel.
	for i := 0; i < 999; i++ {
		src.post(msg("C000000000", ts(3600-i, 0), "U0AAAAAAA", "recent"))
	}
	clock := &fixedClock{t: epoch}
	p := poller.New(store, src, poller.Config{Conversations: src.ids(), Budget: defaultBudget(), Now: clock.Now})
	var ms runtime.MemStats
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mustTick(b, p)
		clock.Advance(time.Minute)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "MiB-heap-inuse")
}
