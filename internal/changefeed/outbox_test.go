package changefeed_test

import (
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/changefeed"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func openStore(t testing.TB) *boltstore.Store {
	t.Helper()
	return storetest.Open(t)
}

// enqueue appends changes (one per channel given) with an outbox row each for hook.
func enqueue(t *testing.T, s rm.Store, hook string, at time.Time, channels ...string) []uint64 {
	t.Helper()
	var seqs []uint64
	err := s.Update(func(tx rm.Tx) error {
		for _, ch := range channels {
			c := rm.Change{ID: rm.NewEventID(), Kind: rm.ChangeMessageEdited, Channel: ch, TS: "1.000001", ObservedAt: at}
			if err := tx.AppendChange(&c); err != nil {
				return err
			}
			if err := tx.PutOutbox(rm.OutboxRow{Webhook: hook, Seq: c.Seq, Change: c, Enqueued: at}); err != nil {
				return err
			}
			seqs = append(seqs, c.Seq)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return seqs
}

func seqsOf(rows []rm.OutboxRow) []uint64 {
	var out []uint64
	for _, r := range rows {
		out = append(out, r.Seq)
	}
	return out
}

// complete completes one row of webhook h and reports whether it was delivered.
func complete(o *changefeed.Outbox, token string, seq uint64) (bool, error) {
	out, err := o.Complete("h", token, []uint64{seq})
	return err == nil && out[0] == changefeed.OutcomeDelivered, err
}

func newOutbox(s rm.Store, c *clock) *changefeed.Outbox {
	return &changefeed.Outbox{Store: s, Now: c.Now, Lease: 30 * time.Second, Backoff: 5 * time.Second, MaxBackoff: time.Minute, MaxAttempts: 3}
}

func TestClaimIsIdempotentPerTokenAndExclusiveAcrossTokens(t *testing.T) {
	s := openStore(t)
	c := &clock{t: t0}
	o := newOutbox(s, c)
	seqs := enqueue(t, s, "h", t0, "C1", "C2", "C3")

	a, err := o.Claim("h", "token-a", 2)
	if err != nil || !slices.Equal(seqsOf(a), seqs[:2]) {
		t.Fatalf("first claim = %v, %v; want %v", seqsOf(a), err, seqs[:2])
	}
	again, _ := o.Claim("h", "token-a", 2)
	if !slices.Equal(seqsOf(again), seqs[:2]) {
		t.Errorf("the same token claiming again got %v, want the same rows %v", seqsOf(again), seqs[:2])
	}
	b, _ := o.Claim("h", "token-b", 10)
	if !slices.Equal(seqsOf(b), seqs[2:]) {
		t.Errorf("another token got %v, want only the unclaimed %v", seqsOf(b), seqs[2:])
	}
}

func TestCompletionIsFencedByTheLease(t *testing.T) {
	s := openStore(t)
	c := &clock{t: t0}
	o := newOutbox(s, c)
	seq := enqueue(t, s, "h", t0, "C1")[0]
	if _, err := o.Claim("h", "slow", 1); err != nil {
		t.Fatal(err)
	}
	c.Advance(31 * time.Second) // the receiver was slower than the lease
	taken, _ := o.Claim("h", "fast", 1)
	if !slices.Equal(seqsOf(taken), []uint64{seq}) {
		t.Fatalf("after the lease expired another claim got %v, want %d", seqsOf(taken), seq)
	}
	if ok, err := complete(o, "slow", seq); ok || err != nil {
		t.Errorf("late completion by the expired claim = %v, %v; want refused", ok, err)
	}
	if ok, err := complete(o, "fast", seq); !ok || err != nil {
		t.Errorf("completion by the holder = %v, %v; want accepted", ok, err)
	}
	if rows, _ := o.Claim("h", "next", 10); len(rows) != 0 {
		t.Errorf("a completed row was claimed again: %v", seqsOf(rows))
	}
}

func TestExpiredClaimWithNoOtherClaimIsStillRefused(t *testing.T) {
	s := openStore(t)
	c := &clock{t: t0}
	o := newOutbox(s, c)
	seq := enqueue(t, s, "h", t0, "C1")[0]
	_, _ = o.Claim("h", "slow", 1)
	c.Advance(time.Minute)
	if ok, _ := complete(o, "slow", seq); ok {
		t.Error("a completion after the lease expired was accepted: the row may be claimed and delivered by another deliverer meanwhile")
	}
}

func TestFailuresBackOffHoldTheConversationAndPark(t *testing.T) {
	s := openStore(t)
	c := &clock{t: t0}
	o := newOutbox(s, c)
	seqs := enqueue(t, s, "h", t0, "C1", "C1", "C2")
	rows, _ := o.Claim("h", "a", 10)
	if len(rows) != 3 {
		t.Fatalf("claimed %v", seqsOf(rows))
	}
	if out, err := o.Fail("h", "a", seqs[0], "HTTP 500"); out != changefeed.OutcomeFailed || err != nil {
		t.Fatalf("Fail = %s, %v", out, err)
	}
	c.Advance(time.Second)
	rows, _ = o.Claim("h", "b", 10)
	// seqs[0] backs off for 5s, which holds back C1's later row; C2's row is leased by a.
	if len(rows) != 0 {
		t.Errorf("claimed %v while C1's first row backs off and the rest is leased", seqsOf(rows))
	}
	c.Advance(40 * time.Second)
	rows, _ = o.Claim("h", "c", 10)
	if !slices.Equal(seqsOf(rows), seqs) {
		t.Errorf("after backoff and lease: claimed %v, want %v in seq order", seqsOf(rows), seqs)
	}
	for attempt := 2; attempt <= 3; attempt++ {
		out, _ := o.Fail("h", "c", seqs[0], "HTTP 500")
		if attempt < 3 && out != changefeed.OutcomeFailed || attempt == 3 && out != changefeed.OutcomeParked {
			t.Errorf("attempt %d: %s", attempt, out)
		}
		if attempt < 3 {
			c.Advance(2 * time.Minute)
			if _, err := o.Claim("h", "c", 10); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.Advance(2 * time.Minute)
	rows, _ = o.Claim("h", "d", 10)
	if !slices.Equal(seqsOf(rows), seqs[1:]) {
		t.Errorf("with seqs[0] parked, claimed %v, want %v (a parked row holds nothing back)", seqsOf(rows), seqs[1:])
	}
	n, err := o.Requeue("h", nil)
	if n != 1 || err != nil {
		t.Fatalf("Requeue = %d, %v", n, err)
	}
	stats := statsOf(t, s)["h"]
	if stats.Parked != 0 || stats.Pending != 3 {
		t.Errorf("stats after requeue = %+v", stats)
	}
}

func statsOf(t *testing.T, s rm.Store) map[string]changefeed.Stats {
	t.Helper()
	var st map[string]changefeed.Stats
	if err := s.View(func(tx rm.Tx) error {
		var err error
		st, err = changefeed.OutboxStats(tx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestTimesFromAClockThatMovedBackAreNotWaitedFor(t *testing.T) {
	s := openStore(t)
	c := &clock{t: t0.Add(48 * time.Hour)} // set two days ahead
	o := newOutbox(s, c)
	seq := enqueue(t, s, "h", c.Now(), "C1")[0]
	_, _ = o.Claim("h", "a", 1)
	_, _ = o.Fail("h", "a", seq, "timeout")
	c.Advance(-48 * time.Hour) // corrected
	rows, _ := o.Claim("h", "b", 1)
	if len(rows) != 1 {
		t.Errorf("after the clock moved back two days the row waits for a retry time two days away")
	}
	_, _ = o.Claim("h", "c", 1) // b's lease also lies ahead of a clock moved back
	c.Advance(-time.Hour)
	if rows, _ := o.Claim("h", "d", 1); len(rows) != 1 {
		t.Errorf("a lease an hour ahead of the clock (longer than the lease period) still held the row")
	}
}

func TestReadSaysGoneWhenTheConsumerIsBehindRetention(t *testing.T) {
	s := openStore(t)
	seqs := enqueue(t, s, "h", t0, "C1", "C2", "C3")
	if n, err := changefeed.Prune(s, t0.Add(time.Hour), 30*time.Minute, 2); n != 2 || err != nil {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	err := s.View(func(tx rm.Tx) error {
		_, err := changefeed.Read(tx, 0, 10, rm.ChangeFilter{})
		var gone *changefeed.GoneError
		if !errors.As(err, &gone) || gone.Oldest != seqs[2] {
			t.Errorf("Read after 0 = %v, want gone with oldest %d", err, seqs[2])
		}
		p, err := changefeed.Read(tx, seqs[1], 10, rm.ChangeFilter{})
		if err != nil || len(p.Changes) != 1 || p.Changes[0].Seq != seqs[2] || p.Last != seqs[2] {
			t.Errorf("Read after %d = %+v, %v", seqs[1], p, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A clock stepped back a little (an NTP correction, a VM resumed) leaves a fresh
// claim's lease a little more than one lease period ahead. That claim still holds:
// its completion is accepted, and no other claim takes its rows meanwhile.
func TestAClaimSurvivesTheClockSteppingBackALittle(t *testing.T) {
	s := openStore(t)
	c := &clock{t: t0}
	o := newOutbox(s, c) // 30s lease
	seq := enqueue(t, s, "h", t0, "C1")[0]
	if rows, _ := o.Claim("h", "a", 1); len(rows) != 1 {
		t.Fatal("nothing claimed")
	}
	c.Advance(-2 * time.Second)
	if rows, _ := o.Claim("h", "b", 1); len(rows) != 0 {
		t.Errorf("after the clock stepped back 2s, another claim took the row a holds: %v", seqsOf(rows))
	}
	if ok, err := complete(o, "a", seq); !ok || err != nil {
		t.Errorf("completion by the holder after the clock stepped back 2s = %v, %v; want accepted (not fenced: the lease has not run out)", ok, err)
	}
}

// A filter that skips most of a long feed must not hold one read transaction over
// all of it (a long read blocks the writer's file growth): a page examines at most
// MaxScan changes, and Next lets the consumer read on.
func TestReadExaminesAtMostMaxScanChanges(t *testing.T) {
	s := openStore(t)
	err := s.Update(func(tx rm.Tx) error {
		for i := range changefeed.MaxScan + 1 {
			kind := rm.ChangeMessageEdited
			if i == changefeed.MaxScan {
				kind = rm.ChangeUserRenamed
			}
			c := rm.Change{ID: rm.NewEventID(), Kind: kind, Channel: "C1", ObservedAt: t0}
			if err := tx.AppendChange(&c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f := rm.ChangeFilter{Kinds: []string{rm.ChangeUserRenamed}}
	var first, second changefeed.Page
	_ = s.View(func(tx rm.Tx) error {
		first, err = changefeed.Read(tx, 0, 10, f)
		if err == nil {
			second, err = changefeed.Read(tx, first.Next, 10, f)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Changes) != 0 || first.Next != changefeed.MaxScan {
		t.Errorf("first page: %d changes, next %d; want none, next %d (the scan's bound)", len(first.Changes), first.Next, changefeed.MaxScan)
	}
	if len(second.Changes) != 1 || second.Next != changefeed.MaxScan+1 {
		t.Errorf("second page: %d changes, next %d; want the rename, next %d", len(second.Changes), second.Next, changefeed.MaxScan+1)
	}
}

// A change stamped while the clock was far ahead (a wrong RTC at boot, corrected
// later) must not stop retention for as long as that stamp lies in the future: the
// changes after it, stamped by the corrected clock, came later, so once one of them
// is past retention, the one before it is too.
func TestPruneIsNotStuckBehindAChangeStampedByAClockThatWasAhead(t *testing.T) {
	s := openStore(t)
	ahead := enqueue(t, s, "h", t0.Add(365*24*time.Hour), "C1")[0]
	after := enqueue(t, s, "h", t0, "C1", "C1")
	now := t0.Add(8 * 24 * time.Hour)
	n, err := changefeed.Prune(s, now, 7*24*time.Hour, 100)
	if n != 3 || err != nil {
		t.Errorf("Prune = %d, %v; want the 3 changes (%d, %v) gone: the two stamped 8 days ago, and the one before them", n, err, ahead, after)
	}
	recent := enqueue(t, s, "h", now, "C1")[0]
	future := enqueue(t, s, "h", now.Add(365*24*time.Hour), "C1")[0]
	if n, _ := changefeed.Prune(s, now, 7*24*time.Hour, 100); n != 0 {
		t.Errorf("Prune pruned %d of a recent change (%d) and one stamped ahead after it (%d)", n, recent, future)
	}
}

// An undecodable change (a flipped bit) is skipped by every read; retention must
// still delete it with the changes around it, or the oldest seq it keeps would hide
// the pruning from a consumer behind it, who must get 410.
func TestPruneDeletesAnUndecodableChangeAmongTheOldOnes(t *testing.T) {
	s := openStore(t)
	seqs := enqueue(t, s, "h", t0, "C1", "C1", "C1")
	err := s.DB().Update(func(btx *bolt.Tx) error {
		return btx.Bucket([]byte("changes")).Put(binary.BigEndian.AppendUint64(nil, seqs[0]), []byte{1, '{', 0xff})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := changefeed.Prune(s, t0.Add(8*24*time.Hour), 7*24*time.Hour, 100); err != nil {
		t.Fatal(err)
	}
	_ = s.View(func(tx rm.Tx) error {
		_, err := changefeed.Read(tx, 0, 10, rm.ChangeFilter{})
		if !errors.Is(err, changefeed.ErrGone) {
			t.Errorf("Read after 0 once every change is past retention = %v, want gone", err)
		}
		return nil
	})
}

// countingStore counts the outbox rows its transactions read (index entries are not
// rows).
type countingStore struct {
	rm.Store
	rows int
}

type countingTx struct {
	rm.Tx
	s *countingStore
}

func (s *countingStore) Update(fn func(rm.Tx) error) error {
	return s.Store.Update(func(tx rm.Tx) error { return fn(countingTx{tx, s}) })
}

func (s *countingStore) View(fn func(rm.Tx) error) error {
	return s.Store.View(func(tx rm.Tx) error { return fn(countingTx{tx, s}) })
}

func (t countingTx) count(fn func(rm.OutboxRow) error) func(rm.OutboxRow) error {
	return func(r rm.OutboxRow) error { t.s.rows++; return fn(r) }
}

func (t countingTx) Outbox(webhook string, fn func(rm.OutboxRow) error) error {
	return t.Tx.Outbox(webhook, t.count(fn))
}

func (t countingTx) OutboxParked(webhook string, fn func(rm.OutboxRow) error) error {
	return t.Tx.OutboxParked(webhook, t.count(fn))
}

func (t countingTx) OutboxRow(webhook string, seq uint64) (rm.OutboxRow, bool, error) {
	t.s.rows++
	return t.Tx.OutboxRow(webhook, seq)
}

// Each claim of a batch walked the whole outbox (for rows its token might already
// hold), so draining a backlog — a first sync with backfill, a receiver back after
// an outage — cost the square of its length: 20,000 rows took 45 s of claims, each a
// write transaction holding off the poller. A token never used for a claim holds no
// row: its claim stops at its batch.
func TestAFreshClaimReadsOnlyAsFarAsItsBatch(t *testing.T) {
	s := openStore(t)
	c := &clock{t: t0}
	channels := make([]string, 1000)
	for i := range channels {
		channels[i] = "C1"
	}
	seqs := enqueue(t, s, "h", t0, channels...)
	counting := &countingStore{Store: s}
	o := newOutbox(counting, c)
	rows, err := o.Claim("h", "fresh", 10)
	if err != nil || !slices.Equal(seqsOf(rows), seqs[:10]) {
		t.Fatalf("Claim = %v, %v; want the first 10", seqsOf(rows), err)
	}
	if counting.rows > 11 {
		t.Errorf("a claim of 10 rows from a fresh token read %d of the outbox's 1000 rows", counting.rows)
	}
	again, _ := o.Claim("h", "fresh", 10)
	if !slices.Equal(seqsOf(again), seqs[:10]) {
		t.Errorf("the same token claiming again got %v, want the same rows", seqsOf(again))
	}
}

// Retention goes by Slack's time, waits for it, and never takes most of the feed in
// one pass.
func TestRetentionGoesBySlacksTimeAndTakesAtMostHalfAPass(t *testing.T) {
	s := openStore(t)
	old := make([]string, 100)
	for i := range old {
		old[i] = "C1"
	}
	enqueue(t, s, "h", t0, old...)
	slack, known := t0.Add(30*24*time.Hour), false
	r := changefeed.Retention{Store: s, Retention: 7 * 24 * time.Hour, Batch: 7,
		SlackNow: func() (time.Time, bool) { return slack, known }}
	if n, _, _, ok, err := r.Pass(); n != 0 || ok || err != nil {
		t.Fatalf("before Slack's time is known: pruned %d, ok %v, %v; want nothing", n, ok, err)
	}
	known = true
	n, held, more, ok, err := r.Pass()
	if n != 50 || held != 100 || !more || !ok || err != nil {
		t.Errorf("first pass: pruned %d of %d, more %v, ok %v, %v; want 50 of 100, more", n, held, more, ok, err)
	}
	n, held, more, _, _ = r.Pass()
	if n != 25 || held != 50 || !more {
		t.Errorf("second pass: pruned %d of %d, more %v; want 25 of 50, more", n, held, more)
	}
	slack = t0.Add(time.Hour) // the skew measured anew: the changes are an hour old
	if n, _, more, _, _ := r.Pass(); n != 0 || more {
		t.Errorf("by Slack's time an hour later: pruned %d, more %v; want none", n, more)
	}
}

// backlog enqueues n rows of webhook h over the conversations given, in turn, and
// fails the first row of each (a receiver down): every conversation backs off.
func backlog(t *testing.T, s rm.Store, o *changefeed.Outbox, n int, channels ...string) []uint64 {
	t.Helper()
	all := make([]string, n)
	for i := range all {
		all[i] = channels[i%len(channels)]
	}
	seqs := enqueue(t, s, "h", t0, all...)
	rows, err := o.Claim("h", "down", len(channels))
	if err != nil || len(rows) != len(channels) {
		t.Fatalf("claimed %v, %v; want each conversation's first row", seqsOf(rows), err)
	}
	for _, r := range rows {
		if _, err := o.Fail("h", "down", r.Seq, "HTTP 503"); err != nil {
			t.Fatal(err)
		}
	}
	return seqs
}

// With a receiver down, every sweep claimed in a write transaction that read and
// decoded every row waiting (200,000 rows: 5 s a sweep, each 5 s, the poller's
// writer held off meanwhile). A claim reads each conversation's first row from the
// store's index: what it reads does not grow with the rows waiting.
func TestAClaimWhileEveryConversationBacksOffReadsNoRowsBehindTheirFirst(t *testing.T) {
	s := openStore(t)
	c := &clock{t: t0}
	counting := &countingStore{Store: s}
	o := newOutbox(counting, c)
	backlog(t, s, o, 1000, "C1", "C2")
	counting.rows = 0
	c.Advance(time.Second) // inside the 5s backoff
	if rows, err := o.Claim("h", "sweep", 50); len(rows) != 0 || err != nil {
		t.Fatalf("claimed %v, %v while both conversations back off", seqsOf(rows), err)
	}
	if counting.rows > 2 {
		t.Errorf("a claim that found nothing due read %d of the 1,000 rows waiting", counting.rows)
	}
	c.Advance(5 * time.Second) // the backoffs are over
	counting.rows = 0
	rows, _ := o.Claim("h", "after", 10)
	if len(rows) != 10 || counting.rows > 10+2 {
		t.Errorf("a claim of %d rows read %d rows", len(rows), counting.rows)
	}
}

// status and /metrics counted the outbox by reading every row (3.3 s at 200,000):
// the figures come from the store's counts, and the oldest pending row from each
// conversation's first.
func TestOutboxFiguresDoNotReadTheRows(t *testing.T) {
	s := openStore(t)
	c := &clock{t: t0}
	counting := &countingStore{Store: s}
	o := newOutbox(counting, c)
	backlog(t, s, o, 1000, "C1", "C2")
	counting.rows = 0
	var st map[string]changefeed.Stats
	if err := counting.View(func(tx rm.Tx) error {
		var err error
		st, err = changefeed.OutboxStats(tx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got := st["h"]; got.Pending != 1000 || got.Parked != 0 || !got.OldestPending.Equal(t0) {
		t.Errorf("stats %+v, want 1000 pending since %v", got, t0)
	}
	if counting.rows != 0 {
		t.Errorf("the outbox figures read %d rows", counting.rows)
	}
}

// The parked rows are listed from the store's index of them, across webhooks by
// name, up to the limit.
func TestListOutboxParkedAcrossWebhooks(t *testing.T) {
	s := openStore(t)
	c := &clock{t: t0}
	for _, hook := range []string{"b", "a"} {
		seqs := enqueue(t, s, hook, t0, "C1", "C2", "C3")
		err := s.Update(func(tx rm.Tx) error {
			for _, seq := range seqs[:2] {
				r, _, _ := tx.OutboxRow(hook, seq)
				r.Parked = true
				if err := tx.PutOutbox(r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	_ = s.View(func(tx rm.Tx) error {
		rows, err := changefeed.ListOutbox(tx, "", true, c.Now(), 3)
		for _, r := range rows {
			got = append(got, r.Webhook)
		}
		return err
	})
	if !slices.Equal(got, []string{"a", "a", "b"}) {
		t.Errorf("listed the parked rows of %v, want a, a, b (by webhook, up to 3)", got)
	}
}
