package poller_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// feedPoller is newPoller with the change feed configured.
func feedPoller(t *testing.T, src rm.Source, feed rm.FeedConfig) (*poller.Poller, *boltstore.Store, *fixedClock) {
	t.Helper()
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	p := poller.New(store, src, poller.Config{Conversations: []string{ch}, Budget: defaultBudget(), Now: clock.Now, Feed: feed})
	return p, store, clock
}

// changesAfter returns the stored changes after seq.
func changesAfter(t *testing.T, s rm.Store, after uint64) []rm.Change {
	t.Helper()
	var out []rm.Change
	if err := s.View(func(tx rm.Tx) error {
		return tx.Changes(after, func(c rm.Change) error { out = append(out, c); return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// tickAgain advances the clock past the head bound and ticks, so the bulk window is
// read again, and returns the changes the tick wrote.
func tickAgain(t *testing.T, p *poller.Poller, s rm.Store, clock *fixedClock) []rm.Change {
	t.Helper()
	before := changesAfter(t, s, 0)
	last := uint64(0)
	if len(before) > 0 {
		last = before[len(before)-1].Seq
	}
	clock.Advance(2 * time.Minute)
	mustTick(t, p)
	return changesAfter(t, s, last)
}

// kinds summarises changes as kind/ts[/reaction/user] for comparisons.
type changeKey struct {
	Kind     string
	TS       rm.TS
	Reaction string
	User     string
	Own      bool
}

func keys(cs []rm.Change) []changeKey {
	out := []changeKey{}
	for _, c := range cs {
		out = append(out, changeKey{c.Kind, c.TS, c.Reaction, c.User, c.Own})
	}
	return out
}

func wantChanges(t *testing.T, got []rm.Change, want ...changeKey) {
	t.Helper()
	if want == nil {
		want = []changeKey{}
	}
	sortKeys := cmpopts.SortSlices(func(a, b changeKey) bool {
		return a.Kind+string(a.TS)+a.Reaction+a.User < b.Kind+string(b.TS)+b.Reaction+b.User
	})
	if d := cmp.Diff(want, keys(got), sortKeys); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
}

func TestFeedFirstSweepSetsTheBaselineThenReportsNewMessagesOnce(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	for i := range 3 {
		src.post(msg(ch, ts(1000-i, 0), "U1", "old"))
	}
	p, store, clock := feedPoller(t, src, rm.FeedConfig{})
	mustTick(t, p)
	wantChanges(t, changesAfter(t, store, 0)) // history filled in: no flood

	src.post(msg(ch, ts(-60, 0), "U2", "new"))
	got := tickAgain(t, p, store, clock)
	wantChanges(t, got, changeKey{Kind: rm.ChangeMessagePosted, TS: ts(-60, 0)})
	if len(got) == 1 && (got[0].After == nil || got[0].After.Text == nil || *got[0].After.Text != "new" || got[0].After.User != "U2") {
		t.Errorf("message_posted after = %+v, want the text and author", got[0].After)
	}
	wantChanges(t, tickAgain(t, p, store, clock)) // a re-read without change emits nothing
}

func TestFeedBackfillReportsHistoryToo(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.post(msg(ch, ts(1000, 0), "U1", "a"))
	src.post(msg(ch, ts(900, 0), "U1", "b"))
	p, store, _ := feedPoller(t, src, rm.FeedConfig{Backfill: true})
	mustTick(t, p)
	wantChanges(t, changesAfter(t, store, 0),
		changeKey{Kind: rm.ChangeMessagePosted, TS: ts(1000, 0)}, changeKey{Kind: rm.ChangeMessagePosted, TS: ts(900, 0)})
}

func TestFeedEditsAndReactionsArePerFactAndOwn(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	m := ts(1000, 0)
	src.post(msg(ch, m, "U1", "draft"))
	p, store, clock := feedPoller(t, src, rm.FeedConfig{})
	mustTick(t, p)

	src.edit(ch, m, func(x *rm.Message) {
		x.Text, x.Edited = "final", &rm.Edited{User: "U1", TS: ts(10, 0)}
		x.Reactions = []rm.Reaction{{Name: "white_check_mark", Count: 2, Users: []string{"U2", "UBOT"}}}
	})
	got := tickAgain(t, p, store, clock)
	wantChanges(t, got,
		changeKey{Kind: rm.ChangeMessageEdited, TS: m},
		changeKey{Kind: rm.ChangeReactionAdded, TS: m, Reaction: "white_check_mark", User: "U2"},
		changeKey{Kind: rm.ChangeReactionAdded, TS: m, Reaction: "white_check_mark", User: "UBOT", Own: true})
	for _, c := range got {
		if c.Kind == rm.ChangeMessageEdited && (*c.Before.Text != "draft" || *c.After.Text != "final" || c.After.Edited == nil) {
			t.Errorf("message_edited before %+v after %+v, want draft → final with the edited marker", c.Before, c.After)
		}
	}

	src.edit(ch, m, func(x *rm.Message) {
		x.Reactions = []rm.Reaction{{Name: "white_check_mark", Count: 1, Users: []string{"UBOT"}}}
	})
	wantChanges(t, tickAgain(t, p, store, clock),
		changeKey{Kind: rm.ChangeReactionRemoved, TS: m, Reaction: "white_check_mark", User: "U2"})
	wantChanges(t, tickAgain(t, p, store, clock))
}

func TestFeedTruncatedReactionUsersGiveTheCount(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	m := ts(1000, 0)
	src.post(msg(ch, m, "U1", "popular"))
	p, store, clock := feedPoller(t, src, rm.FeedConfig{})
	mustTick(t, p)
	// Slack lists some users only: who reacted is not known, the count is.
	src.edit(ch, m, func(x *rm.Message) {
		x.Reactions = []rm.Reaction{{Name: "tada", Count: 60, Users: []string{"U1", "U2"}}}
	})
	got := tickAgain(t, p, store, clock)
	wantChanges(t, got, changeKey{Kind: rm.ChangeReactionCountChanged, TS: m, Reaction: "tada"})
	if len(got) == 1 && (got[0].After.Count == nil || *got[0].After.Count != 60 || *got[0].Before.Count != 0) {
		t.Errorf("reaction_count_changed before %+v after %+v, want 0 → 60", got[0].Before, got[0].After)
	}
}

func TestFeedMissingReappearedAndDeleted(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	a, b := ts(1000, 0), ts(900, 0)
	src.post(msg(ch, a, "U1", "a"))
	src.post(msg(ch, b, "U1", "b"))
	p, store, clock := feedPoller(t, src, rm.FeedConfig{})
	mustTick(t, p)

	src.remove(ch, b)
	wantChanges(t, tickAgain(t, p, store, clock), changeKey{Kind: rm.ChangeMessageMissing, TS: b})
	wantChanges(t, tickAgain(t, p, store, clock)) // still missing: no second event

	src.post(msg(ch, b, "U1", "b"))
	wantChanges(t, tickAgain(t, p, store, clock), changeKey{Kind: rm.ChangeMessageReappeared, TS: b})

	src.edit(ch, a, func(x *rm.Message) { x.Subtype, x.Text = rm.SubtypeTombstone, "This message was deleted." })
	wantChanges(t, tickAgain(t, p, store, clock), changeKey{Kind: rm.ChangeMessageDeleted, TS: a})
}

func TestFeedRepliesAddedAndRemoved(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	parent := ts(1000, 0)
	src.post(msg(ch, parent, "U1", "parent"))
	src.setThread(ch, parent, msg(ch, ts(900, 0), "U2", "r1"))
	p, store, clock := feedPoller(t, src, rm.FeedConfig{})
	mustTick(t, p)
	wantChanges(t, changesAfter(t, store, 0)) // the baseline's thread, too

	src.setThread(ch, parent, msg(ch, ts(900, 0), "U2", "r1"), msg(ch, ts(-30, 0), "U3", "r2"))
	got := tickAgain(t, p, store, clock)
	wantChanges(t, got, changeKey{Kind: rm.ChangeReplyAdded, TS: ts(-30, 0)})
	if len(got) == 1 && got[0].ThreadTS != parent {
		t.Errorf("reply_added thread_ts = %s, want %s", got[0].ThreadTS, parent)
	}

	src.setThread(ch, parent, msg(ch, ts(-30, 0), "U3", "r2"))
	wantChanges(t, tickAgain(t, p, store, clock), changeKey{Kind: rm.ChangeReplyRemoved, TS: ts(900, 0)})
}

func TestFeedWritesOutboxRowsForMatchingWebhooksInTheSameTransaction(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	m := ts(1000, 0)
	src.post(msg(ch, m, "U1", "x"))
	own := false
	p, store, clock := feedPoller(t, src, rm.FeedConfig{Subscriptions: []rm.Subscription{
		{Name: "reactions", Filter: rm.ChangeFilter{Kinds: []string{rm.ChangeReactionAdded}, Own: &own}},
		{Name: "all"},
	}})
	mustTick(t, p)
	src.edit(ch, m, func(x *rm.Message) {
		x.Text = "y"
		x.Reactions = []rm.Reaction{{Name: "eyes", Count: 2, Users: []string{"U2", "UBOT"}}}
	})
	got := tickAgain(t, p, store, clock)
	rows := map[string][]uint64{}
	if err := store.View(func(tx rm.Tx) error {
		return tx.Outbox("", func(r rm.OutboxRow) error {
			rows[r.Webhook] = append(rows[r.Webhook], r.Seq)
			if r.Change.Seq != r.Seq || r.Change.ID == "" {
				t.Errorf("row %s/%d carries change %+v", r.Webhook, r.Seq, r.Change)
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	var wantReactions, wantAll []uint64
	for _, c := range got {
		wantAll = append(wantAll, c.Seq)
		if c.Kind == rm.ChangeReactionAdded && !c.Own {
			wantReactions = append(wantReactions, c.Seq)
		}
	}
	if d := cmp.Diff(map[string][]uint64{"reactions": wantReactions, "all": wantAll}, rows); d != "" || len(wantReactions) != 1 {
		t.Errorf("outbox rows by webhook (-want +got):\n%s", d)
	}
}

func TestFeedStoreMadeBeforeTheFeedSetsItsBaselineWithoutAFlood(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	for i := range 5 {
		src.post(msg(ch, ts(1000-i, 0), "U1", "old"))
	}
	p, store, clock := feedPoller(t, src, rm.FeedConfig{})
	mustTick(t, p)
	// As a store written before the feed existed: walked, no baseline, no changes.
	err := store.Update(func(tx rm.Tx) error {
		c, _, err := tx.Conversation(ch)
		if err != nil {
			return err
		}
		c.Baselined, c.FeedFrom = false, ""
		return tx.PutConversation(c)
	})
	if err != nil {
		t.Fatal(err)
	}
	src.post(msg(ch, ts(-60, 0), "U2", "while upgrading"))
	wantChanges(t, tickAgain(t, p, store, clock)) // the upgrade's first walk: the baseline
	src.post(msg(ch, ts(-240, 0), "U2", "after the upgrade"))
	wantChanges(t, tickAgain(t, p, store, clock), changeKey{Kind: rm.ChangeMessagePosted, TS: ts(-240, 0)})
}

// "Someone replied to record 42's message": a reply is added to (or removed from) the
// thread of a record-keyed parent, and its event carries the parent's record as
// thread_record, so a filter on record=ticket-42 sees the replies too. Its own record
// stays its own: a reply_removed without one says the reply left the store.
func TestFeedRepliesCarryTheRecordOfTheirThreadsParent(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	parent := ts(1000, 0)
	src.post(msg(ch, parent, "U1", "ticket"))
	src.setThread(ch, parent, msg(ch, ts(900, 0), "U2", "r1"))
	p, store, clock := feedPoller(t, src, rm.FeedConfig{})
	mustTick(t, p)
	if err := rm.Track(store, ch, parent, "ticket-42"); err != nil {
		t.Fatal(err)
	}
	src.setThread(ch, parent, msg(ch, ts(900, 0), "U2", "r1"), msg(ch, ts(-30, 0), "U3", "r2"))
	added := tickAgain(t, p, store, clock)
	src.setThread(ch, parent, msg(ch, ts(-30, 0), "U3", "r2"))
	removed := tickAgain(t, p, store, clock)
	f := rm.ChangeFilter{Records: []string{"ticket-42"}}
	for _, got := range [][]rm.Change{added, removed} {
		if len(got) != 1 || got[0].ThreadRecord != "ticket-42" || got[0].Record != "" || !f.Match(&got[0]) {
			t.Errorf("reply changes %+v, want one with thread_record ticket-42 (its thread's parent's), no record of its own, passing record=ticket-42", got)
		}
	}
}

// own marks the app's own post or reaction. On the app's own post, reactions are
// others' unless the reacting user is the app: when Slack truncates the users and
// who reacted is unknown, the change is not the app's either, or an own: false
// filter ("only others'") would miss others' reactions to the app's posts.
func TestFeedReactionsToTheAppsOwnPostAreNotOwn(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	m := ts(1000, 0)
	own := msg(ch, m, "UBOT", "deployed")
	own.BotID = "BBOT"
	src.post(own)
	p, store, clock := feedPoller(t, src, rm.FeedConfig{})
	mustTick(t, p)
	src.edit(ch, m, func(x *rm.Message) {
		x.Reactions = []rm.Reaction{{Name: "eyes", Count: 1, Users: []string{"U2"}}, {Name: "tada", Count: 60, Users: []string{"U1", "U2"}}}
	})
	wantChanges(t, tickAgain(t, p, store, clock),
		changeKey{Kind: rm.ChangeReactionAdded, TS: m, Reaction: "eyes", User: "U2"},
		changeKey{Kind: rm.ChangeReactionCountChanged, TS: m, Reaction: "tada"})
}

// With a receiver down, a webhook's outbox grew with every change, without end.
// Past the webhook's max_rows the transaction that adds rows drops the oldest, and
// counts them.
func TestFeedOutboxKeepsAtMostMaxRows(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.post(msg(ch, ts(1000, 0), "U1", "old"))
	p, store, clock := feedPoller(t, src, rm.FeedConfig{Subscriptions: []rm.Subscription{{Name: "app", MaxRows: 3}}})
	mustTick(t, p)
	for i := range 5 {
		src.post(msg(ch, ts(-60+i, 0), "U1", "new"))
	}
	got := tickAgain(t, p, store, clock)
	if len(got) != 5 {
		t.Fatalf("%d changes, want 5 message_posted", len(got))
	}
	var rows []uint64
	var counts rm.OutboxCounts
	if err := store.View(func(tx rm.Tx) error {
		if err := tx.Outbox("app", func(r rm.OutboxRow) error { rows = append(rows, r.Seq); return nil }); err != nil {
			return err
		}
		return tx.OutboxCounts(func(_ string, c rm.OutboxCounts) error { counts = c; return nil })
	}); err != nil {
		t.Fatal(err)
	}
	want := []uint64{got[2].Seq, got[3].Seq, got[4].Seq}
	if d := cmp.Diff(want, rows); d != "" {
		t.Errorf("outbox rows (-want +got):\n%s", d)
	}
	if counts != (rm.OutboxCounts{Pending: 3, Dropped: 2, LastDropped: got[1].Seq}) {
		t.Errorf("counts %+v, want 3 pending, 2 dropped, the last %d", counts, got[1].Seq)
	}
}

// Every recorded change carries the event's JSON version, and a change stored before
// the field existed reads as version 1.
func TestChangesCarryTheirVersion(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.post(msg(ch, ts(1000, 0), "U1", "a"))
	p, store, _ := feedPoller(t, src, rm.FeedConfig{Backfill: true})
	mustTick(t, p)
	got := changesAfter(t, store, 0)
	if len(got) == 0 {
		t.Fatal("no change recorded")
	}
	for _, c := range got {
		if c.Version != rm.ChangeVersion {
			t.Errorf("change %d: version %d, want %d", c.Seq, c.Version, rm.ChangeVersion)
		}
		b, _ := json.Marshal(c)
		if !strings.Contains(string(b), `"version":1,`) {
			t.Errorf("change JSON %s lacks \"version\":1", b)
		}
	}
	var old rm.Change
	if err := json.Unmarshal([]byte(`{"seq":1,"id":"x","kind":"message_posted","own":false,"observed_at":"2026-12-01T00:00:00Z"}`), &old); err != nil || old.Version != 1 {
		t.Errorf("a change stored without version decodes as version %d (err %v), want 1", old.Version, err)
	}
}
