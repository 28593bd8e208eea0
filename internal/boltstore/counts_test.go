package boltstore

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

func TestCounts(t *testing.T) {
	s := openTemp(t)
	p1, p2 := "1718906001.000000", "1718906010.000000"
	parent1 := msg(p1)
	parent1.ThreadTS = readmodel.TS(p1)
	parent2 := msg(p2) // a parent whose replies are not stored: no thread yet
	parent2.ThreadTS = readmodel.TS(p2)
	parent2.ReplyCount = 4
	putAll(t, s, parent1, parent2, msg("1718906020.000000"),
		reply("1718906002.000000", p1), reply("1718906003.000000", p1))
	update(t, s, func(tx readmodel.Tx) error {
		// Counts see the transaction's own writes.
		if err := tx.PutMessage(reply("1718906004.000000", p1)); err != nil {
			return err
		}
		c, err := tx.Counts("C1")
		if want := (readmodel.ChannelCounts{Messages: 6, Threads: 1, Tracked: 3}); err != nil || c != want {
			t.Errorf("in-tx Counts = %+v, %v, want %+v", c, err, want)
		}
		return nil
	})
	view(t, s, func(tx readmodel.Tx) error {
		c, err := tx.Counts("C1")
		if want := (readmodel.ChannelCounts{Messages: 6, Threads: 1, Tracked: 3}); err != nil || c != want {
			t.Errorf("Counts = %+v, %v, want %+v", c, err, want)
		}
		if c, err := tx.Counts("C9"); err != nil || c != (readmodel.ChannelCounts{}) {
			t.Errorf("Counts of an unknown channel = %+v, %v", c, err)
		}
		return nil
	})
}

// TestConsistencyAfterManyOperations applies random puts and deletes (replies moving
// between threads, messages turning into replies, polls, rollbacks) and then checks
// every index and counter against the records, and the file with bbolt's tx.Check.
func TestConsistencyAfterManyOperations(t *testing.T) {
	s := openTemp(t)
	rng := rand.New(rand.NewPCG(1, 2))
	channels := []string{"C1", "C2", "C12"}
	ts := func() readmodel.TS { return readmodel.TS(fmt.Sprintf("%d.%06d", 1718906000+rng.IntN(60), rng.IntN(3))) }
	for round := 0; round < 200; round++ {
		err := s.Update(func(tx readmodel.Tx) error {
			for i := 0; i < 20; i++ {
				ch := channels[rng.IntN(len(channels))]
				switch rng.IntN(6) {
				case 0:
					if err := tx.DeleteMessage(ch, ts()); err != nil {
						return err
					}
				case 1, 2:
					m := readmodel.Message{Channel: ch, TS: ts(), Text: "reply"}
					if m.ThreadTS = ts(); m.ThreadTS == m.TS {
						m.ThreadTS = ""
					}
					if rng.IntN(3) == 0 {
						m.Subtype = readmodel.SubtypeThreadBroadcast
					}
					if err := tx.PutMessage(m); err != nil {
						return err
					}
				default:
					m := readmodel.Message{Channel: ch, TS: ts(), Text: "top"}
					if rng.IntN(4) > 0 {
						m.LastPolledAt = at(int64(rng.IntN(5)))
					}
					if err := tx.PutMessage(m); err != nil {
						return err
					}
				}
			}
			if rng.IntN(10) == 0 {
				return errRollback
			}
			return nil
		})
		if err != nil && err != errRollback {
			t.Fatal(err)
		}
	}
	checkIndexes(t, s, channels)
	checkConsistent(t, s)
	// The random walk must have produced what it is meant to check.
	view(t, s, func(tx readmodel.Tx) error {
		c, _ := tx.Counts("C1")
		if c.Messages < 20 || c.Threads == 0 || c.Tracked == 0 || c.Messages == c.Tracked {
			t.Errorf("random walk too thin to check anything: %+v", c)
		}
		return nil
	})
}

var errRollback = fmt.Errorf("rollback")

// checkIndexes recomputes the thread index, tail index and counters from the records
// and compares them with the stored ones.
func checkIndexes(t *testing.T, s *Store, channels []string) {
	t.Helper()
	wantTail := map[string]*time.Time{}
	view(t, s, func(rtx readmodel.Tx) error {
		tx := rtx.(*tx)
		for _, ch := range channels {
			var want readmodel.ChannelCounts
			threads := map[readmodel.TS][]readmodel.TS{}
			var all []readmodel.Message
			// Walk the records directly: Timeline skips plain replies.
			cb, err := tx.channel(ch, false)
			if err != nil || cb == nil {
				t.Fatalf("channel %s: %v", ch, err)
			}
			err = cb.msgs.ForEach(func(k, v []byte) error {
				m, err := cb.decode(ch, k, v)
				all = append(all, m)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range all {
				want.Messages++
				if m.IsTracked() {
					want.Tracked++
					wantTail[ch+"/"+string(m.TS)] = m.RotatedAt()
				}
				if m.IsReply() {
					threads[m.ThreadTS] = append(threads[m.ThreadTS], m.TS)
				}
			}
			want.Threads = len(threads)
			entries := 0
			for parent, replies := range threads {
				got, err := tx.Replies(ch, parent)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(replies) {
					t.Errorf("%s: thread %s lists %d replies, records say %d", ch, parent, len(got), len(replies))
				}
				entries += len(got)
			}
			if n := bucketLen(t, s, "chan", ch, "t"); n != entries {
				t.Errorf("%s: thread index has %d entries, records say %d", ch, n, entries)
			}
			got, err := tx.Counts(ch)
			if err != nil || got != want {
				t.Errorf("%s: Counts = %+v, %v; recomputed %+v", ch, got, err, want)
			}
		}
		tail, err := tx.TailOldest(1<<20, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := tailLen(t, s); n != len(wantTail) || len(tail) != len(wantTail) {
			t.Errorf("tail index holds %d entries (TailOldest %d), records say %d", n, len(tail), len(wantTail))
		}
		if len(tail) != len(wantTail) {
			t.Errorf("tail has %d entries, records say %d", len(tail), len(wantTail))
		}
		for i, e := range tail {
			p, ok := wantTail[e.Channel+"/"+string(e.TS)]
			// Compare as tail keys: a poll time at the epoch is clamped to 1ns (0 is never).
			if !ok || (p == nil) != (e.RotatedAt == nil) || polledKeyOf(p) != polledKeyOf(e.RotatedAt) {
				t.Errorf("stale tail entry %+v (record: %v, %v)", e, ok, p)
			}
			if i > 0 && polledKeyOf(tail[i-1].RotatedAt) > polledKeyOf(e.RotatedAt) {
				t.Errorf("tail out of order at %d", i)
			}
		}
		return nil
	})
}

// TestConcurrentUpdatesAndViews runs writers and readers at once (meaningful under
// -race): write transactions share the store's scratch memory, which is safe only
// because bbolt runs them one at a time.
func TestConcurrentUpdatesAndViews(t *testing.T) {
	s := openTemp(t)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				m := polledMsg("C1", fmt.Sprintf("%d.%06d", 1718900000+i, w), at(int64(i)))
				if err := s.Update(func(tx readmodel.Tx) error { return tx.PutMessage(m) }); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				err := s.View(func(tx readmodel.Tx) error {
					_, err := tx.TailOldest(5, nil)
					return err
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	view(t, s, func(tx readmodel.Tx) error {
		c, err := tx.Counts("C1")
		if err != nil || c.Messages != 200 || c.Tracked != 200 {
			t.Errorf("Counts = %+v, %v; want 200 messages, 200 tracked", c, err)
		}
		return nil
	})
	if n := tailLen(t, s); n != 200 {
		t.Errorf("tail holds %d entries, want 200", n)
	}
}
