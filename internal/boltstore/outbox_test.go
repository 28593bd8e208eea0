package boltstore

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

var outboxT0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// putRows writes a change and an outbox row of webhook "app" per channel given.
func putRows(t *testing.T, s *Store, channels ...string) []uint64 {
	t.Helper()
	var seqs []uint64
	err := s.Update(func(tx readmodel.Tx) error {
		for _, ch := range channels {
			c := readmodel.Change{ID: readmodel.NewEventID(), Kind: readmodel.ChangeMessageEdited, Channel: ch}
			if err := tx.AppendChange(&c); err != nil {
				return err
			}
			if err := tx.PutOutbox(readmodel.OutboxRow{Webhook: "app", Seq: c.Seq, Change: c, Enqueued: outboxT0.Add(time.Duration(c.Seq) * time.Second)}); err != nil {
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

// outboxState is what the index and the counts say of webhook "app".
type outboxState struct {
	counts  readmodel.OutboxCounts
	heads   []readmodel.OutboxEntry
	pending map[string][]uint64
	parked  []uint64
}

func stateOf(t *testing.T, s *Store) outboxState {
	t.Helper()
	st := outboxState{pending: map[string][]uint64{}}
	err := s.View(func(tx readmodel.Tx) error {
		if err := tx.OutboxCounts(func(name string, c readmodel.OutboxCounts) error {
			if name == "app" {
				st.counts = c
			}
			return nil
		}); err != nil {
			return err
		}
		if err := tx.OutboxHeads("app", func(h readmodel.OutboxEntry) error {
			st.heads = append(st.heads, h)
			return tx.OutboxPending("app", h.Channel, func(e readmodel.OutboxEntry) error {
				st.pending[h.Channel] = append(st.pending[h.Channel], e.Seq)
				return nil
			})
		}); err != nil {
			return err
		}
		return tx.OutboxParked("app", func(r readmodel.OutboxRow) error { st.parked = append(st.parked, r.Seq); return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestOutboxIndexAndCountsFollowPutsAndDeletes(t *testing.T) {
	s := openTemp(t)
	seqs := putRows(t, s, "C1", "C2", "C1", "", "C2") // "": a user_renamed change has no channel
	st := stateOf(t, s)
	if st.counts != (readmodel.OutboxCounts{Pending: 5}) || len(st.heads) != 3 {
		t.Fatalf("after 5 puts: %+v", st)
	}
	if want := map[string][]uint64{"": {seqs[3]}, "C1": {seqs[0], seqs[2]}, "C2": {seqs[1], seqs[4]}}; !equalPending(st.pending, want) {
		t.Errorf("pending %v, want %v", st.pending, want)
	}
	next := outboxT0.Add(time.Hour)
	err := s.Update(func(tx readmodel.Tx) error {
		r, _, _ := tx.OutboxRow("app", seqs[0])
		r.Parked = true
		if err := tx.PutOutbox(r); err != nil {
			return err
		}
		r, _, _ = tx.OutboxRow("app", seqs[1])
		r.NextAttempt = next
		if err := tx.PutOutbox(r); err != nil {
			return err
		}
		return tx.DeleteOutbox("app", seqs[4])
	})
	if err != nil {
		t.Fatal(err)
	}
	st = stateOf(t, s)
	if st.counts != (readmodel.OutboxCounts{Pending: 3, Parked: 1}) || !slices.Equal(st.parked, seqs[:1]) {
		t.Errorf("after park, backoff, delete: %+v", st)
	}
	for _, h := range st.heads {
		switch {
		case h.Channel == "C1" && h.Seq != seqs[2], h.Channel == "C2" && (h.Seq != seqs[1] || !h.DueAt.Equal(next)):
			t.Errorf("head %+v", h)
		case !h.Enqueued.Equal(outboxT0.Add(time.Duration(h.Seq) * time.Second)):
			t.Errorf("head %+v: enqueued not kept", h)
		}
	}
}

func equalPending(a, b map[string][]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// Past maxRows the oldest rows go, parked or not, and are counted as dropped.
func TestTrimOutboxDropsTheOldest(t *testing.T) {
	s := openTemp(t)
	seqs := putRows(t, s, "C1", "C2", "C1", "C2", "C1")
	var drop readmodel.OutboxDrop
	err := s.Update(func(tx readmodel.Tx) error {
		r, _, _ := tx.OutboxRow("app", seqs[1])
		r.Parked = true
		if err := tx.PutOutbox(r); err != nil {
			return err
		}
		var err error
		drop, err = tx.TrimOutbox("app", 2)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if drop != (readmodel.OutboxDrop{N: 3, First: seqs[0], Last: seqs[2]}) {
		t.Errorf("dropped %+v", drop)
	}
	st := stateOf(t, s)
	if st.counts != (readmodel.OutboxCounts{Pending: 2, Dropped: 3, LastDropped: seqs[2]}) || len(st.parked) != 0 {
		t.Errorf("after the trim: %+v", st)
	}
}

// A store whose outbox was written before its index and counts gets them on open,
// from its rows.
func TestOutboxIndexIsBuiltForAStoreMadeBeforeIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slackpoll.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	seqs := putRows(t, s, "C1", "C2", "C1")
	err = s.Update(func(tx readmodel.Tx) error {
		r, _, _ := tx.OutboxRow("app", seqs[1])
		r.Parked = true
		return tx.PutOutbox(r)
	})
	if err == nil {
		err = s.DB().Update(func(btx *bolt.Tx) error { // the layout before the index
			app := btx.Bucket(bOutbox).Bucket([]byte("app"))
			return errorsJoin(app.DeleteBucket(bOutboxChans), app.DeleteBucket(bOutboxParked), app.Delete(kOutboxCounts))
		})
	}
	if cerr := s.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	s, err = Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st := stateOf(t, s)
	if st.counts != (readmodel.OutboxCounts{Pending: 2, Parked: 1}) || !slices.Equal(st.parked, seqs[1:2]) ||
		!equalPending(st.pending, map[string][]uint64{"C1": {seqs[0], seqs[2]}}) {
		t.Errorf("after reopening: %+v", st)
	}
}
