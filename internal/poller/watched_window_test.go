package poller_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// With reactions.get unusable, the watched share re-reads watched messages with
// history ranges: the window of a page around the stalest that holds the most of
// them. Counted by number (read a tick ago or not), a cluster of 30 watched messages
// (two pages) was read by windows creeping one message a call (16..30, 17..31, …: each
// the earliest of equally full windows, one stale message in it), 15 calls a rotation
// instead of 2, and the watched messages at the cluster's end waited for the tail.
func TestWatchedWindowsReachTheStaleEndOfACluster(t *testing.T) {
	src := newStub() // no reactions:read: the watched share goes to history
	src.addChannel(ch)
	src.pageSize = 15
	var tss []rm.TS
	for i := range 150 { // ten tiles, older than the bulk window
		m := msg(ch, ts(100*3600-i, 0), "U1", fmt.Sprint("m", i))
		src.post(m)
		tss = append(tss, m.TS)
	}
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	first := poller.New(store, src, poller.Config{Conversations: []string{ch}, Now: clock.Now,
		BulkWindow: 1000 * time.Hour, Budget: poller.Budget{HistoryCalls: 100, RepliesCalls: 100, UsersInfoCalls: 10}})
	mustTick(t, first)
	clock.Advance(time.Minute)
	const lo, hi = 10, 40 // watched: tss[10..39]
	for i := lo; i < hi; i++ {
		if err := rm.Track(store, ch, tss[i], fmt.Sprint("ticket-", i)); err != nil {
			t.Fatal(err)
		}
	}
	// Two history calls a tick: one for the watched share, one for the tail.
	p := poller.New(store, src, poller.Config{Conversations: []string{ch}, Now: clock.Now,
		Budget: poller.Budget{HistoryCalls: 2, RepliesCalls: 1, UsersInfoCalls: 10}})
	mustTick(t, p) // learns the page cap
	clock.Advance(time.Minute)
	last := map[int]time.Time{}
	gap := map[int]int{}
	const ticks = 16
	for k := range ticks {
		mustTick(t, p)
		clock.Advance(time.Minute)
		for i := lo; i < hi; i++ {
			m := getMsg(t, store, ch, tss[i])
			if !m.LastPolledAt.Equal(last[i]) {
				last[i], gap[i] = *m.LastPolledAt, 0
				continue
			}
			if gap[i]++; k >= 4 && gap[i] > 4 {
				t.Errorf("watched message %d not read for %d ticks by tick %d: the 30 watched take 2 calls, one a tick", i, gap[i], k)
				gap[i] = -ticks // once per message
			}
		}
	}
}
