package poller_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// windowPoller is a poller with history pages capped per tick and no tail, so only
// the bulk window can store a message.
func windowPoller(t *testing.T, src rm.Source, pages int) (*poller.Poller, rm.Store, *fixedClock) {
	t.Helper()
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	b := defaultBudget()
	b.HistoryCalls = pages
	// A head bound of a minute: these tests read the window on every tick, as a busy
	// conversation would be read.
	return poller.New(store, src, poller.Config{Conversations: []string{ch}, Budget: b, Now: clock.Now,
		Tracking: poller.TrackingPolicy{HeadMaxAge: time.Minute}}), store, clock
}

// postN posts n messages a minute apart, the first (oldest) firstSecBefore seconds
// before epoch, and returns their ts oldest first.
func postN(src *stubSource, n, firstSecBefore int) []rm.TS {
	var out []rm.TS
	for i := range n {
		ts := ts(firstSecBefore-i*60, 0)
		src.post(msg(ch, ts, "U1", fmt.Sprintf("m%d", i)))
		out = append(out, ts)
	}
	return out
}

func conversation(t *testing.T, s rm.Store) rm.Conversation {
	t.Helper()
	var c rm.Conversation
	if err := s.View(func(tx rm.Tx) error { var err error; c, _, err = tx.Conversation(ch); return err }); err != nil {
		t.Fatal(err)
	}
	return c
}

func stored(t *testing.T, s rm.Store, tss []rm.TS) (n int) {
	t.Helper()
	for _, ts := range tss {
		if err := s.View(func(tx rm.Tx) error {
			_, ok, err := tx.Message(ch, ts)
			if ok {
				n++
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// A window deeper than a tick's history pages is read whole over several ticks: each
// sweep resumes below the oldest message the cut-short walk read (latest = that ts,
// exclusive), instead of reading the newest pages again.
func TestCutShortWalkResumesBelowWhereItStopped(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.pageSize = 5
	all := postN(src, 23, 3000) // 5 pages
	p, store, clock := windowPoller(t, src, 2)

	mustTick(t, p)
	c := conversation(t, store)
	bottom := all[len(all)-10]
	if n := stored(t, store, all); n != 10 || c.WalkBottom != bottom || c.WalkTop == "" || c.LastSweptAt != nil {
		t.Fatalf("after one tick: %d stored, walk (%s, %s], swept %v; want the newest 10, bottom at the 10th", n, c.WalkBottom, c.WalkTop, c.LastSweptAt)
	}
	top := c.WalkTop
	clock.Advance(time.Minute)
	mustTick(t, p)
	hist := src.callsOf(rm.MethodHistory)
	if r := hist[2].hist; r.Latest != bottom || r.Inclusive || r.Cursor != "" {
		t.Fatalf("third history call = %+v, want the resumed walk: latest = %s, exclusive, no cursor", r, bottom)
	}
	clock.Advance(time.Minute)
	mustTick(t, p)
	c = conversation(t, store)
	if n := stored(t, store, all); n != len(all) {
		t.Fatalf("after three ticks: %d of %d stored", n, len(all))
	}
	if c.WalkBottom != "" || c.WalkTop != "" || c.CoveredTo != top || c.LastSweptAt == nil {
		t.Fatalf("after the walk completed: walk (%s, %s], covered to %s (want %s), swept %v", c.WalkBottom, c.WalkTop, c.CoveredTo, top, c.LastSweptAt)
	}
}

// A resumed walk goes down to the top of the last complete walk, not to the start of
// the window: what lies below was read then and is tracked since.
func TestResumedWalkStopsAtTheLastCompleteWalk(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.pageSize = 5
	postN(src, 8, 3000)
	p, store, clock := windowPoller(t, src, 2)
	mustTick(t, p) // 2 pages: complete
	covered := conversation(t, store).CoveredTo
	if covered == "" {
		t.Fatal("a walk that reached its empty cursor recorded no coverage")
	}
	clock.Advance(time.Hour)
	fresh := postN(src, 12, -600) // after covered, before now: 3 pages
	clock.Advance(time.Minute)
	mustTick(t, p)
	clock.Advance(time.Minute)
	mustTick(t, p)
	var resumed *rm.HistoryRequest
	for _, c := range src.callsOf(rm.MethodHistory) {
		if c.hist.Latest != "" {
			resumed = &c.hist
			break
		}
	}
	if resumed == nil || resumed.Oldest != covered {
		t.Fatalf("resumed walk request = %+v, want oldest = the last complete walk's top %s", resumed, covered)
	}
	if n := stored(t, store, fresh); n != len(fresh) {
		t.Fatalf("%d of %d new messages stored", n, len(fresh))
	}
}

// When Slack pages oldest first, the lowest ts read says nothing about what is above
// it: the walk records no progress, rather than resuming below a range it never read.
func TestWalkRecordsNoProgressWhenPagesAreNotNewestFirst(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.pageSize = 5
	src.ascending = true
	postN(src, 23, 3000)
	p, store, _ := windowPoller(t, src, 2)
	mustTick(t, p)
	if c := conversation(t, store); c.WalkBottom != "" || c.WalkTop != "" || c.CoveredTo != "" {
		t.Fatalf("walk state after oldest-first pages: bottom %q top %q covered %q, want none", c.WalkBottom, c.WalkTop, c.CoveredTo)
	}
}
