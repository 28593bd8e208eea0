package poller_test

import (
	"context"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/mock"
)

// Regression (found by review): a message undecodable once, in the middle of a resumed page, lies above the
// walk's new bottom, so the resume never reads it again; the completed walk then sets
// CoveredTo above it and later resumes stop there. Never stored, it is not tracked
// either: no read ever stores it.
func TestMessageUndecodableDuringAWalkIsReadByTheTail(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.pageSize = 5
	all := postN(src, 23, 3000) // newest first pages: all[22..18], all[17..13], all[12..8], ...
	bad := all[10]              // middle of page 3, read by the first resumed walk
	// The first history page that carries bad returns it as an undecodable message
	// (its ts known), as slackapi does for one bad message of a page.
	done := false
	wrap := &mock.Source{Next: src, HistoryFn: func(ctx context.Context, req rm.HistoryRequest) (rm.Page, error) {
		p, err := src.History(ctx, req)
		if err == nil && !done {
			done = undecodable(&p, bad, "decode message: numeric latest_reply")
		}
		return p, err
	}}
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	b := defaultBudget()
	b.HistoryCalls = 2 // tail on: a tracked message would be re-read
	p := poller.New(store, wrap, poller.Config{Conversations: []string{ch}, Budget: b, Now: clock.Now})
	for range 12 {
		mustTick(t, p)
		clock.Advance(time.Minute)
	}
	c := conversation(t, store)
	if n := stored(t, store, []rm.TS{bad}); n != 1 {
		t.Fatalf("message %s, undecodable once during the walk, never stored after 12 ticks (covered_to %s, walk (%s, %s]); %d of %d window messages stored",
			bad, c.CoveredTo, c.WalkBottom, c.WalkTop, stored(t, store, all), len(all))
	}
}

// Regression (found by review): once a complete walk covered the window, a fresh walk cut short stops
// below CoveredTo; the next sweep's resume has nothing to read and ends the walk with
// no call, so every other tick reads no history at all and a new message waits.
func TestEveryTickReadsNewMessagesOnceTheWindowIsCovered(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.pageSize = 5
	postN(src, 23, 3000)
	p, store, clock := windowPoller(t, src, 2)
	for range 3 { // the backlog walk completes
		mustTick(t, p)
		clock.Advance(time.Minute)
	}
	if c := conversation(t, store); c.WalkBottom != "" || c.CoveredTo == "" {
		t.Fatalf("setup: walk not complete: %+v", c)
	}
	for i := range 4 {
		n := ts(-60*(i+1), 0) // a new message each tick (its ts is within the clock)
		clock.Advance(2 * time.Minute)
		src.post(msg(ch, rm.TS(n), "U1", "new"))
		before := len(src.callsOf(rm.MethodHistory))
		mustTick(t, p)
		calls := len(src.callsOf(rm.MethodHistory)) - before
		if stored(t, store, []rm.TS{n}) != 1 {
			c := conversation(t, store)
			t.Fatalf("tick %d: %d history calls, new message %s not stored (covered_to %s, walk (%s, %s])", i, calls, n, c.CoveredTo, c.WalkBottom, c.WalkTop)
		}
	}
}

// Regression (found by review): a walk cut short by not_in_channel on its second
// page; days later the bot is still not in the channel, and the resume has nothing
// left to read (the window's start passed its bottom). The sweep must not report the
// conversation ok and swept without a read: it goes on with a fresh walk, which
// meets not_in_channel again.
func TestASweepWithoutAReadKeepsTheConversationError(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.pageSize = 5
	postN(src, 23, 3000)
	// Every history call from the from-th on (1-based) fails with not_in_channel;
	// the test sets from between ticks.
	count, from := 0, 0
	wrap := &mock.Source{Next: src, HistoryFn: func(ctx context.Context, req rm.HistoryRequest) (rm.Page, error) {
		if count++; from > 0 && count >= from {
			_ = src.enter(stubCall{method: rm.MethodHistory, hist: req}, req.Channel)
			return rm.Page{}, &rm.APIError{Method: rm.MethodHistory, Code: "not_in_channel", Class: rm.ClassConversation}
		}
		return src.History(ctx, req)
	}}
	p, store, clock := windowPoller(t, wrap, 2)
	for range 3 {
		mustTick(t, p)
		clock.Advance(time.Minute)
	}
	postN(src, 12, -120) // newer than the covered window: the next walk needs 3 pages
	clock.Advance(20 * time.Minute)
	from = count + 2 // page 1 of the next fresh walk succeeds, then the bot is removed
	mustTick(t, p)
	if c := conversation(t, store); c.Status != rm.StatusNotInChannel || c.WalkBottom == "" {
		t.Fatalf("setup: %+v", c)
	}
	// The window's start moves past the walk's bottom: the resume has nothing left
	// to read, and the bot is still not in the channel.
	clock.Advance(80 * time.Hour)
	before := len(src.callsOf(rm.MethodHistory))
	sum := mustTick(t, p)
	c := conversation(t, store)
	calls := len(src.callsOf(rm.MethodHistory)) - before
	if c.Status == rm.StatusOK {
		t.Fatalf("bot still not in the channel, %d history calls this tick, yet status %q, last_swept_at %v, errors %q", calls, c.Status, c.LastSweptAt, sum.Errors)
	}
}

// Regression (found by review): a tracked reply whose locate cannot get a replies call repeats the exact
// history read (1 req/min under non_marketplace) on every tick, though it already
// knows history does not have it.
func TestUnlocatedReplyIsNotReadFromHistoryAgain(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	_, _, r2 := oldThread(src)
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	b := defaultBudget()
	b.RepliesCalls = 0
	p := poller.New(store, src, poller.Config{Conversations: []string{ch}, Budget: b, Now: clock.Now})
	if err := rm.Track(store, ch, r2, "ticket-7"); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		mustTick(t, p)
		clock.Advance(time.Minute)
	}
	n := 0
	for _, c := range src.callsOf(rm.MethodHistory) {
		if c.hist.Oldest == r2 && c.hist.Latest == r2 {
			n++
		}
	}
	if n > 1 {
		t.Fatalf("exact history reads of %s over 5 ticks = %d; each after the first already known to miss", r2, n)
	}
}

// Regression (found by review): a tracked reply located through its thread, then deleted before the
// parent's thread read: the thread read deletes the record, the record key still
// points at it, and nothing says it went missing.
func TestDeletedTrackedReplyKeepsItsRecord(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	parent, r1, r2 := oldThread(src)
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	one := defaultBudget()
	one.RepliesCalls = 1
	if err := rm.Track(store, ch, r2, "ticket-7"); err != nil {
		t.Fatal(err)
	}
	mustTick(t, poller.New(store, src, poller.Config{Conversations: []string{ch}, Budget: one, Now: clock.Now}))
	if m := getMsg(t, store, ch, r2); m.ThreadTS != parent {
		t.Fatalf("setup: not located: %+v", m)
	}
	src.setThread(ch, parent, msg(ch, r1, "U2", "first reply")) // r2 deleted
	clock.Advance(time.Minute)
	mustTick(t, poller.New(store, src, poller.Config{Conversations: []string{ch}, Budget: defaultBudget(), Now: clock.Now}))
	var ref rm.Ref
	var rok, mok bool
	var m rm.Message
	if err := store.View(func(tx rm.Tx) error {
		var err error
		if ref, rok, err = tx.Record("ticket-7"); err != nil {
			return err
		}
		m, mok, err = tx.Message(ch, r2)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if rok && !mok {
		t.Fatalf("record ticket-7 -> %v, but the tracked message is gone from the store (no missing_since, no deleted mark)", ref)
	}
	if !m.Deleted || m.MissingSince == nil || m.Record != "ticket-7" || m.IsReply() {
		t.Fatalf("deleted tracked reply = %+v, want kept out of its thread, deleted, missing, with its record", m)
	}
	if got := replyTS(getReplies(t, store, ch, parent)); len(got) != 1 || got[0] != r1 {
		t.Fatalf("thread replies = %v, want only %s (no phantom reply)", got, r1)
	}
}

// Regression (found by review): a tracked thread_broadcast older than the window whose parent the store
// lacks: the exact read stores it as a reply, so it leaves the tail, and nothing
// tracks its parent: it is never read again.
func TestTrackedBroadcastIsRefreshedThroughItsParent(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	parent := rm.TS("1718906000.000100")
	bcast := rm.TS("1718906100.000100")
	src.post(msg(ch, parent, "U1", "parent"))
	b := msg(ch, bcast, "U2", "broadcast v1")
	b.Subtype = rm.SubtypeThreadBroadcast
	src.post(rm.Message{Channel: ch, TS: bcast, ThreadTS: parent, User: "U2", Text: "broadcast v1", Subtype: rm.SubtypeThreadBroadcast})
	src.setThread(ch, parent, b)
	p, store, clock := newPoller(t, src, ch)
	if err := rm.Track(store, ch, bcast, "ticket-9"); err != nil {
		t.Fatal(err)
	}
	mustTick(t, p)
	if m := getMsg(t, store, ch, bcast); m.Text != "broadcast v1" {
		t.Fatalf("setup: %+v", m)
	}
	edited := rm.Message{Channel: ch, TS: bcast, ThreadTS: parent, User: "U2", Text: "broadcast v2", Subtype: rm.SubtypeThreadBroadcast}
	src.edit(ch, bcast, func(m *rm.Message) { m.Text = "broadcast v2" })
	src.setThread(ch, parent, edited)
	for range 10 {
		clock.Advance(10 * time.Minute)
		mustTick(t, p)
	}
	if m := getMsg(t, store, ch, bcast); m.Text != "broadcast v2" {
		var pok bool
		_ = store.View(func(tx rm.Tx) error { _, pok, _ = tx.Message(ch, parent); return nil })
		t.Fatalf("tracked broadcast after 10 ticks = %q (last polled %v); parent stored: %v", m.Text, m.LastPolledAt, pok)
	}
}

// Regression (found by review): users are resolved twice per tick; a lookup that failed in the first pass
// is retried in the second, in the same tick.
func TestFailedUserLookupWaitsForTheNextTick(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.post(msg(ch, ts(600, 0), "U1", "hello"))
	src.fail(rm.MethodUsersInfo, "", &rm.APIError{Method: rm.MethodUsersInfo, Code: "service_unavailable", Class: rm.ClassTransient}, 5)
	p, _, _ := newPoller(t, src, ch)
	mustTick(t, p)
	if n := len(src.callsOf(rm.MethodUsersInfo)); n > 1 {
		t.Fatalf("users.info calls for U1 in one tick = %d; a failed lookup is retried on a later tick", n)
	}
}

// Regression (found by review): locate starts a conversations.replies call without checking the soft
// deadline, right after the exact history read that may have taken it past.
func TestLocateRespectsTheSoftDeadline(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	_, _, r2 := oldThread(src)
	p, store, clock := newPoller(t, src, ch)
	if err := rm.Track(store, ch, r2, ""); err != nil {
		t.Fatal(err)
	}
	src.before = func(method string) {
		src.mu.Lock()
		last := src.calls[len(src.calls)-1]
		src.mu.Unlock()
		if method == rm.MethodHistory && last.hist.Inclusive {
			clock.Advance(5 * time.Minute) // this call took the tick past its 4 min soft deadline
		}
	}
	mustTick(t, p)
	if n := len(src.callsOf(rm.MethodReplies)); n > 0 {
		t.Fatalf("%d replies call(s) started after the soft deadline passed", n)
	}
}
