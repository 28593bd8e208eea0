package poller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/mock"
)

// tiledStore stores 45 messages older than the bulk window (three tiles of 15: the
// first index of each is 0, 15, 30, oldest first), with threads on the messages at
// the indexes in parents, and returns the source, the store, the clock and the ts of
// each message. The store is read whole by one tick of a poller that reads far back.
func tiledStore(t *testing.T, parents ...int) (*stubSource, rm.Store, *fixedClock, []rm.TS) {
	t.Helper()
	src := newStub()
	src.addChannel(ch)
	src.pageSize = 15
	var tss []rm.TS
	for i := range 45 {
		m := msg(ch, ts(100*3600-i, 0), "U1", fmt.Sprint("m", i))
		src.post(m)
		tss = append(tss, m.TS)
	}
	for _, i := range parents {
		src.setThread(ch, tss[i], msg(ch, ts(100*3600-i, 500), "U2", "reply"))
	}
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	first := poller.New(store, src, poller.Config{Conversations: []string{ch}, Now: clock.Now,
		BulkWindow: 1000 * time.Hour, Budget: poller.Budget{HistoryCalls: 100, RepliesCalls: 100, UsersInfoCalls: 10}})
	mustTick(t, first)
	clock.Advance(time.Minute)
	return src, store, clock, tss
}

// rangesRead returns the tail ranges (history calls with a latest) among calls, as
// "oldest..latest".
func rangesRead(calls []stubCall) []string {
	var out []string
	for _, c := range calls {
		if c.hist.Latest != "" {
			out = append(out, string(c.hist.Oldest)+".."+string(c.hist.Latest))
		}
	}
	return out
}

// Tail ranges are the conversation's tiles whatever refreshed part of a tile in the
// meantime. Thread reads refresh their parents, here one at each tile edge; ranges
// cut from the messages read together then lost those parents, shifted by one onto
// the next tile and cost an extra call every rotation (the smallest rotation
// benchmark store rotated at 1.25× its physical limit).
func TestTailRangesKeepToTheirTilesWhenThreadReadsRefreshParents(t *testing.T) {
	src, store, clock, tss := tiledStore(t, 0, 14, 15, 29, 30, 44)
	tiles := map[string]bool{}
	for k := range 3 {
		tiles[string(tss[15*k])+".."+string(tss[15*k+14])] = true
	}
	p := poller.New(store, src, poller.Config{Conversations: []string{ch}, Now: clock.Now,
		Budget: poller.Budget{HistoryCalls: 1, RepliesCalls: 1, UsersInfoCalls: 10}})
	n := len(src.calls)
	for range 40 {
		mustTick(t, p)
		clock.Advance(time.Minute)
	}
	got := rangesRead(src.calls[n:])
	// A new poller does not know the page cap yet: its first range asks for a page of
	// 999, the whole conversation, and learns the cap from the answer.
	if whole := string(tss[0]) + ".." + string(tss[44]); len(got) > 0 && got[0] == whole {
		got = got[1:]
	}
	if len(got) < 20 {
		t.Fatalf("%d tail ranges read in 40 one-call ticks, want most of them: %v", len(got), got)
	}
	for _, r := range got {
		if !tiles[r] {
			t.Errorf("range %s read: not one of the tiles %v", r, tiles)
		}
	}
}

// A parent whose thread alone is stale (replies cannot keep up) is not the history
// stream's anchor: its own read is recent. Taking the first due entry of the tail
// index, placed by the older of the two reads, re-read that parent's tile on every
// call and starved the others.
func TestAParentWhoseThreadAloneIsStaleDoesNotTakeTheHistoryCalls(t *testing.T) {
	src, store, clock, tss := tiledStore(t, 0)
	p := poller.New(store, src, poller.Config{Conversations: []string{ch}, Now: clock.Now,
		Budget: poller.Budget{HistoryCalls: 1, RepliesCalls: 0, UsersInfoCalls: 10}})
	n := len(src.calls)
	for range 8 {
		mustTick(t, p)
		clock.Advance(time.Minute)
	}
	count := map[string]int{}
	for _, r := range rangesRead(src.calls[n:]) {
		count[r]++
	}
	for k := range 3 {
		tile := string(tss[15*k]) + ".." + string(tss[15*k+14])
		if count[tile] < 2 {
			t.Errorf("tile %d read %d times in 8 one-call ticks, want at least 2 (every range read: %v)", k, count[tile], count)
		}
	}
}

// pacedSource returns src waiting a minute before each history and replies call, as
// pacing does at 1 request a minute, and saying when the request went out.
func pacedSource(src *stubSource, clock *fixedClock) *mock.Source {
	return &mock.Source{
		Next: src,
		HistoryFn: func(ctx context.Context, req rm.HistoryRequest) (rm.Page, error) {
			clock.Advance(time.Minute)
			p, err := src.History(ctx, req)
			p.SentAt = clock.Now()
			return p, err
		},
		RepliesFn: func(ctx context.Context, req rm.RepliesRequest) (rm.Page, error) {
			clock.Advance(time.Minute)
			p, err := src.Replies(ctx, req)
			p.SentAt = clock.Now()
			return p, err
		},
	}
}

// A message is read as of when its request went out, not as of before the pacing
// wait: taken before it, every read time was a minute early at non_marketplace rates,
// the reported staleness a minute too high and a rotation looked a call longer.
func TestMessagesAreReadAsOfWhenTheRequestWentOut(t *testing.T) {
	src, store, clock, tss := tiledStore(t, 20)
	p := poller.New(store, pacedSource(src, clock), poller.Config{Conversations: []string{ch}, Now: clock.Now,
		Budget: poller.Budget{HistoryCalls: 2, RepliesCalls: 1, UsersInfoCalls: 10}})
	before := map[rm.TS]rm.Message{}
	for _, m := range tss {
		before[m] = getMsg(t, store, ch, m)
	}
	start := clock.Now()
	mustTick(t, p)
	var ranges, threads int
	for _, m := range tss {
		got, was := getMsg(t, store, ch, m), before[m]
		if !sameTime(got.LastPolledAt, was.LastPolledAt) {
			ranges++
			if got.LastPolledAt.Sub(start) < time.Minute {
				t.Errorf("%s read as of %v, before its request went out (a minute after the tick began, at the earliest)", m, got.LastPolledAt)
			}
		}
		if !sameTime(got.ThreadSyncedAt, was.ThreadSyncedAt) {
			threads++
			if got.ThreadSyncedAt.Sub(start) < time.Minute {
				t.Errorf("thread %s read as of %v, before its request went out", m, got.ThreadSyncedAt)
			}
		}
	}
	if ranges == 0 || threads == 0 {
		t.Fatalf("the tick re-read %d messages and %d threads: the test proves nothing", ranges, threads)
	}
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
