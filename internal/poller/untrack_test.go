package poller_test

import (
	"errors"
	"testing"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

func watched(t *testing.T, s rm.Store) []rm.Ref {
	t.Helper()
	var out []rm.Ref
	if err := s.View(func(tx rm.Tx) error {
		return tx.Watched(func(r rm.Ref) error { out = append(out, r); return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// Untrack takes a message out of the watched set and frees its record key; a
// placeholder never read goes with it, a message that was read stays.
func TestUntrackRemovesTheEntryAndItsRecord(t *testing.T) {
	src, p, store, _, parent := polledThread(t, 0)
	_ = src
	_ = p
	never := ts(5, 0)
	if err := rm.Track(store, ch, parent, "ticket-1"); err != nil {
		t.Fatal(err)
	}
	if err := rm.Track(store, ch, never, "ticket-2"); err != nil {
		t.Fatal(err)
	}
	if err := rm.Untrack(store, ch, parent); err != nil {
		t.Fatal(err)
	}
	if err := rm.Untrack(store, ch, never); err != nil {
		t.Fatal(err)
	}
	if w := watched(t, store); len(w) != 0 {
		t.Errorf("watched = %v, want none", w)
	}
	if m := getMsg(t, store, ch, parent); m.Record != "" || m.Text != "parent" {
		t.Errorf("parent = %+v, want its content kept and no record", m)
	}
	err := store.View(func(tx rm.Tx) error {
		for _, key := range []string{"ticket-1", "ticket-2"} {
			if _, ok, err := tx.Record(key); ok || err != nil {
				t.Errorf("record %s still attached (%v)", key, err)
			}
		}
		if _, ok, err := tx.Message(ch, never); ok || err != nil {
			t.Errorf("the never-read placeholder stayed (%v)", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The record key is free again.
	if err := rm.Track(store, ch, ts(6, 0), "ticket-1"); err != nil {
		t.Errorf("re-using the freed record key: %v", err)
	}
	if err := rm.Untrack(store, ch, ts(7, 0)); !errors.Is(err, rm.ErrNotTracked) {
		t.Errorf("untrack of a message not tracked: %v, want ErrNotTracked", err)
	}
}

// The watched set is capped: past MaxWatched, Track refuses new entries (already
// watched ones are fine) until some are untracked.
func TestTrackIsCapped(t *testing.T) {
	store := openStore(t)
	// Filled in one transaction: MaxWatched tracks would take a while.
	if err := store.Update(func(tx rm.Tx) error {
		for i := range rm.MaxWatched {
			if err := tx.PutWatched(rm.Ref{Channel: ch, TS: ts(100000+i, 0)}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	err := rm.Track(store, ch, ts(1, 0), "")
	if !errors.Is(err, rm.ErrTooManyTracked) {
		t.Fatalf("track past the cap: %v, want ErrTooManyTracked", err)
	}
	if err := rm.Track(store, ch, ts(100000, 0), "again"); err != nil {
		t.Errorf("tracking an already tracked message again: %v", err)
	}
	if err := rm.Untrack(store, ch, ts(100001, 0)); err != nil {
		t.Fatal(err)
	}
	if err := rm.Track(store, ch, ts(1, 0), ""); err != nil {
		t.Errorf("track after an untrack: %v", err)
	}
}
