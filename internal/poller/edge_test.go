package poller_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/mock"
)

func present(src *stubSource) []rm.TS {
	src.mu.Lock()
	defer src.mu.Unlock()
	var out []rm.TS
	for _, m := range src.hist[ch] {
		out = append(out, m.TS)
	}
	return out
}

func TestEdgePostAndDeleteDuringResume(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.pageSize = 5
	all := postN(src, 30, 3000)
	p, store, clock := windowPoller(t, src, 2)
	mustTick(t, p)
	src.remove(ch, all[5])  // unread part
	src.remove(ch, all[25]) // read part
	for i := range 8 {
		clock.Advance(time.Minute)
		src.post(msg(ch, ts(-60*(i+1)-int(0), 0), "U1", "new"))
		mustTick(t, p)
	}
	clock.Advance(time.Hour)
	for range 8 {
		clock.Advance(time.Minute)
		mustTick(t, p)
	}
	want := present(src)
	if n := stored(t, store, want); n != len(want) {
		t.Fatalf("%d of %d present messages stored", n, len(want))
	}
}

func TestEdgeWindowStartPassesWalkBottom(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.pageSize = 5
	postN(src, 23, 3000)
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	b := defaultBudget()
	b.HistoryCalls = 2
	p := poller.New(store, src, poller.Config{Conversations: []string{ch}, Budget: b, Now: clock.Now, BulkWindow: time.Hour})
	mustTick(t, p)
	clock.Advance(2 * time.Hour) // whole window moved past walk bottom
	fresh := postN(src, 3, -17000)
	clock.Advance(3 * time.Hour)
	mustTick(t, p)
	mustTick(t, p)
	if c := conversation(t, store); c.WalkBottom != "" {
		t.Fatalf("walk pending: %+v", c)
	}
	if n := stored(t, store, fresh); n != 3 {
		t.Fatalf("%d of 3 new stored", n)
	}
}

func TestEdgeCursorFaultsDuringResume(t *testing.T) {
	for _, kind := range []string{"invalid_cursor", "repeat"} {
		t.Run(kind, func(t *testing.T) {
			src := newStub()
			src.addChannel(ch)
			src.pageSize = 5
			all := postN(src, 40, 3000)
			h := &mock.Source{Next: src}
			p, store, clock := windowPoller(t, h, 3)
			mustTick(t, p)
			faults := 3
			h.HistoryFn = func(ctx context.Context, req rm.HistoryRequest) (rm.Page, error) {
				pg, err := src.History(ctx, req)
				if req.Latest != "" && req.Cursor != "" && faults > 0 {
					faults--
					if kind == "repeat" {
						pg.NextCursor = req.Cursor
						return pg, err
					}
					return rm.Page{}, &rm.APIError{Method: rm.MethodHistory, Code: "invalid_cursor", Class: rm.ClassTransient}
				}
				return pg, err
			}
			for range 10 {
				clock.Advance(time.Minute)
				mustTick(t, p)
			}
			if n := stored(t, store, all); n != len(all) {
				t.Fatalf("%d of %d stored", n, len(all))
			}
		})
	}
}

func TestEdgeRestartAndArchiveMidResume(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.pageSize = 5
	all := postN(src, 40, 3000)
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	b := defaultBudget()
	b.HistoryCalls = 2
	mk := func() *poller.Poller {
		return poller.New(store, src, poller.Config{Conversations: []string{ch}, Budget: b, Now: clock.Now})
	}
	mustTick(t, mk())
	clock.Advance(time.Minute)
	mustTick(t, mk()) // restart
	src.fail(rm.MethodHistory, ch, &rm.APIError{Method: rm.MethodHistory, Code: "is_archived", Class: rm.ClassConversation}, 1)
	clock.Advance(time.Minute)
	mustTick(t, mk())
	if c := conversation(t, store); c.Status != rm.StatusArchived || c.WalkBottom == "" {
		t.Fatalf("%+v", c)
	}
	clock.Advance(61 * time.Minute)
	for range 6 {
		mustTick(t, mk())
		clock.Advance(time.Minute)
	}
	if n := stored(t, store, all); n != len(all) {
		t.Fatalf("%d of %d stored", n, len(all))
	}
}

func TestEdgeLocateTombstoneParent(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	parent, _, r2 := oldThread(src)
	src.edit(ch, parent, func(m *rm.Message) {
		m.Subtype, m.User, m.Text = rm.SubtypeTombstone, "USLACKBOT", "This message was deleted."
	})
	p, store, clock := newPoller(t, src, ch)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(rm.Track(store, ch, r2, "ticket-1"))
	mustTick(t, p)
	clock.Advance(time.Minute)
	mustTick(t, p)
	m := getMsg(t, store, ch, r2)
	pm := getMsg(t, store, ch, parent)
	if m.Text != "our reply" || m.Record != "ticket-1" || !pm.Deleted || pm.Text == "This message was deleted." || pm.User == "USLACKBOT" {
		t.Fatalf("reply %+v parent %+v", m, pm)
	}
}

func TestEdgeThreadDeletedBeforeLookup(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	parent, _, r2 := oldThread(src)
	src.remove(ch, parent)
	p, store, clock := newPoller(t, src, ch)
	if err := rm.Track(store, ch, r2, "k"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		mustTick(t, p)
		clock.Advance(time.Hour)
	}
	m := getMsg(t, store, ch, r2)
	if m.MissingSince == nil || m.Record != "k" || len(src.callsOf(rm.MethodReplies)) != 1 {
		t.Fatalf("%+v replies calls %d", m, len(src.callsOf(rm.MethodReplies)))
	}
}

func TestEdgeTrackTwiceAndChannelJoin(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	_, _, r2 := oldThread(src)
	join := rm.TS("1718900000.000100")
	src.post(rm.Message{Channel: ch, TS: join, User: "U3", Subtype: "channel_join", Text: "<@U3> has joined"})
	p, store, _ := newPoller(t, src, ch)
	for _, err := range []error{rm.Track(store, ch, r2, "k"), rm.Track(store, ch, r2, "k"), rm.Track(store, ch, r2, ""), rm.Track(store, ch, join, "")} {
		if err != nil {
			t.Fatal(err)
		}
	}
	mustTick(t, p)
	if err := rm.Track(store, ch, r2, "k"); err != nil {
		t.Fatal(err)
	}
	if err := rm.Track(store, ch, r2, "other"); !errors.Is(err, rm.ErrRecordConflict) {
		t.Fatal(err)
	}
	if m := getMsg(t, store, ch, r2); m.Record != "k" || m.Text != "our reply" {
		t.Fatalf("%+v", m)
	}
	if m := getMsg(t, store, ch, join); m.Subtype != "channel_join" || m.LastPolledAt == nil {
		t.Fatalf("%+v", m)
	}
}
