package poller_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/export"
	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/mock"
)

const ch = "C0AAAAAAA"

func transient() error {
	return &rm.APIError{Method: "x", Code: "slack server error: 503", Class: rm.ClassTransient}
}

func TestEmptyCursorEndsPaginationShortPageDoesNot(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.pageSize = 2 // Slack may return fewer than limit: pages of 2 with more behind
	for i := 0; i < 5; i++ {
		src.post(msg(ch, ts(100*(i+1), 0), "U1", "m"))
	}
	p, store, _ := newPoller(t, src, ch)
	mustTick(t, p)
	calls := src.callsOf(rm.MethodHistory)
	if len(calls) != 3 {
		t.Fatalf("history calls = %d, want 3 (pages of 2,2,1; only the empty cursor ends)", len(calls))
	}
	if calls[1].hist.Cursor != "2" || calls[2].hist.Cursor != "4" {
		t.Errorf("cursors sent = %q, %q; want the previous next_cursor", calls[1].hist.Cursor, calls[2].hist.Cursor)
	}
	if calls[0].hist.Limit != rm.HistoryPageLimit {
		t.Errorf("limit = %d, want %d", calls[0].hist.Limit, rm.HistoryPageLimit)
	}
	for i := 0; i < 5; i++ {
		getMsg(t, store, ch, ts(100*(i+1), 0))
	}
}

func TestRepliesParentDroppedByTSOnEveryPage(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.pageSize = 2
	src.repeatParent = true
	parent := ts(1000, 0)
	src.post(msg(ch, parent, "U1", "parent"))
	src.setThread(ch, parent, msg(ch, ts(900, 0), "U2", "r1"), msg(ch, ts(800, 0), "U2", "r2"), msg(ch, ts(700, 0), "U3", "r3"))
	p, store, _ := newPoller(t, src, ch)
	mustTick(t, p)
	if n := len(src.callsOf(rm.MethodReplies)); n != 2 {
		t.Fatalf("replies calls = %d, want 2 pages", n)
	}
	got := replyTS(getReplies(t, store, ch, parent))
	want := []rm.TS{ts(900, 0), ts(800, 0), ts(700, 0)}
	if !slices.Equal(got, want) {
		t.Fatalf("replies = %v, want %v (parent excluded on every page)", got, want)
	}
	pm := getMsg(t, store, ch, parent)
	if pm.Text != "parent" || pm.ReplyWatermark != ts(700, 0) {
		t.Errorf("parent = %q watermark %q, want parent text and watermark %s", pm.Text, pm.ReplyWatermark, ts(700, 0))
	}
}

func TestLatestReplyMovingBackwardsTriggersThreadSync(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	parent := ts(1000, 0)
	src.post(msg(ch, parent, "U1", "parent"))
	src.setThread(ch, parent, msg(ch, ts(900, 0), "U2", "r1"), msg(ch, ts(800, 0), "U2", "newest"))
	p, store, clock := newPoller(t, src, ch)
	mustTick(t, p)
	// The newest reply is deleted: latest_reply moves back to r1.
	src.setThread(ch, parent, msg(ch, ts(900, 0), "U2", "r1"))
	clock.Advance(time.Minute)
	before := len(src.callsOf(rm.MethodReplies))
	mustTick(t, p)
	if len(src.callsOf(rm.MethodReplies)) == before {
		t.Fatal("no conversations.replies call after latest_reply moved backwards")
	}
	if got := replyTS(getReplies(t, store, ch, parent)); !slices.Equal(got, []rm.TS{ts(900, 0)}) {
		t.Fatalf("replies = %v, want only r1", got)
	}
	if w := getMsg(t, store, ch, parent).ReplyWatermark; w != ts(900, 0) {
		t.Fatalf("watermark = %s, want %s", w, ts(900, 0))
	}
}

func TestThreadCutShortWritesNothing(t *testing.T) {
	src, p, store, clock, parent := polledThread(t, 1)
	oldWM := getMsg(t, store, ch, parent).ReplyWatermark

	src.setThread(ch, parent, msg(ch, ts(900, 0), "U2", "r1 edited"), msg(ch, ts(800, 0), "U2", "r2"))
	src.fail(rm.MethodReplies, ch, transient(), -1) // every replies call this tick fails
	clock.Advance(time.Minute)
	mustTick(t, p)
	if got := getReplies(t, store, ch, parent); len(got) != 1 || got[0].Text != "r1" {
		t.Fatalf("replies after failed read = %+v, want the old r1 only", got)
	}
	if wm := getMsg(t, store, ch, parent).ReplyWatermark; wm != oldWM {
		t.Fatalf("watermark moved to %s after a failed read, want %s", wm, oldWM)
	}
}

func TestThreadFailingOnSecondPageWritesNothing(t *testing.T) {
	src, _, store, clock, parent := polledThread(t, 1)

	src.setThread(ch, parent, msg(ch, ts(900, 0), "U2", "r1 edited"), msg(ch, ts(800, 0), "U2", "r2"))
	// Every replies call after the first fails: a retry in the same tick fails too.
	n := 0
	failing := &mock.Source{Next: src, RepliesFn: func(ctx context.Context, req rm.RepliesRequest) (rm.Page, error) {
		if n++; n >= 2 {
			return rm.Page{}, transient()
		}
		return src.Replies(ctx, req)
	}}
	noTail := defaultBudget()
	noTail.HistoryCalls = 1 // no second attempt through the tail in this tick
	p := poller.New(store, failing, poller.Config{Conversations: []string{ch}, Budget: noTail, Now: clock.Now})
	clock.Advance(time.Minute)
	mustTick(t, p)
	if n < 2 {
		t.Fatalf("replies calls = %d, want the second page attempted", n)
	}
	got := getReplies(t, store, ch, parent)
	if len(got) != 1 || got[0].Text != "r1" {
		t.Fatalf("replies = %+v, want old r1 only: a thread cut short writes nothing", got)
	}
	if wm := getMsg(t, store, ch, parent).ReplyWatermark; wm != ts(900, 0) {
		t.Fatalf("watermark = %s, want unchanged %s", wm, ts(900, 0))
	}
}

func TestBudgetExhaustionMidThreadIsCleanStop(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.pageSize = 1
	parent := ts(1000, 0)
	src.post(msg(ch, parent, "U1", "parent"))
	src.setThread(ch, parent, msg(ch, ts(900, 0), "U2", "r1"), msg(ch, ts(800, 0), "U2", "r2"))
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	b := defaultBudget()
	b.RepliesCalls = 1
	p := poller.New(store, src, poller.Config{Conversations: []string{ch}, Budget: b, Now: clock.Now})
	sum, err := p.Tick(context.Background())
	if err != nil {
		t.Fatalf("budget stop returned error %v, want a clean stop", err)
	}
	if sum.StopReason != "budget:replies_calls" {
		t.Errorf("stop reason = %q, want budget:replies_calls", sum.StopReason)
	}
	if got := getReplies(t, store, ch, parent); len(got) != 0 {
		t.Fatalf("replies = %v, want none written for a thread cut short", replyTS(got))
	}
	// A new parent waits a few ticks for its thread to be read whole (the cut read
	// goes on from its cursor, and fails), then its own read is stored alone: not
	// lost, its watermark empty.
	src.fail(rm.MethodReplies, ch, transient(), -1)
	for range 4 {
		mustTick(t, p)
	}
	if m := getMsg(t, store, ch, parent); m.ReplyWatermark != "" || m.Text != "parent" {
		t.Fatalf("parent = %+v: the history read is kept, the watermark must stay empty", m)
	}
}

func TestSoftDeadlineDoesNotCancelCallInFlight(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.pageSize = 1
	src.post(msg(ch, ts(300, 0), "U1", "a"))
	src.post(msg(ch, ts(200, 0), "U1", "b"))
	p, store, clock := newPoller(t, src, ch)
	src.before = func(method string) {
		if method == rm.MethodHistory {
			// A Retry-After wait inside the call runs past the 4m soft deadline.
			clock.Advance(5 * time.Minute)
		}
	}
	sum := mustTick(t, p)
	if n := len(src.callsOf(rm.MethodHistory)); n != 1 {
		t.Fatalf("history calls = %d, want 1: no call starts after the deadline", n)
	}
	if sum.StopReason != rm.StopDeadline {
		t.Errorf("stop = %q, want deadline", sum.StopReason)
	}
	// The call in flight completed and its page was committed.
	if m := getMsg(t, store, ch, ts(200, 0)); m.Text != "b" {
		t.Fatalf("page of the call in flight not written: %+v", m)
	}
}

func TestSingleMessageReadsAreInclusive(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	old := rm.TS("1718906000.000100") // older than the bulk window
	src.post(msg(ch, old, "U1", "old one"))
	p, store, _ := newPoller(t, src, ch)
	if err := rm.Track(store, ch, old, "ticket-42"); err != nil {
		t.Fatal(err)
	}
	mustTick(t, p)
	var single *stubCall
	for _, c := range src.callsOf(rm.MethodHistory) {
		if c.hist.Latest != "" {
			single = &c
		}
	}
	if single == nil {
		t.Fatal("no single-message read")
	}
	if !single.hist.Inclusive || single.hist.Oldest != old || single.hist.Latest != old || single.hist.Limit < 1 {
		t.Fatalf("range read = %+v, want oldest=latest=%s inclusive (the only stored message)", single.hist, old)
	}
	m := getMsg(t, store, ch, old)
	if m.Text != "old one" || m.Record != "ticket-42" || m.LastPolledAt == nil {
		t.Fatalf("tracked message after tail read = %+v", m)
	}
}

func TestAbsenceNeverErases(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.pageSize = 1
	a, b := ts(300, 0), ts(200, 0)
	src.post(msg(ch, a, "U1", "a"))
	src.post(msg(ch, b, "U1", "b"))
	src.post(msg(ch, ts(400, 0), "U1", "c"))
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	bud := defaultBudget()
	bud.ReactionsCalls = 0
	p := poller.New(store, src, poller.Config{Conversations: []string{ch}, Budget: bud, Now: clock.Now})
	mustTick(t, p)

	src.remove(ch, b)
	// A window cut short by the page cap proves nothing about b.
	bud.HistoryCalls = 1
	short := poller.New(store, src, poller.Config{Conversations: []string{ch}, Budget: bud, Now: clock.Now})
	clock.Advance(time.Minute)
	mustTick(t, short)
	if m := getMsg(t, store, ch, b); m.MissingSince != nil || m.Text != "b" {
		t.Fatalf("after a cut-short read: %+v, want untouched", m)
	}
	// A complete window read marks it missing but keeps its content. (The walk cut
	// short reached the top of the complete walk before it, so none is resumed.)
	clock.Advance(time.Minute)
	mustTick(t, p)
	m := getMsg(t, store, ch, b)
	if m.MissingSince == nil || m.Text != "b" || m.User != "U1" {
		t.Fatalf("after a complete read: %+v, want missing_since set and content kept", m)
	}
	// It reappears: missing_since is cleared.
	src.post(msg(ch, b, "U1", "b"))
	clock.Advance(time.Minute)
	mustTick(t, p)
	if m := getMsg(t, store, ch, b); m.MissingSince != nil {
		t.Fatalf("missing_since not cleared on reappearance: %v", m.MissingSince)
	}
}

func TestTombstoneMarksParentDeletedKeepsReplies(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	parent := ts(1000, 0)
	src.post(msg(ch, parent, "U1", "the original"))
	src.setThread(ch, parent, msg(ch, ts(900, 0), "U2", "r1"), msg(ch, ts(800, 0), "U2", "r2"))
	p, store, clock := newPoller(t, src, ch)
	mustTick(t, p)
	src.edit(ch, parent, func(m *rm.Message) {
		m.Subtype, m.User, m.Text = rm.SubtypeTombstone, "USLACKBOT", "This message was deleted."
	})
	src.setThread(ch, parent, msg(ch, ts(900, 0), "U2", "r1"), msg(ch, ts(800, 0), "U2", "r2"), msg(ch, ts(700, 0), "U2", "r3"))
	src.edit(ch, parent, func(m *rm.Message) {
		m.Subtype, m.User, m.Text = rm.SubtypeTombstone, "USLACKBOT", "This message was deleted."
	})
	clock.Advance(time.Minute)
	mustTick(t, p)
	m := getMsg(t, store, ch, parent)
	if !m.Deleted || m.User != "U1" || m.Text != "the original" || m.Subtype == rm.SubtypeTombstone {
		t.Fatalf("tombstoned parent = %+v, want deleted with last known user and text", m)
	}
	if m.ReplyCount != 3 || m.LatestReply != ts(700, 0) {
		t.Errorf("reply_count/latest_reply = %d/%s, want 3/%s from the tombstone", m.ReplyCount, m.LatestReply, ts(700, 0))
	}
	if got := replyTS(getReplies(t, store, ch, parent)); len(got) != 3 {
		t.Fatalf("replies = %v, want 3 kept", got)
	}
}

func TestNoReactionsKeyMeansZeroReactions(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	a := ts(100, 0)
	m := msg(ch, a, "U1", "a")
	m.Reactions = []rm.Reaction{{Name: "thumbsup", Count: 2, Users: []string{"U1", "U2"}}}
	src.post(m)
	p, store, clock := newPoller(t, src, ch)
	mustTick(t, p)
	if got := getMsg(t, store, ch, a).Reactions; len(got) != 1 {
		t.Fatalf("reactions = %v", got)
	}
	src.edit(ch, a, func(m *rm.Message) { m.Reactions = nil })
	clock.Advance(time.Minute)
	mustTick(t, p)
	if got := getMsg(t, store, ch, a).Reactions; len(got) != 0 {
		t.Fatalf("reactions = %v, want none: a read without the key replaces them", got)
	}
}

func TestOwnPostsByBotIDNotSubtype(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	own := rm.Message{Channel: ch, TS: ts(300, 0), User: "UBOT", BotID: "BBOT", Text: "mine"}
	other := rm.Message{Channel: ch, TS: ts(200, 0), BotID: "BOTHER", Subtype: rm.SubtypeBotMessage, BotName: "ci", Text: "theirs"}
	src.post(own)
	src.post(other)
	p, store, _ := newPoller(t, src, ch)
	mustTick(t, p)
	if !getMsg(t, store, ch, own.TS).OwnPost {
		t.Error("own app-bot post (matching bot_id, no subtype) not marked own_post")
	}
	if getMsg(t, store, ch, other.TS).OwnPost {
		t.Error("another bot's bot_message marked own_post")
	}
}

func TestConversationTypeFromFlagsNotPrefix(t *testing.T) {
	src := newStub()
	mp, pr := "G0MPIM0001", "G0PRIV0001"
	src.infos[mp] = rm.ConversationInfo{ID: mp, IsMPIM: true, IsPrivate: true, IsMember: true}
	src.infos[pr] = rm.ConversationInfo{ID: pr, IsPrivate: true, IsMember: true}
	p, store, _ := newPoller(t, src, mp, pr)
	mustTick(t, p)
	for id, want := range map[string]string{mp: rm.TypeMPIM, pr: rm.TypePrivateChannel} {
		var c rm.Conversation
		_ = store.View(func(tx rm.Tx) error { c, _, _ = tx.Conversation(id); return nil })
		if c.Type != want {
			t.Errorf("%s type = %q, want %q", id, c.Type, want)
		}
	}
}

func TestTSByteIdenticalEndToEnd(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	exact := rm.TS("1718906000.000100")
	src.post(msg(ch, exact, "U1", "x"))
	p, store, _ := newPoller(t, src, ch)
	if err := rm.Track(store, ch, exact, ""); err != nil {
		t.Fatal(err)
	}
	mustTick(t, p)
	var buf bytes.Buffer
	if err := store.View(func(tx rm.Tx) error { return export.Write(tx, &buf, []string{ch}) }); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"ts":"1718906000.000100"`) {
		t.Fatalf("export does not carry the exact ts:\n%s", buf.String())
	}
	if c := src.callsOf(rm.MethodHistory); c[len(c)-1].hist.Oldest != exact {
		t.Fatalf("single read asked for %q, want %q", c[len(c)-1].hist.Oldest, exact)
	}
}

func TestNotInChannelDoesNotStopOthers(t *testing.T) {
	src := newStub()
	bad, good := "C0BAD00001", "C0GOOD0001"
	src.addChannel(bad)
	src.addChannel(good)
	src.post(msg(good, ts(100, 0), "U1", "hello"))
	src.fail(rm.MethodHistory, bad, &rm.APIError{Method: rm.MethodHistory, Code: "not_in_channel", Class: rm.ClassConversation}, -1)
	p, store, _ := newPoller(t, src, bad, good)
	sum := mustTick(t, p)
	getMsg(t, store, good, ts(100, 0))
	var c rm.Conversation
	_ = store.View(func(tx rm.Tx) error { c, _, _ = tx.Conversation(bad); return nil })
	if c.Status != rm.StatusNotInChannel {
		t.Fatalf("status = %q, want not_in_channel", c.Status)
	}
	if sum.StopReason != rm.StopComplete {
		t.Errorf("stop = %q, want complete", sum.StopReason)
	}
}

func TestMissingScopeReportedOnceNotRetriedEveryTick(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.fail(rm.MethodHistory, ch, &rm.APIError{Method: rm.MethodHistory, Code: "missing_scope", Needed: "groups:history", Class: rm.ClassConversation}, -1)
	p, store, clock := newPoller(t, src, ch)
	sum := mustTick(t, p)
	if len(sum.Errors) != 1 || !strings.Contains(sum.Errors[0], "groups:history") {
		t.Fatalf("errors = %v, want one naming groups:history", sum.Errors)
	}
	var c rm.Conversation
	_ = store.View(func(tx rm.Tx) error { c, _, _ = tx.Conversation(ch); return nil })
	if c.Status != rm.StatusMissingScope || c.NeededScope != "groups:history" {
		t.Fatalf("conversation = %+v", c)
	}
	for i := 0; i < 10; i++ {
		clock.Advance(time.Minute)
		sum = mustTick(t, p)
		if len(sum.Errors) != 0 {
			t.Fatalf("tick %d reported again: %v", i, sum.Errors)
		}
	}
	if n := len(src.callsOf(rm.MethodHistory)); n != 1 {
		t.Fatalf("history calls in 11 minutes = %d, want 1 (retried no more than hourly)", n)
	}
	clock.Advance(time.Hour)
	mustTick(t, p)
	if n := len(src.callsOf(rm.MethodHistory)); n != 2 {
		t.Fatalf("history calls after an hour = %d, want 2", n)
	}
}

func TestThreadNotFoundEmptiesThreadAndMarksParentDeleted(t *testing.T) {
	src, _, store, clock, parent := polledThread(t, 0)
	// One history call: the range that sees latest_reply move, not a head read after
	// it that re-reads the parent (Slack's history still shows it) and clears deleted.
	b := defaultBudget()
	b.HistoryCalls = 1
	p := poller.New(store, src, poller.Config{Conversations: []string{ch}, Budget: b, Now: clock.Now})
	// Slack now says the thread is gone; history still shows a parent whose
	// latest_reply moved (so a sync is attempted).
	src.edit(ch, parent, func(m *rm.Message) { m.LatestReply = ts(850, 0) })
	src.fail(rm.MethodReplies, ch, &rm.APIError{Method: rm.MethodReplies, Code: "thread_not_found", Class: rm.ClassItem}, -1)
	clock.Advance(time.Minute)
	mustTick(t, p)
	m := getMsg(t, store, ch, parent)
	if !m.Deleted || m.ReplyWatermark != m.LatestReply {
		t.Fatalf("parent = %+v, want deleted and watermark = latest_reply", m)
	}
	if got := getReplies(t, store, ch, parent); len(got) != 0 {
		t.Fatalf("replies = %v, want none", replyTS(got))
	}
	before := len(src.callsOf(rm.MethodReplies))
	clock.Advance(time.Minute)
	mustTick(t, p)
	if len(src.callsOf(rm.MethodReplies)) != before {
		t.Fatal("the gone thread was asked for again")
	}
}

func TestTailRereadsThreadEvenWhenWatermarkUnchanged(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	parent := rm.TS("1700000000.000100") // outside the bulk window: only the tail reads it
	src.post(msg(ch, parent, "U1", "parent"))
	src.setThread(ch, parent, msg(ch, "1700000001.000000", "U2", "r1"), msg(ch, "1700000002.000000", "U2", "r2"))
	p, store, clock := newPoller(t, src, ch)
	if err := rm.Track(store, ch, parent, ""); err != nil {
		t.Fatal(err)
	}
	mustTick(t, p) // single read finds a parent: thread synced
	if got := getReplies(t, store, ch, parent); len(got) != 2 {
		t.Fatalf("replies = %v", replyTS(got))
	}
	// An older reply is edited: latest_reply does not move.
	src.setThread(ch, parent, msg(ch, "1700000001.000000", "U2", "r1 edited"), msg(ch, "1700000002.000000", "U2", "r2"))
	clock.Advance(time.Minute)
	mustTick(t, p)
	if got := getReplies(t, store, ch, parent); got[0].Text != "r1 edited" {
		t.Fatalf("older reply edit not seen by the tail: %q", got[0].Text)
	}
}

// Tail ranges re-read stored messages a page at a time, least recently read first:
// with a page cap of 2, once the cap is learned, three calls re-read all six tracked
// messages, each once.
func TestTailRangesRotateLeastRecentlyReadFirst(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.pageSize = 2
	var all []rm.TS
	for i := 0; i < 6; i++ {
		tsi := rm.TS("170000000" + string(rune('0'+i)) + ".000000")
		src.post(msg(ch, tsi, "U1", "x"))
		all = append(all, tsi)
	}
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	b := defaultBudget()
	b.HistoryCalls = 1
	p := poller.New(store, src, poller.Config{Conversations: []string{ch}, Budget: b, Now: clock.Now})
	for _, x := range all {
		if err := rm.Track(store, ch, x, ""); err != nil {
			t.Fatal(err)
		}
	}
	tickRanges := func() [][2]rm.TS {
		n := len(src.callsOf(rm.MethodHistory))
		mustTick(t, p)
		clock.Advance(time.Minute)
		var out [][2]rm.TS
		for _, c := range src.callsOf(rm.MethodHistory)[n:] {
			if c.hist.Latest != "" {
				out = append(out, [2]rm.TS{c.hist.Oldest, c.hist.Latest})
			}
		}
		return out
	}
	tickRanges() // the head read: the first of a conversation is forced
	if r := tickRanges(); len(r) != 1 {
		t.Fatalf("tick 2 ranges = %v, want one (it teaches the page cap)", r)
	}
	var got [][2]rm.TS
	for i := 0; i < 3; i++ {
		got = append(got, tickRanges()...)
	}
	slices.SortFunc(got, func(a, b [2]rm.TS) int { return a[0].Compare(b[0]) })
	want := [][2]rm.TS{{all[0], all[1]}, {all[2], all[3]}, {all[4], all[5]}}
	if !slices.Equal(got, want) {
		t.Fatalf("ranges after the cap was learned = %v, want %v once each", got, want)
	}
}

func TestTokenRevokedStopsTick(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.post(msg(ch, ts(100, 0), "U1", "x"))
	src.fail(rm.MethodHistory, "", &rm.APIError{Method: rm.MethodHistory, Code: "token_revoked", Class: rm.ClassToken}, -1)
	p, _, _ := newPoller(t, src, ch, "C0OTHER001")
	src.addChannel("C0OTHER001")
	_, err := p.Tick(context.Background())
	if !errors.Is(err, poller.ErrTokenRejected) {
		t.Fatalf("err = %v, want ErrTokenRejected", err)
	}
	if n := len(src.callsOf(rm.MethodHistory)); n != 1 {
		t.Fatalf("history calls = %d, want 1: a token-wide error stops the tick", n)
	}
}

func TestShutdownMidThreadWritesNothing(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.pageSize = 1
	parent := ts(1000, 0)
	src.post(msg(ch, parent, "U1", "parent"))
	src.setThread(ch, parent, msg(ch, ts(900, 0), "U2", "r1"), msg(ch, ts(800, 0), "U2", "r2"))
	p, store, _ := newPoller(t, src, ch)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	src.before = func(method string) {
		if method == rm.MethodReplies {
			if n++; n == 2 {
				cancel()
			}
		}
	}
	sum, err := p.Tick(ctx)
	if !errors.Is(err, context.Canceled) || sum.StopReason != rm.StopShutdown {
		t.Fatalf("err = %v stop = %q, want canceled/shutdown", err, sum.StopReason)
	}
	if got := getReplies(t, store, ch, parent); len(got) != 0 {
		t.Fatalf("replies = %v, want none written on shutdown", replyTS(got))
	}
}

func TestUsersResolvedWithLabelsAndCap(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.users["U1"] = rm.User{ID: "U1", DisplayName: "", RealName: "Avery Real"}
	src.users["U2"] = rm.User{ID: "U2", DisplayName: "bee"}
	m := msg(ch, ts(100, 0), "U1", "x")
	m.Reactions = []rm.Reaction{{Name: "eyes", Count: 2, Users: []string{"U2", "U9"}}}
	src.post(m)
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	b := defaultBudget()
	b.UsersInfoCalls = 2
	p := poller.New(store, src, poller.Config{Conversations: []string{ch}, Budget: b, Now: clock.Now})
	sum := mustTick(t, p)
	if len(src.callsOf(rm.MethodUsersInfo)) != 2 || sum.UsersResolved != 2 {
		t.Fatalf("users.info calls = %d resolved %d, want the cap of 2", len(src.callsOf(rm.MethodUsersInfo)), sum.UsersResolved)
	}
	clock.Advance(time.Minute)
	mustTick(t, p)
	var labels []string
	_ = store.View(func(tx rm.Tx) error {
		return tx.Users(func(u rm.User) error { labels = append(labels, u.Label()); return nil })
	})
	if !slices.Equal(labels, []string{"Avery Real", "bee", "U9"}) {
		t.Fatalf("labels = %v, want real_name fallback, display_name, and the ID for user_not_found", labels)
	}
	// A failed lookup keeps the stale cached value.
	src.fail(rm.MethodUsersInfo, "", transient(), -1)
	clock.Advance(200 * time.Hour)
	mustTick(t, p)
	var u rm.User
	_ = store.View(func(tx rm.Tx) error { u, _, _ = tx.User("U2"); return nil })
	if u.Label() != "bee" {
		t.Fatalf("label after failed refresh = %q, want the stale bee", u.Label())
	}
}

// Users met only by the tail's reads (an old tracked message, a reaction on it) are
// resolved in the same tick. They once waited for the next tick's users phase, which
// a run of `slackpoll once` never reaches: its next run starts a new poller.
func TestUsersOfTailReadsResolvedInTheSameTick(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.users["U1"] = rm.User{ID: "U1", DisplayName: "avery"}
	src.users["U2"] = rm.User{ID: "U2", DisplayName: "bee"}
	old := msg(ch, "1718906000.000100", "U1", "old one") // older than the bulk window
	old.Reactions = []rm.Reaction{{Name: "eyes", Count: 1, Users: []string{"U2"}}}
	src.post(old)
	p, store, _ := newPoller(t, src, ch)
	if err := rm.Track(store, ch, old.TS, ""); err != nil {
		t.Fatal(err)
	}
	mustTick(t, p)
	var labels []string
	_ = store.View(func(tx rm.Tx) error {
		return tx.Users(func(u rm.User) error { labels = append(labels, u.Label()); return nil })
	})
	if !slices.Equal(labels, []string{"avery", "bee"}) {
		t.Fatalf("labels after one tick = %v, want the author and the reaction user of the tail read", labels)
	}
}

func TestTrackRecordRules(t *testing.T) {
	store := openStore(t)
	x := rm.TS("1718906000.000100")
	if err := rm.Track(store, ch, x, "ticket-42"); err != nil {
		t.Fatal(err)
	}
	if err := rm.Track(store, ch, x, "ticket-42"); err != nil {
		t.Fatalf("same record again: %v, want no-op", err)
	}
	if err := rm.Track(store, ch, x, ""); err != nil {
		t.Fatalf("no record again: %v, want no-op", err)
	}
	if err := rm.Track(store, ch, x, "ticket-43"); !errors.Is(err, rm.ErrRecordConflict) {
		t.Fatalf("different record: %v, want ErrRecordConflict", err)
	}
	if err := rm.Track(store, ch, "1718906000.000200", "ticket-42"); !errors.Is(err, rm.ErrRecordConflict) {
		t.Fatalf("record on another message: %v, want ErrRecordConflict", err)
	}
	if err := rm.Track(store, ch, "not-a-ts", ""); err == nil {
		t.Fatal("invalid ts accepted")
	}
	m := getMsg(t, store, ch, x)
	if m.Record != "ticket-42" || m.LastPolledAt != nil {
		t.Fatalf("placeholder = %+v", m)
	}
}

// A parent inside the bulk window is re-read by a head read every tick, but an edit of
// an older reply does not move latest_reply: only the tail's thread read sees it, so
// the thread must age in the rotation even though the parent itself is fresh.
func TestTailRereadsThreadOfParentInsideBulkWindow(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	parent := ts(1000, 0) // inside the 72h window
	src.post(msg(ch, parent, "U1", "parent"))
	src.setThread(ch, parent, msg(ch, ts(900, 0), "U2", "r1"), msg(ch, ts(800, 0), "U2", "r2"))
	p, store, clock := newPoller(t, src, ch)
	mustTick(t, p)
	src.setThread(ch, parent, msg(ch, ts(900, 0), "U2", "r1 edited"), msg(ch, ts(800, 0), "U2", "r2"))
	for i := 0; i < 2; i++ {
		clock.Advance(time.Minute)
		mustTick(t, p)
	}
	if got := getReplies(t, store, ch, parent); got[0].Text != "r1 edited" {
		t.Fatalf("older reply edit under a parent in the bulk window not seen: %q", got[0].Text)
	}
	m := getMsg(t, store, ch, parent)
	if m.ThreadSyncedAt == nil || m.ThreadSyncedAt.Before(epoch.Add(time.Minute)) {
		t.Fatalf("thread_synced_at = %v, want a re-read after the first tick", m.ThreadSyncedAt)
	}
}

// A thread read the tick's end (the replies cap, the soft deadline) cuts between pages
// goes on from its cursor in the next tick: each page is read once, and the thread is
// written whole. Begun again, it spent a call of every tick on pages read before (at
// 1 request a minute, a fifth of the replies calls of the rotation benchmark's
// 10-conversation, 360-thread store), and a thread longer than a tick's calls was
// never written.
func TestThreadCutByTheTicksEndGoesOnFromItsCursor(t *testing.T) {
	for _, cut := range []string{"budget:replies_calls", rm.StopDeadline} {
		t.Run(cut, func(t *testing.T) {
			src, _, store, clock, parent := polledThread(t, 1)
			src.setThread(ch, parent, msg(ch, ts(900, 0), "U2", "r1 edited"), msg(ch, ts(800, 0), "U2", "r2"), msg(ch, ts(700, 0), "U2", "r3"))
			b := defaultBudget()
			if cut == rm.StopDeadline {
				// The second page's call outlasts the soft deadline (a Retry-After
				// wait, or pacing); the thread is 3 pages.
				n := 0
				src.before = func(method string) {
					if method == rm.MethodReplies {
						if n++; n == 2 {
							clock.Advance(5 * time.Minute)
						}
					}
				}
			} else {
				b.RepliesCalls = 2 // the thread is 3 pages
			}
			p := poller.New(store, src, poller.Config{Conversations: []string{ch}, Budget: b, Now: clock.Now})
			before := len(src.callsOf(rm.MethodReplies))

			clock.Advance(time.Minute)
			if sum := mustTick(t, p); sum.StopReason != cut {
				t.Fatalf("stop reason = %q, want %s: the thread's read is cut", sum.StopReason, cut)
			}
			if got := getReplies(t, store, ch, parent); len(got) != 1 || got[0].Text != "r1" {
				t.Fatalf("replies after the cut = %+v, want the old r1 only: a thread cut short writes nothing", got)
			}
			clock.Advance(time.Minute)
			mustTick(t, p)
			if got := replyTS(getReplies(t, store, ch, parent)); !slices.Equal(got, []rm.TS{ts(900, 0), ts(800, 0), ts(700, 0)}) {
				t.Fatalf("replies after the next tick = %v, want r1, r2, r3: the read goes on where it was cut", got)
			}
			// (A head read that saw latest_reply move before the write may queue the
			// thread again: only the calls up to the write are the cut read's.)
			var cursors []string
			for _, c := range src.callsOf(rm.MethodReplies)[before:] {
				cursors = append(cursors, c.rep.Cursor)
			}
			if len(cursors) < 3 || !slices.Equal(cursors[:3], []string{"", "1", "2"}) {
				t.Fatalf("replies cursors over the two ticks = %q, want each page once first: \"\", \"1\", \"2\"", cursors)
			}
			if m := getMsg(t, store, ch, parent); m.ReplyWatermark != ts(700, 0) {
				t.Fatalf("watermark = %q, want %s", m.ReplyWatermark, ts(700, 0))
			}
		})
	}
}
