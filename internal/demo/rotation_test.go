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

// The rotation period a tick reports is the worst-case staleness promise (README, "How it works"):
// every tracked message must be re-read within it (plus one interval). Measured for
// both rate profiles, with 200 tracked messages older than the bulk window, default
// budgets and a non-Marketplace page cap of 15, against the period reported once the
// throughput window has seen a few ticks (the first tick's reads are not paced by the
// bulk call that precedes later ones, so alone it is optimistic).
func TestReportedRotationPeriodBoundsObservedRotation(t *testing.T) {
	for _, profile := range []string{rm.ProfileNonMarketplace, rm.ProfileInternal} {
		t.Run(profile, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { measureRotation(t, profile) })
		})
	}
}

func measureRotation(t *testing.T, profile string) {
	fake := slackfake.New(slackfake.Options{PageCap: 15, OmitBlocks: true})
	must(t, fake.AddUser(slackfake.User{ID: "U0AAAAAAA", DisplayName: "avery"}))
	must(t, fake.AddConversation(slackfake.PublicChannel("C0GENERAL", "general")))
	store := openTestStore(t)
	for i := 0; i < 200; i++ {
		ts, err := fake.Post("C0GENERAL", "U0AAAAAAA", "older")
		must(t, err)
		must(t, rm.Track(store, "C0GENERAL", ts, ""))
	}
	time.Sleep(100 * time.Hour) // now older than the 72h window: only the tail reads them

	rates, _ := rm.ProfileRates(profile)
	src := fakeSource(t, fake, rates, store)
	interval := time.Minute
	var bound time.Duration // the rotation period the latest tick reported
	ticks := 0
	p := poller.New(store, src, poller.Config{
		Conversations: []string{"C0GENERAL"}, Interval: interval,
		Budget: defaultBudget, Rates: rates,
		OnTick: func(s rm.TickSummary) {
			// The largest period any tick reported: with tail ranges the rotation
			// may end before the throughput window has seen a few ticks.
			if ticks++; s.StopReason != rm.StopShutdown {
				bound = max(bound, s.RotationPeriod)
			}
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	start := time.Now()
	const step = 10 * time.Second // the observation's resolution
	for {
		time.Sleep(step)
		oldest, err := OldestPolled(store)
		must(t, err)
		if !oldest.IsZero() && oldest.After(start) {
			break
		}
	}
	observed := time.Since(start)
	cancel()
	must(t, <-done)
	if bound == 0 || observed > bound+interval+step {
		t.Fatalf("%s: all 200 tracked messages re-read after %s (observed every %s), but the last tick reported a rotation period of %s (+%s interval)", profile, observed, step, bound, interval)
	}
	t.Logf("%s: full rotation of 200 tracked messages observed in %s; reported rotation period %s", profile, observed, bound)
}
