package poller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/mock"
)

// oldThread posts, older than the bulk window, a parent with two replies, so that
// nothing but the tail can ever see them.
func oldThread(src *stubSource) (parent, r1, r2 rm.TS) {
	parent, r1, r2 = "1718906000.000100", "1718906100.000100", "1718906200.000100"
	src.post(msg(ch, parent, "U1", "parent"))
	src.setThread(ch, parent, msg(ch, r1, "U2", "first reply"), msg(ch, r2, "UBOT", "our reply"))
	return parent, r1, r2
}

// conversations.history never returns a thread reply, so a tracked reply read only
// with the exact history read would be marked missing forever (the bug this test was
// written for). It must be found through its thread, kept as a reply with its record,
// and refreshed by its parent's thread reads from then on.
func TestTrackedReplyIsFoundThroughItsThread(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	parent, _, r2 := oldThread(src)
	p, store, clock := newPoller(t, src, ch)
	if err := rm.Track(store, ch, r2, "ticket-7"); err != nil {
		t.Fatal(err)
	}
	mustTick(t, p)

	var located bool
	for _, c := range src.callsOf(rm.MethodReplies) {
		if c.rep.TS == r2 && c.rep.Limit == 1 {
			located = true
		}
	}
	if !located {
		t.Fatalf("no conversations.replies call with ts = the tracked reply; replies calls: %+v", src.callsOf(rm.MethodReplies))
	}
	m := getMsg(t, store, ch, r2)
	if m.ThreadTS != parent || m.Text != "our reply" || m.Record != "ticket-7" || m.MissingSince != nil || m.LastPolledAt == nil {
		t.Fatalf("tracked reply after one tick = %+v, want a read reply of %s with its record, not missing", m, parent)
	}
	if got := replyTS(getReplies(t, store, ch, parent)); len(got) != 2 {
		t.Fatalf("parent's replies = %v, want both (the thread was read)", got)
	}
	if pm := getMsg(t, store, ch, parent); pm.Text != "parent" || pm.ThreadSyncedAt == nil {
		t.Fatalf("parent = %+v, want read with its thread", pm)
	}

	// From now on the parent's thread reads keep the reply fresh.
	src.setThread(ch, parent, msg(ch, "1718906100.000100", "U2", "first reply"), rm.Message{
		Channel: ch, TS: r2, User: "UBOT", Text: "our reply",
		Reactions: []rm.Reaction{{Name: "eyes", Count: 1, Users: []string{"U2"}}},
	})
	for range 3 {
		clock.Advance(time.Minute)
		mustTick(t, p)
	}
	if m := getMsg(t, store, ch, r2); len(m.Reactions) != 1 || m.Reactions[0].Name != "eyes" {
		t.Fatalf("reaction on the tracked reply not seen after the thread was re-read: %+v", m.Reactions)
	}
}

// When replies_calls is spent, the placeholder must stay unread (first in the tail
// next tick), not be marked missing on the history read alone.
func TestTrackedReplyWaitsForARepliesCallNotMarkedMissing(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	_, _, r2 := oldThread(src)
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	poller := func(b poller.Budget) *poller.Poller {
		return poller.New(store, src, poller.Config{Conversations: []string{ch}, Budget: b, Now: clock.Now})
	}
	if err := rm.Track(store, ch, r2, ""); err != nil {
		t.Fatal(err)
	}
	noReplies := defaultBudget()
	noReplies.RepliesCalls = 0
	sum := mustTick(t, poller(noReplies))
	m := getMsg(t, store, ch, r2)
	if m.MissingSince != nil || m.LastPolledAt != nil {
		t.Fatalf("placeholder without a replies call left = %+v, want unread and not missing", m)
	}
	if !strings.Contains(strings.Join(sum.Errors, "\n"), "replies_calls is spent") {
		t.Fatalf("tick errors %q do not say why the reply was not located", sum.Errors)
	}
	clock.Advance(time.Minute)
	mustTick(t, poller(defaultBudget()))
	if m := getMsg(t, store, ch, r2); m.Text != "our reply" || m.MissingSince != nil {
		t.Fatalf("tracked reply a tick later = %+v", m)
	}
}

// A tracked ts that is neither in history nor in any thread is missing: Slack answers
// thread_not_found, and the placeholder is marked, costing one replies call once.
func TestTrackedMessageFoundNowhereIsMissing(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	oldThread(src)
	ghost := rm.TS("1718906300.000100")
	p, store, clock := newPoller(t, src, ch)
	if err := rm.Track(store, ch, ghost, ""); err != nil {
		t.Fatal(err)
	}
	mustTick(t, p)
	m := getMsg(t, store, ch, ghost)
	if m.MissingSince == nil || m.LastPolledAt == nil {
		t.Fatalf("ghost after a tick = %+v, want missing_since and last_polled_at", m)
	}
	lookups := func() (n int) {
		for _, c := range src.callsOf(rm.MethodReplies) {
			if c.rep.TS == ghost {
				n++
			}
		}
		return n
	}
	if n := lookups(); n != 1 {
		t.Fatalf("replies calls for the ghost = %d, want 1", n)
	}
	for range 3 {
		clock.Advance(24 * time.Hour)
		mustTick(t, p)
	}
	if n := lookups(); n != 1 {
		t.Fatalf("replies calls for the ghost after more ticks = %d, want still 1 (a message once read is not looked for again)", n)
	}
}

// badParentOnLocate returns src answering every locate call (conversations.replies,
// limit 1) with the thread's parent undecodable, as slack-go fails a message with a
// field it cannot read, while *faulty is set.
func badParentOnLocate(src *stubSource, parent rm.TS, faulty *bool) *mock.Source {
	return &mock.Source{Next: src, RepliesFn: func(ctx context.Context, req rm.RepliesRequest) (rm.Page, error) {
		p, err := src.Replies(ctx, req)
		if err != nil || !*faulty || req.Limit != 1 {
			return p, err
		}
		p.Messages = slices.DeleteFunc(p.Messages, func(m rm.Message) bool { return m.TS == parent })
		p.Skipped = append(p.Skipped, rm.ItemError{TS: parent, Err: "decode message: numeric latest_reply"})
		return p, nil
	}}
}

// An undecodable parent in locate's answer is Slack naming a thread, not saying the
// message is not there: the tracked reply must not be marked missing (which also left
// it out of the rotation for good: a read placeholder is never located again). Found
// by the convergence feed check: a watched reply marked missing, then found again.
func TestLocateAnswerWithAnUndecodableParentIsNotAbsence(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	parent, _, r2 := oldThread(src)
	faulty := true
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	p := poller.New(store, badParentOnLocate(src, parent, &faulty), poller.Config{Conversations: []string{ch}, Budget: defaultBudget(), Now: clock.Now})
	if err := rm.Track(store, ch, r2, "ticket-9"); err != nil {
		t.Fatal(err)
	}
	mustTick(t, p)
	located := 0
	for _, c := range src.callsOf(rm.MethodReplies) {
		if c.rep.TS == r2 && c.rep.Limit == 1 {
			located++
		}
	}
	if located == 0 {
		t.Fatal("no locate call was made: the test proves nothing")
	}
	if m := getMsg(t, store, ch, r2); m.MissingSince != nil || m.LastPolledAt != nil {
		t.Fatalf("tracked reply after a locate answer with an undecodable parent = %+v, want still unread and not missing", m)
	}
	faulty = false
	for range 10 {
		clock.Advance(time.Minute)
		mustTick(t, p)
	}
	if m := getMsg(t, store, ch, r2); m.ThreadTS != parent || m.MissingSince != nil || m.LastPolledAt == nil || m.Record != "ticket-9" {
		t.Fatalf("tracked reply once the parent reads again = %+v, want found as a reply of %s, not missing", m, parent)
	}
}

// A placeholder queued for locate that its parent's thread read stored first (both
// queued by the same range read: the parent's latest_reply moved, the placeholder did
// not come back) is not located: the call would find nothing new, and with a faulty
// answer marked a live reply missing.
func TestAPlaceholderReadByItsThreadFirstIsNotLocated(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	parent, r1, r2 := oldThread(src)
	store := openStore(t)
	read := epoch.Add(-time.Hour)
	err := store.Update(func(tx rm.Tx) error {
		// The parent and its first reply were read an hour ago; r2 was tracked
		// before anything read it.
		pm := msg(ch, parent, "U1", "parent")
		pm.ThreadTS, pm.ReplyCount, pm.LatestReply, pm.ReplyWatermark = parent, 1, r1, r1
		pm.LastPolledAt, pm.ThreadSyncedAt = &read, &read
		rp := msg(ch, r1, "U2", "first reply")
		rp.ThreadTS, rp.LastPolledAt = parent, &read
		for _, m := range []rm.Message{pm, rp, {Channel: ch, TS: r2, Record: "ticket-10"}} {
			if err := tx.PutMessage(m); err != nil {
				return err
			}
		}
		return tx.PutRecord("ticket-10", rm.Ref{Channel: ch, TS: r2})
	})
	if err != nil {
		t.Fatal(err)
	}
	// The thread read waits until the range read has looked at r2 (its complete
	// read's transaction walked the timeline over r2, and queues the locate next):
	// else it could store r2 before the range looked.
	rangeLooked := make(chan struct{})
	var once sync.Once
	spy := timelineSpy{Store: store, ts: r2, done: func() { once.Do(func() { close(rangeLooked) }) }}
	src.before = func(method string) {
		if method != rm.MethodReplies {
			return
		}
		select {
		case <-rangeLooked:
		case <-time.After(5 * time.Second):
			t.Error("no range read walked the timeline over r2 within 5 s")
		}
	}
	faulty := true
	clock := &fixedClock{t: epoch}
	p := poller.New(spy, badParentOnLocate(src, parent, &faulty),
		poller.Config{Conversations: []string{ch}, Budget: defaultBudget(), Now: clock.Now})
	mustTick(t, p)
	var threadRead bool
	for _, c := range src.callsOf(rm.MethodReplies) {
		if c.rep.TS == r2 && c.rep.Limit == 1 {
			t.Errorf("locate call for %s after its thread read stored it", r2)
		}
		threadRead = threadRead || c.rep.TS == parent
	}
	if !threadRead {
		t.Fatal("the parent's thread was not read: the test proves nothing")
	}
	if m := getMsg(t, store, ch, r2); m.ThreadTS != parent || m.MissingSince != nil || m.Record != "ticket-10" {
		t.Fatalf("tracked reply = %+v, want a reply of %s with its record, not missing", m, parent)
	}
}

// timelineSpy is a Store that calls done once a write transaction that walked the
// timeline from at or below ts (a complete read marking what it did not return:
// Writer.MarkMissing) has committed.
type timelineSpy struct {
	rm.Store
	ts   rm.TS
	done func()
}

func (s timelineSpy) Update(fn func(rm.Tx) error) error {
	walked := false
	err := s.Store.Update(func(tx rm.Tx) error { return fn(timelineTx{tx, s.ts, &walked}) })
	if err == nil && walked {
		s.done()
	}
	return err
}

type timelineTx struct {
	rm.Tx
	ts     rm.TS
	walked *bool
}

func (tx timelineTx) Timeline(channel string, oldest, latest rm.TS, fn func(rm.Message) error) error {
	if oldest != "" && !tx.ts.Before(oldest) {
		*tx.walked = true
	}
	return tx.Tx.Timeline(channel, oldest, latest, fn)
}

// A tracked reply whose locate answers keep coming back with an undecodable parent is
// left unread, and so stays the stalest message of the tail (never read). It must not
// anchor a range on every tick: it did, because its range handed it to locate (no
// backoff for a message waiting for locate) and locate's undecodable answer let it go
// again, so with one history call a tick the tile above it was never read.
func TestAReplyWhoseParentCannotBeDecodedDoesNotTakeEveryTailCall(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	parent, _, r2 := oldThread(src)
	src.pageSize = 15
	var others []rm.TS
	for i := range 29 { // with r2, two tiles of 15; all older than the bulk window
		m := msg(ch, rm.TS(fmt.Sprintf("%d.000100", 1718907000+10*i)), "U1", "old")
		src.post(m)
		others = append(others, m.TS)
	}
	faulty := true
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	for _, ts := range append([]rm.TS{r2}, others...) {
		if err := rm.Track(store, ch, ts, ""); err != nil {
			t.Fatal(err)
		}
	}
	p := poller.New(store, badParentOnLocate(src, parent, &faulty), poller.Config{Conversations: []string{ch}, Now: clock.Now,
		Budget: poller.Budget{HistoryCalls: 1, RepliesCalls: 1, UsersInfoCalls: 10}})
	for range 30 {
		mustTick(t, p)
		clock.Advance(time.Minute)
	}
	// Two tiles at one call a tick, less the head reads': every message is read
	// within the last 8 ticks.
	since := clock.Now().Add(-8 * time.Minute)
	var stale []rm.TS
	for _, ts := range others {
		if m := getMsg(t, store, ch, ts); m.LastPolledAt == nil || m.LastPolledAt.Before(since) {
			stale = append(stale, ts)
		}
	}
	if len(stale) > 0 {
		t.Errorf("%d of 29 tracked messages not read in the last 8 of 30 one-call ticks: %v (tail ranges read: %v)", len(stale), stale, rangesRead(src.calls))
	}
	if m := getMsg(t, store, ch, r2); m.MissingSince != nil {
		t.Errorf("tracked reply marked missing: %+v", m)
	}
}
