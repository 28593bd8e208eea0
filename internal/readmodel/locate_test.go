package readmodel_test

import (
	"strings"
	"testing"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
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
	poller := func(b rm.Budget) *rm.Poller {
		return rm.NewPoller(store, src, rm.PollerConfig{Conversations: []string{ch}, Budget: b, Now: clock.Now})
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
