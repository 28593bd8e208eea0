package poller_test

import (
	"context"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/mock"
)

// alwaysBad returns src answering bad as undecodable on every history read of it, as
// slack-go fails a message with a field it cannot read.
func alwaysBad(src *stubSource, bad rm.TS) *mock.Source {
	return &mock.Source{Next: src, HistoryFn: func(ctx context.Context, req rm.HistoryRequest) (rm.Page, error) {
		p, err := src.History(ctx, req)
		undecodable(&p, bad, "decode message: numeric latest_reply")
		return p, err
	}}
}

// An undecodable read does not advance last_polled_at (nothing was read), so the
// message stays the least recently read; it must not take the tail's slot on every
// tick and starve every other tracked message. It backs off, and is still retried.
func TestUndecodableTrackedMessageDoesNotStarveTheTail(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	old := []rm.TS{"1718906000.000100", "1718906100.000100", "1718906200.000100", "1718906300.000100"}
	for _, ts := range old { // older than the bulk window: only the tail reads them
		src.post(msg(ch, ts, "U1", "old"))
	}
	bad := alwaysBad(src, old[0])
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	b := defaultBudget()
	b.HistoryCalls = 1
	p := poller.New(store, bad, poller.Config{Conversations: []string{ch}, Budget: b, Now: clock.Now})
	for _, ts := range old {
		if err := rm.Track(store, ch, ts, ""); err != nil {
			t.Fatal(err)
		}
	}
	for range 8 {
		mustTick(t, p)
		clock.Advance(time.Minute)
	}
	for _, ts := range old[1:] {
		if m := getMsg(t, store, ch, ts); m.LastPolledAt == nil {
			t.Errorf("%s never read in 8 ticks of one tail read each: the undecodable %s took every slot", ts, old[0])
		}
	}
	tries := 0
	for _, c := range src.callsOf(rm.MethodHistory) {
		if c.hist.Latest != "" && !old[0].Before(c.hist.Oldest) && !c.hist.Latest.Before(old[0]) {
			tries++
		}
	}
	if tries < 2 {
		t.Errorf("range reads covering the undecodable message in 8 ticks = %d, want it retried", tries)
	}
}

// A tail read that queues its parent's thread must have it read at once: found in a
// simulation seed whose ticks all ended on the soft deadline before the end of the
// tail, so the queued read was dropped every time and a deleted thread_broadcast
// stayed under its (old, plain again) parent for 120 ticks.
func TestThreadQueuedByATailReadIsReadBeforeTheDeadline(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	parent, other := rm.TS("1718906000.000100"), rm.TS("1718906100.000100") // older than the window
	src.post(msg(ch, parent, "U1", "parent"))
	src.post(msg(ch, other, "U1", "other"))
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	poller := func(calls int) *poller.Poller {
		b := defaultBudget()
		b.HistoryCalls = calls
		return poller.New(store, src, poller.Config{Conversations: []string{ch}, Budget: b, Now: clock.Now,
			Tracking: poller.TrackingPolicy{HeadMaxAge: time.Minute}})
	}
	for _, ts := range []rm.TS{parent, other} {
		if err := rm.Track(store, ch, ts, ""); err != nil {
			t.Fatal(err)
		}
	}
	mustTick(t, poller(2)) // both read, plain messages

	// A broadcast reply to the old parent, inside the window: a head read stores it.
	bcast := rm.Message{Channel: ch, TS: ts(600, 0), ThreadTS: parent, User: "U2", Text: "fyi", Subtype: rm.SubtypeThreadBroadcast}
	src.post(bcast)
	src.setThread(ch, parent, bcast)
	clock.Advance(time.Minute)
	mustTick(t, poller(1)) // the head read
	if got := getReplies(t, store, ch, parent); len(got) != 1 {
		t.Fatalf("setup: replies = %v", replyTS(got))
	}
	// It is deleted; the parent is a plain message again.
	src.remove(ch, bcast.TS)
	src.setThread(ch, parent)
	src.edit(ch, parent, func(m *rm.Message) { m.ThreadTS, m.ReplyCount, m.LatestReply = "", 0, "" })

	// The tail reads the parent, then the other message, whose read outlasts the
	// tick's soft deadline.
	src.before = func(method string) {
		src.mu.Lock()
		last := src.calls[len(src.calls)-1]
		src.mu.Unlock()
		if method == rm.MethodHistory && last.hist.Latest == other {
			clock.Advance(5 * time.Minute)
		}
	}
	clock.Advance(time.Minute)
	p := poller(2)
	mustTick(t, p)
	src.before = nil
	clock.Advance(time.Minute)
	n := len(src.callsOf(rm.MethodReplies))
	mustTick(t, p)
	if got := getReplies(t, store, ch, parent); len(got) != 0 {
		t.Fatalf("replies of the plain parent after its tail read = %v, want the deleted broadcast gone", replyTS(got))
	}
	_ = n
}
