package boltstore

import (
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// spoil overwrites the stored value of (C1, ts) with bytes no decoder accepts.
func spoil(t *testing.T, s *Store, ts readmodel.TS) {
	t.Helper()
	k := ts.Key()
	err := s.DB().Update(func(btx *bolt.Tx) error {
		return btx.Bucket(bChan).Bucket([]byte("C1")).Bucket(bMsgs).Put(k[:], []byte{formatMessage, 0, 0xff, 0xff, 0xff})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// One undecodable stored message is skipped by every read, reported by Undecodable,
// and healed by the next write of it.
func TestUndecodableMessageIsSkippedReportedAndHealed(t *testing.T) {
	s := openTemp(t)
	putAll(t, s, msg("1700000001.000000"), msg("1700000002.000000"), msg("1700000003.000000"))
	bad := readmodel.TS("1700000002.000000")
	spoil(t, s, bad)

	view(t, s, func(tx readmodel.Tx) error {
		var got []readmodel.TS
		if err := tx.Timeline("C1", "", "", func(m readmodel.Message) error {
			got = append(got, m.TS)
			return nil
		}); err != nil {
			t.Fatalf("Timeline: %v, want the other messages", err)
		}
		if want := []readmodel.TS{"1700000001.000000", "1700000003.000000"}; !slices.Equal(got, want) {
			t.Errorf("timeline %v, want %v", got, want)
		}
		before, err := tx.TimelineBefore("C1", "1800000000.000000", 10)
		if err != nil || len(before) != 2 {
			t.Errorf("TimelineBefore = %d messages, %v; want 2", len(before), err)
		}
		if _, ok, err := tx.Message("C1", bad); ok || err != nil {
			t.Errorf("Message(bad) = ok %v, err %v; want absent", ok, err)
		}
		u := tx.Undecodable()
		if len(u) != 1 || !strings.Contains(u[0], "C1/"+string(bad)) {
			t.Errorf("Undecodable = %q, want the one message", u)
		}
		return nil
	})
	putAll(t, s, msg(string(bad)))
	view(t, s, func(tx readmodel.Tx) error {
		if n, err := tx.Counts("C1"); err != nil || n.Messages != 3 || n.Tracked != 3 {
			t.Errorf("counts after the rewrite = %+v, %v; want 3 messages, 3 tracked (the old tail entry forgotten)", n, err)
		}
		tail, err := tx.TailOldest(10, nil)
		if err != nil || len(tail) != 3 {
			t.Errorf("tail = %+v, %v; want 3 entries", tail, err)
		}
		if m, ok, err := tx.Message("C1", bad); !ok || err != nil || m.Text != "m "+string(bad) {
			t.Errorf("after rewrite: %+v %v %v", m, ok, err)
		}
		if u := tx.Undecodable(); len(u) != 0 {
			t.Errorf("Undecodable after the rewrite = %q, want none", u)
		}
		return nil
	})
}

func TestUndecodableUserIsSkipped(t *testing.T) {
	s := openTemp(t)
	update(t, s, func(tx readmodel.Tx) error {
		for _, id := range []string{"U1", "U2", "U3"} {
			if err := tx.PutUser(readmodel.User{ID: id, RealName: id}); err != nil {
				return err
			}
		}
		return nil
	})
	if err := s.DB().Update(func(btx *bolt.Tx) error { return btx.Bucket(bUsers).Put([]byte("U2"), []byte{formatJSON1, '{'}) }); err != nil {
		t.Fatal(err)
	}
	view(t, s, func(tx readmodel.Tx) error {
		var got []string
		if err := tx.Users(func(u readmodel.User) error { got = append(got, u.ID); return nil }); err != nil {
			t.Fatalf("Users: %v", err)
		}
		if !slices.Equal(got, []string{"U1", "U3"}) {
			t.Errorf("users %v, want U1 U3", got)
		}
		if u := tx.Undecodable(); len(u) != 1 || !strings.Contains(u[0], "users/") {
			t.Errorf("Undecodable = %q", u)
		}
		return nil
	})
}

// An undecodable reply rewritten as a reply of another thread leaves its old thread.
func TestUndecodableReplyRewrittenLeavesItsOldThread(t *testing.T) {
	s := openTemp(t)
	p1, p2 := msg("1700000001.000000"), msg("1700000002.000000")
	r := msg("1700000003.000000")
	r.ThreadTS = p1.TS
	putAll(t, s, p1, p2, r)
	spoil(t, s, r.TS)
	r.ThreadTS = p2.TS
	putAll(t, s, r)
	view(t, s, func(tx readmodel.Tx) error {
		if rs, err := tx.Replies("C1", p1.TS); err != nil || len(rs) != 0 {
			t.Errorf("old thread replies = %+v, %v; want none", rs, err)
		}
		if rs, err := tx.Replies("C1", p2.TS); err != nil || len(rs) != 1 {
			t.Errorf("new thread replies = %+v, %v; want the reply", rs, err)
		}
		if n, err := tx.Counts("C1"); err != nil || n.Threads != 1 || n.Messages != 3 {
			t.Errorf("counts = %+v, %v; want 1 thread, 3 messages", n, err)
		}
		return nil
	})
}

// Concurrent readers meet and report an undecodable record while a writer heals it:
// the set of bad records is shared by every transaction (run under -race in CI).
func TestUndecodableRecordsUnderConcurrentReadsAndAHeal(t *testing.T) {
	s := openTemp(t)
	putAll(t, s, msg("1700000001.000000"), msg("1700000002.000000"))
	spoil(t, s, "1700000002.000000")
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if err := s.View(func(tx readmodel.Tx) error {
					_ = tx.Undecodable()
					return tx.Timeline("C1", "", "", func(readmodel.Message) error { return nil })
				}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	putAll(t, s, msg("1700000002.000000"))
	close(done)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	view(t, s, func(tx readmodel.Tx) error {
		if u := tx.Undecodable(); len(u) != 0 {
			t.Errorf("Undecodable after the heal = %q", u)
		}
		return nil
	})
}

// An undecodable record-key value reads as absent and is reported; tracking the key
// again replaces it.
func TestUndecodableRecordKeyIsSkippedAndReported(t *testing.T) {
	s := openTemp(t)
	update(t, s, func(tx readmodel.Tx) error {
		return tx.PutRecord("ticket-1", readmodel.Ref{Channel: "C1", TS: "1700000001.000000"})
	})
	if err := s.DB().Update(func(btx *bolt.Tx) error { return btx.Bucket(bRecords).Put([]byte("ticket-1"), []byte{9, 9}) }); err != nil {
		t.Fatal(err)
	}
	view(t, s, func(tx readmodel.Tx) error {
		if _, ok, err := tx.Record("ticket-1"); ok || err != nil {
			t.Errorf("Record = ok %v, err %v; want absent", ok, err)
		}
		if u := tx.Undecodable(); len(u) != 1 || !strings.Contains(u[0], "records/ticket-1") {
			t.Errorf("Undecodable = %q", u)
		}
		return nil
	})
	update(t, s, func(tx readmodel.Tx) error {
		return tx.PutRecord("ticket-1", readmodel.Ref{Channel: "C1", TS: "1700000001.000000"})
	})
	view(t, s, func(tx readmodel.Tx) error {
		if u := tx.Undecodable(); len(u) != 0 {
			t.Errorf("Undecodable after the rewrite = %q", u)
		}
		return nil
	})
}
