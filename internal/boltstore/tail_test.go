package boltstore

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

func tailRefs(es []readmodel.TailEntry) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.Channel+"/"+string(e.TS))
	}
	return out
}

func polledMsg(channel, ts string, polled *time.Time) readmodel.Message {
	return readmodel.Message{Channel: channel, TS: readmodel.TS(ts), LastPolledAt: polled}
}

func TestTailOldestOrder(t *testing.T) {
	s := openTemp(t)
	putAll(t, s,
		polledMsg("C2", "1718906001.000000", at(300)),
		polledMsg("C1", "1718906002.000000", nil),
		polledMsg("C1", "1718906003.000000", at(100)),
		polledMsg("C12", "1718906000.000000", nil), // "C1" < "C12" < "C2"
		polledMsg("C2", "1718906000.000000", nil),
		polledMsg("C1", "999999999.000000", nil), // 9-digit seconds: earlier than the others
		polledMsg("C1", "1718906004.000000", at(200)),
		reply("1718906005.000000", "1718906002.000000"), // replies are not tracked
	)
	view(t, s, func(tx readmodel.Tx) error {
		got, err := tx.TailOldest(100, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			// never polled, by channel then ts
			"C1/999999999.000000", "C1/1718906002.000000", "C12/1718906000.000000", "C2/1718906000.000000",
			// then oldest LastPolledAt first
			"C1/1718906003.000000", "C1/1718906004.000000", "C2/1718906001.000000",
		}
		if diff := cmp.Diff(want, tailRefs(got)); diff != "" {
			t.Errorf("TailOldest (-want +got):\n%s", diff)
		}
		if got[0].RotatedAt != nil || got[4].RotatedAt == nil || !got[4].RotatedAt.Equal(*at(100)) {
			t.Errorf("LastPolledAt: never polled = %v, first polled = %v", got[0].RotatedAt, got[4].RotatedAt)
		}
		first2, _ := tx.TailOldest(2, nil)
		if diff := cmp.Diff(want[:2], tailRefs(first2)); diff != "" {
			t.Errorf("TailOldest(2) (-want +got):\n%s", diff)
		}
		if none, _ := tx.TailOldest(0, nil); len(none) != 0 {
			t.Errorf("TailOldest(0) = %v", none)
		}
		return nil
	})
}

func TestTailOldestFollowsLastPolledAtWithoutStaleEntries(t *testing.T) {
	s := openTemp(t)
	putAll(t, s, polledMsg("C1", "1.000000", nil), polledMsg("C1", "2.000000", nil), polledMsg("C1", "3.000000", nil))
	// Poll the oldest-in-rotation messages one by one, as the tail phase does.
	for i := int64(1); i <= 7; i++ {
		var next readmodel.TailEntry
		view(t, s, func(tx readmodel.Tx) error {
			got, err := tx.TailOldest(1, nil)
			if err != nil || len(got) != 1 {
				t.Fatalf("TailOldest(1) = %v, %v", got, err)
			}
			next = got[0]
			return nil
		})
		update(t, s, func(tx readmodel.Tx) error {
			m, _, err := tx.Message(next.Channel, next.TS)
			if err != nil {
				return err
			}
			m.LastPolledAt = at(1000 + i)
			return tx.PutMessage(m)
		})
		if n := tailLen(t, s); n != 3 {
			t.Fatalf("after poll %d: %d tail entries, want 3 (one per tracked message)", i, n)
		}
	}
	// Round robin: 1,2,3,1,2,3,1 were polled; the order is now 2,3,1.
	view(t, s, func(tx readmodel.Tx) error {
		got, _ := tx.TailOldest(3, nil)
		want := []string{"C1/2.000000", "C1/3.000000", "C1/1.000000"}
		if diff := cmp.Diff(want, tailRefs(got)); diff != "" {
			t.Errorf("rotation order (-want +got):\n%s", diff)
		}
		return nil
	})
	// A tracked message that becomes a reply leaves the tail; one that comes back joins it.
	putAll(t, s, reply("2.000000", "1.000000"))
	if n := tailLen(t, s); n != 2 {
		t.Errorf("after becoming a reply: %d tail entries, want 2", n)
	}
	putAll(t, s, polledMsg("C1", "2.000000", at(5)))
	if n := tailLen(t, s); n != 3 {
		t.Errorf("after becoming top-level again: %d tail entries, want 3", n)
	}
}

func TestTailOldestSkip(t *testing.T) {
	s := openTemp(t)
	putAll(t, s,
		polledMsg("C1", "1.000000", nil), polledMsg("C2", "2.000000", nil),
		polledMsg("C1", "3.000000", at(1)), polledMsg("C2", "4.000000", at(2)), polledMsg("C1", "5.000000", at(3)),
	)
	view(t, s, func(tx readmodel.Tx) error {
		var seen []string
		got, err := tx.TailOldest(2, func(e readmodel.TailEntry) bool {
			seen = append(seen, e.Channel+"/"+string(e.TS))
			return e.Channel == "C2" // e.g. an archived conversation
		})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"C1/1.000000", "C1/3.000000"}, tailRefs(got)); diff != "" {
			t.Errorf("TailOldest with skip (-want +got):\n%s", diff)
		}
		// It stops as soon as it has n: the last entry was never offered to skip.
		if diff := cmp.Diff([]string{"C1/1.000000", "C2/2.000000", "C1/3.000000"}, seen); diff != "" {
			t.Errorf("entries offered to skip (-want +got):\n%s", diff)
		}
		all, _ := tx.TailOldest(10, func(readmodel.TailEntry) bool { return true })
		if len(all) != 0 {
			t.Errorf("skip-all returned %v", all)
		}
		return nil
	})
}

func TestPolledKeyOrderAndClamp(t *testing.T) {
	if polledKeyOf(nil) != 0 {
		t.Error("nil must be 0")
	}
	epoch := time.Unix(0, 0)
	if k := polledKey(epoch); k != 1 {
		t.Errorf("polledKey(epoch) = %d, want 1 (0 is never polled)", k)
	}
	if k := polledKey(time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)); k != 1 {
		t.Errorf("polledKey(1600) = %d, want 1", k)
	}
	a, b := polledKey(time.Unix(100, 1)), polledKey(time.Unix(100, 2))
	if a >= b {
		t.Errorf("polledKey not monotonic: %d >= %d", a, b)
	}
	if polledKey(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)) < polledKey(time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Error("far future must clamp high")
	}
}

// TestTailChunksSplitMergeAndShrink drives one big group (never polled) and a few
// others through inserts in random order, moves and deletes, and checks TailOldest
// against a model and the chunk invariants (tailLen).
func TestTailChunksSplitMergeAndShrink(t *testing.T) {
	s := openTemp(t)
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 500
	type state struct {
		present bool
		polled  *time.Time
	}
	model := make([]state, n)
	tsOf := func(i int) string { return fmt.Sprintf("%d.%06d", 1718900000+i, i%7) }
	apply := func(order []int, f func(i int) (readmodel.Message, bool)) {
		update(t, s, func(tx readmodel.Tx) error {
			for _, i := range order {
				m, del := f(i)
				if del {
					model[i] = state{}
					if err := tx.DeleteMessage("C1", m.TS); err != nil {
						return err
					}
					continue
				}
				model[i] = state{present: true, polled: m.LastPolledAt}
				if err := tx.PutMessage(m); err != nil {
					return err
				}
			}
			return nil
		})
	}
	// All never polled, inserted in random order: one group, split into chunks.
	apply(rng.Perm(n), func(i int) (readmodel.Message, bool) { return polledMsg("C1", tsOf(i), nil), false })
	// Poll a random half at one of three times, delete a tenth, in random order, twice.
	for round := 0; round < 2; round++ {
		apply(rng.Perm(n), func(i int) (readmodel.Message, bool) {
			switch r := rng.IntN(20); {
			case r < 2:
				return polledMsg("C1", tsOf(i), nil), true
			case r < 12:
				return polledMsg("C1", tsOf(i), at(int64(100+rng.IntN(3)))), false
			}
			return polledMsg("C1", tsOf(i), model[i].polled), false
		})
	}
	var want []string
	for _, p := range []*time.Time{nil, at(100), at(101), at(102)} {
		for i, st := range model {
			if st.present && polledKeyOf(st.polled) == polledKeyOf(p) {
				want = append(want, "C1/"+tsOf(i))
			}
		}
	}
	view(t, s, func(tx readmodel.Tx) error {
		got, err := tx.TailOldest(n, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, tailRefs(got)); diff != "" {
			t.Errorf("TailOldest after churn (-want +got):\n%s", diff)
		}
		return nil
	})
	if got := tailLen(t, s); got != len(want) {
		t.Errorf("tail holds %d entries, want %d", got, len(want))
	}
	if chunks := bucketLen(t, s, "tail"); chunks < len(want)/tailChunkMax {
		t.Errorf("%d chunks for %d entries: not split", chunks, len(want))
	}
}

// TestTailRepollWholeStore re-polls every tracked message in one transaction, twice:
// each time every old chunk is emptied and the new group is written after them. (An
// earlier version looked for chunks with Cursor.Last, which bbolt loops on forever once
// a transaction has emptied all leaves of a bucket.)
func TestTailRepollWholeStore(t *testing.T) {
	s := openTemp(t)
	const n = 300
	for round := int64(0); round < 3; round++ {
		update(t, s, func(tx readmodel.Tx) error {
			for i := n - 1; i >= 0; i-- { // newest first, as Slack pages
				if err := tx.PutMessage(polledMsg("C1", fmt.Sprintf("%d.000000", 1718900000+i), at(100+round))); err != nil {
					return err
				}
			}
			got, err := tx.TailOldest(3, nil)
			if err != nil {
				return err
			}
			if len(got) != 3 || got[0].TS != "1718900000.000000" || !got[0].RotatedAt.Equal(*at(100 + round)) {
				t.Errorf("round %d: TailOldest inside the transaction = %+v", round, got)
			}
			return nil
		})
		if got := tailLen(t, s); got != n {
			t.Errorf("round %d: %d tail entries, want %d", round, got, n)
		}
	}
}

// A thread parent rotates by the older of its own read and its thread's last full read:
// head reads re-read parents in the bulk window every tick, but only a thread read sees
// an edited older reply.
func TestTailOrdersThreadParentsByThreadSync(t *testing.T) {
	s := openTemp(t)
	parent := readmodel.Message{Channel: "C1", TS: "1718906000.000000", ThreadTS: "1718906000.000000",
		ReplyCount: 1, LatestReply: "1718906001.000000", LastPolledAt: at(500), ThreadSyncedAt: at(100)}
	plain := readmodel.Message{Channel: "C1", TS: "1718906100.000000", LastPolledAt: at(300)}
	gone := parent
	gone.TS, gone.ThreadTS, gone.ThreadGone = "1718906200.000000", "1718906200.000000", true
	gone.LastPolledAt, gone.ThreadSyncedAt = at(400), at(50)
	putAll(t, s, parent, plain, gone)
	view(t, s, func(tx readmodel.Tx) error {
		got, err := tx.TailOldest(3, func(readmodel.TailEntry) bool { return false })
		if err != nil {
			t.Fatal(err)
		}
		var order []readmodel.TS
		for _, e := range got {
			order = append(order, e.TS)
		}
		want := []readmodel.TS{parent.TS, plain.TS, gone.TS}
		if fmt.Sprint(order) != fmt.Sprint(want) {
			t.Fatalf("tail order = %v, want %v (parent by its thread sync at 100, gone thread by its own read at 400)", order, want)
		}
		if !got[0].RotatedAt.Equal(*at(100)) {
			t.Errorf("parent RotatedAt = %v, want %v", got[0].RotatedAt, at(100))
		}
		return nil
	})
}

// TailAfter starts past the entries polled at or before its time and never returns a
// never-polled one: it is how the rotation finds entries read "in the future".
func TestTailAfterStartsPastTheTime(t *testing.T) {
	s := openTemp(t)
	putAll(t, s,
		polledMsg("C1", "1718906001.000000", at(300)),
		polledMsg("C1", "1718906002.000000", nil),
		polledMsg("C2", "1718906003.000000", at(100)),
		polledMsg("C1", "1718906004.000000", at(200)),
		polledMsg("C1", "1718906005.000000", at(100)),
	)
	view(t, s, func(tx readmodel.Tx) error {
		for _, c := range []struct {
			after int64
			want  []string
		}{
			{99, []string{"C1/1718906005.000000", "C2/1718906003.000000", "C1/1718906004.000000", "C1/1718906001.000000"}},
			{100, []string{"C1/1718906004.000000", "C1/1718906001.000000"}},
			{250, []string{"C1/1718906001.000000"}},
			{300, []string{}},
		} {
			got, err := tx.TailAfter(*at(c.after), 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, tailRefs(got)); diff != "" {
				t.Errorf("TailAfter(at(%d)) (-want +got):\n%s", c.after, diff)
			}
		}
		got, err := tx.TailAfter(*at(99), 1, func(e readmodel.TailEntry) bool { return e.Channel == "C1" })
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"C2/1718906003.000000"}, tailRefs(got)); diff != "" {
			t.Errorf("TailAfter(at(99), 1, skip C1) (-want +got):\n%s", diff)
		}
		return nil
	})
}
