package poller_test

import (
	"context"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/mock"
)

// A tile whose read keeps failing costs one call per backoff period, not one per
// message: only the failed read's anchor backed off, so each of the tile's other
// messages, the stalest in turn, anchored the same failing range in the same tick,
// 15 calls a tick (at 1 request a minute, a quarter of an hour of the method's calls)
// whenever the tile came off its backoff.
func TestAFailingTileIsNotReadOncePerMessage(t *testing.T) {
	src, store, clock, tss := tiledStore(t)
	// Every tail range read covering tss[20] fails with a transient error (after
	// slackapi's own retries: a 503 every time) while on is set.
	on := false
	failingRange := &mock.Source{Next: src, HistoryFn: func(ctx context.Context, req rm.HistoryRequest) (rm.Page, error) {
		p, err := src.History(ctx, req)
		if on && req.Latest != "" && !req.Latest.Before(tss[20]) && !tss[20].Before(req.Oldest) {
			return rm.Page{}, transient()
		}
		return p, err
	}}
	p := poller.New(store, failingRange, poller.Config{Conversations: []string{ch}, Now: clock.Now,
		Budget: poller.Budget{HistoryCalls: 30, RepliesCalls: 1, UsersInfoCalls: 10}})
	mustTick(t, p) // learns the page cap
	clock.Advance(time.Minute)
	on = true
	failing := string(tss[15]) + ".." + string(tss[29])
	tried := 0
	for i := range 8 {
		n := len(src.calls)
		mustTick(t, p)
		clock.Advance(time.Minute)
		k := 0
		for _, r := range rangesRead(src.calls[n:]) {
			if r == failing {
				k++
			}
		}
		if k > 1 {
			t.Errorf("tick %d read the failing tile %s %d times, want at most once", i, failing, k)
		}
		tried += k
	}
	if tried < 2 {
		t.Errorf("the failing tile was read %d times in 8 ticks, want it retried", tried)
	}
}
