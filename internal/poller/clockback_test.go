package poller_test

import (
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// A range read after the clock was set back is applied to messages read while it was
// ahead: their stored read times are in the future, of unknown age, not newer reads.
// Taken as newer, every read of them was turned away (and the tail kept spending its
// calls on them) until the clock caught up, a day here.
func TestAReadAfterTheClockWasSetBackReplacesAReadMadeWhileItWasAhead(t *testing.T) {
	src, store, clock, tss := tiledStore(t)
	p := poller.New(store, src, poller.Config{Conversations: []string{ch}, Now: clock.Now,
		Budget: poller.Budget{HistoryCalls: 6, RepliesCalls: 1, UsersInfoCalls: 10}})
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

// A message read while the clock was a day ahead carries a read time in the future
// once the clock is set right: it counts as never read (due, oldest of all). Its tail
// entry is placed by that time, after every entry read since, and the walk for the
// stalest anchor stopped at the first present entry placed after its best: the
// messages read "in the future" waited a day, far past a rotation of three tiles.
func TestMessagesReadWithTheClockAheadAreReadOnceItIsSetBack(t *testing.T) {
	src, store, clock, tss := tiledStore(t)
	p := poller.New(store, src, poller.Config{Conversations: []string{ch}, Now: clock.Now,
		Budget: poller.Budget{HistoryCalls: 1, RepliesCalls: 1, UsersInfoCalls: 10}})
	mustTick(t, p) // learns the page cap (its first range asks for 999)
	clock.Advance(time.Minute)
	clock.Advance(24 * time.Hour)
	for range 6 {
		mustTick(t, p)
		clock.Advance(time.Minute)
	}
	clock.Advance(-24 * time.Hour)
	var ahead []rm.TS
	for _, m := range tss {
		if got := getMsg(t, store, ch, m); got.LastPolledAt != nil && got.LastPolledAt.After(clock.Now()) {
			ahead = append(ahead, m)
		}
	}
	if len(ahead) == 0 {
		t.Fatal("no message read with the clock ahead: the test proves nothing")
	}
	for range 12 { // four rotations of the three tiles at one call a tick
		mustTick(t, p)
		clock.Advance(time.Minute)
	}
	for _, m := range ahead {
		if got := getMsg(t, store, ch, m); got.LastPolledAt.After(clock.Now()) {
			t.Errorf("%s still read as of %v (now %v) after 12 one-call ticks: left for the clock to catch up", m, got.LastPolledAt, clock.Now())
		}
	}
}

// A thread read whole while the clock was a day ahead is read whole again once it is
// set back: its stored thread_synced_at, in the future, is of unknown age. Taken as a
// newer thread read, it made every read of the thread write nothing: the thread
// stayed due, first in the thread rotation (a read time in the future counts as
// never), and took a replies call every tick that changed nothing until the clock
// caught up.
func TestAThreadReadWithTheClockAheadIsReplacedOnceItIsSetBack(t *testing.T) {
	src, store, clock, tss := tiledStore(t, 20)
	p := poller.New(store, src, poller.Config{Conversations: []string{ch}, Now: clock.Now,
		Budget: poller.Budget{HistoryCalls: 6, RepliesCalls: 3, UsersInfoCalls: 10}})
	clock.Advance(24 * time.Hour)
	mustTick(t, p)
	clock.Advance(-24*time.Hour + time.Minute)
	if got := getMsg(t, store, ch, tss[20]); got.ThreadSyncedAt == nil || !got.ThreadSyncedAt.After(clock.Now()) {
		t.Fatalf("thread of %s read as of %v, want with the clock a day ahead: the test proves nothing", tss[20], got.ThreadSyncedAt)
	}
	reply := ts(100*3600-20, 500)
	src.setThread(ch, tss[20], msg(ch, reply, "U2", "reply, edited"))
	for range 3 {
		mustTick(t, p)
		clock.Advance(time.Minute)
	}
	if got := getMsg(t, store, ch, reply); got.Text != "reply, edited" {
		t.Errorf("reply text %q after 3 ticks, want the edit Slack returned", got.Text)
	}
	if got := getMsg(t, store, ch, tss[20]); got.ThreadSyncedAt.After(clock.Now()) {
		t.Errorf("thread of %s still read as of %v (now %v)", tss[20], got.ThreadSyncedAt, clock.Now())
	}
}
