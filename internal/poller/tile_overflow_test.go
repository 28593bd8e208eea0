package poller_test

import (
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// A tile whose span holds one message more in Slack than in the store (one slack-go
// cannot decode, which a range read does not store) takes two calls to read. With one
// history call a tick, its first page (the newest, Slack's order) used the tick's
// call and the read ended there, neither done nor backed off: its oldest message,
// the stalest, anchored the same range every tick and the other tile was never read.
func TestATileThatNeedsTwoPagesDoesNotTakeEveryCall(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	src.pageSize = 15
	var tss []rm.TS
	for i := range 30 { // older than the bulk window: only the tail reads them
		m := msg(ch, ts(100*3600-10*i, 0), "U1", "old")
		src.post(m)
		tss = append(tss, m.TS)
	}
	bad := ts(100*3600-10*3, 500) // inside the first tile, tss[0..14]
	src.post(msg(ch, bad, "U1", "undecodable"))
	badSrc := alwaysBad(src, bad)
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	for _, m := range tss {
		if err := rm.Track(store, ch, m, ""); err != nil {
			t.Fatal(err)
		}
	}
	p := poller.New(store, badSrc, poller.Config{Conversations: []string{ch}, Now: clock.Now,
		Budget: poller.Budget{HistoryCalls: 1, RepliesCalls: 1, UsersInfoCalls: 10}})
	for range 24 {
		mustTick(t, p)
		clock.Advance(time.Minute)
	}
	// Two tiles, one of two pages: a rotation is three calls, and head reads take
	// some ticks' call: every message is read within the last 8 ticks.
	since := clock.Now().Add(-8 * time.Minute)
	var stale []rm.TS
	for _, m := range tss {
		got := getMsg(t, store, ch, m)
		if got.LastPolledAt == nil || got.LastPolledAt.Before(since) {
			stale = append(stale, m)
		}
		if got.MissingSince != nil {
			// A read gone on from a cursor did not see the range's first pages.
			t.Errorf("%s marked missing: it is in Slack", m)
		}
	}
	if len(stale) > 0 {
		t.Errorf("%d of 30 tracked messages not read in the last 8 of 24 one-call ticks: %v (tail ranges read: %v)", len(stale), stale, rangesRead(src.calls))
	}
	// Every read of them advanced them: none backs off. (The read that went on from
	// the cursor did not return the first page's messages; they were read, by the
	// read it went on from.)
	if b := poller.BackingOff(p); len(b) > 0 {
		t.Errorf("backing off after reads that advanced them: %v", b)
	}
}
