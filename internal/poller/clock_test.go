package poller_test

import (
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// The clock was a day ahead when conversations.info was read, then was set right:
// the info is refreshed at the next tick, not a day later.
func TestInfoReadWithTheClockAheadIsRefreshedWhenItIsSetBack(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	p, _, clock := newPoller(t, src, ch)
	clock.Advance(24 * time.Hour)
	mustTick(t, p)
	n := len(src.callsOf(rm.MethodConversationInfo))
	clock.Advance(-24*time.Hour + time.Minute)
	mustTick(t, p)
	if got := len(src.callsOf(rm.MethodConversationInfo)); got != n+1 {
		t.Errorf("%d conversations.info calls after the clock was set back, want 1: info read \"in the future\" is of unknown age", got-n)
	}
}

// A conversation error's retry time set with the clock two days ahead is further
// away than a retry can be (InfoRefresh): once the clock is right, it is retried at
// the next tick, not two days later.
func TestErrorRetryWithTheClockAheadIsNotWaitedFor(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.fail(rm.MethodConversationInfo, ch, &rm.APIError{Method: rm.MethodConversationInfo, Code: "not_in_channel", Class: rm.ClassConversation}, 1)
	p, store, clock := newPoller(t, src, ch)
	clock.Advance(48 * time.Hour)
	mustTick(t, p)
	if c := conversation(t, store); c.Status != rm.StatusNotInChannel {
		t.Fatalf("status = %q, want not_in_channel", c.Status)
	}
	clock.Advance(-48*time.Hour + time.Minute)
	mustTick(t, p)
	if c := conversation(t, store); c.Status != rm.StatusOK {
		t.Errorf("status = %q after the clock was set right, want ok: the retry time two days ahead was waited for", c.Status)
	}
}

// Discovery listed with the clock a day ahead lists again at the next tick once the
// clock is set back.
func TestDiscoverWithTheClockAheadListsAgainWhenItIsSetBack(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	store := openStore(t)
	clock := &fixedClock{t: epoch.Add(24 * time.Hour)}
	p := poller.New(store, src, poller.Config{Discover: true, Budget: defaultBudget(), Now: clock.Now})
	mustTick(t, p)
	n := len(src.callsOf(rm.MethodUsersConversations))
	if n == 0 {
		t.Fatal("no users.conversations call")
	}
	clock.Advance(-24*time.Hour + time.Minute)
	mustTick(t, p)
	if got := len(src.callsOf(rm.MethodUsersConversations)); got == n {
		t.Error("no users.conversations call after the clock was set back a day")
	}
}

// With our clock 4 days ahead of Slack's (as the Source measured it), the bulk window
// is placed by Slack's time: a message posted a minute ago, by Slack's clock, is read.
// By our clock the window would start a day after it.
func TestBulkWindowIsPlacedBySlacksTime(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	recent := msg(ch, ts(60, 0), "U1", "posted a minute ago")
	src.post(recent)
	store := openStore(t)
	clock := &fixedClock{t: epoch.Add(96 * time.Hour)}
	p := poller.New(store, src, poller.Config{Conversations: []string{ch}, Budget: defaultBudget(), Now: clock.Now,
		ClockSkew: func() time.Duration { return -96 * time.Hour }})
	mustTick(t, p)
	if got := getMsg(t, store, ch, recent.TS); got.Text != recent.Text {
		t.Errorf("message = %+v, want it read: the window must end at Slack's now", got)
	}
	for _, c := range src.callsOf(rm.MethodHistory) {
		if c.hist.Oldest != "" && c.hist.Latest == "" && !c.hist.Oldest.Before(recent.TS) {
			t.Errorf("head read oldest = %s, after the message %s", c.hist.Oldest, recent.TS)
		}
	}
}

// The tracking horizon is measured by Slack's time too: with our clock 4 days ahead, a
// message 4 days old (past the 72h bulk window: the tail reads it) is not retired by a
// 5-day horizon.
func TestHorizonIsMeasuredBySlacksTime(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	m := msg(ch, ts(4*24*3600, 0), "U1", "four days old")
	src.post(m)
	store := openStore(t)
	if err := rm.Track(store, ch, m.TS, ""); err != nil {
		t.Fatal(err)
	}
	if err := store.Update(func(tx rm.Tx) error { return tx.DeleteWatched(rm.Ref{Channel: ch, TS: m.TS}) }); err != nil {
		t.Fatal(err)
	}
	clock := &fixedClock{t: epoch.Add(96 * time.Hour)}
	p := poller.New(store, src, poller.Config{Conversations: []string{ch}, Budget: defaultBudget(), Now: clock.Now,
		Tracking:  poller.TrackingPolicy{Horizon: 120 * time.Hour},
		ClockSkew: func() time.Duration { return -96 * time.Hour }})
	for range 3 {
		mustTick(t, p)
		clock.Advance(time.Minute)
	}
	if got := getMsg(t, store, ch, m.TS); got.Retired {
		t.Errorf("a message 4 days old by Slack's clock was retired by a 5-day horizon: %+v", got)
	}
}
