package readmodel_test

import (
	"testing"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// A range read after the clock was set back is applied to messages read while it was
// ahead: their stored read times are in the future, of unknown age, not newer reads.
// Taken as newer, every read of them was turned away (and the tail kept spending its
// calls on them) until the clock caught up, a day here.
func TestAReadAfterTheClockWasSetBackReplacesAReadMadeWhileItWasAhead(t *testing.T) {
	src, store, clock, tss := tiledStore(t)
	p := rm.NewPoller(store, src, rm.PollerConfig{Conversations: []string{ch}, Now: clock.Now,
		Budget: rm.Budget{HistoryCalls: 6, RepliesCalls: 1, UsersInfoCalls: 10}})
	clock.Advance(24 * time.Hour)
	mustTick(t, p)
	clock.Advance(-24*time.Hour + time.Minute)
	for _, m := range tss {
		if got := getMsg(t, store, ch, m); got.LastPolledAt == nil || !got.LastPolledAt.After(clock.Now()) {
			t.Fatalf("%s read as of %v with the clock a day ahead, want every message read then: the test proves nothing", m, got.LastPolledAt)
		}
	}
	src.edit(ch, tss[20], func(m *rm.Message) { m.Text = "edited" })
	mustTick(t, p)
	for _, m := range tss {
		if got := getMsg(t, store, ch, m); got.LastPolledAt.After(clock.Now()) {
			t.Errorf("%s still read as of %v (now %v) after a tick of 6 calls for 3 tiles", m, got.LastPolledAt, clock.Now())
		}
	}
	if got := getMsg(t, store, ch, tss[20]); got.Text != "edited" {
		t.Errorf("text %q after the tick, want the edit Slack returned", got.Text)
	}
}
