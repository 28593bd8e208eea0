package boltstore

import (
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// One undecodable change or outbox row (a flipped bit) is skipped and reported, like
// a message: it must not fail every read of the feed after it (a consumer stuck at
// its seq), the status report, or every claim of its webhook.
func TestUndecodableChangeAndOutboxRowAreSkippedAndReported(t *testing.T) {
	s := openTemp(t)
	err := s.Update(func(tx readmodel.Tx) error {
		for range 3 {
			c := readmodel.Change{ID: readmodel.NewEventID(), Kind: readmodel.ChangeMessageEdited, Channel: "C1"}
			if err := tx.AppendChange(&c); err != nil {
				return err
			}
			if err := tx.PutOutbox(readmodel.OutboxRow{Webhook: "app", Seq: c.Seq, Change: c}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.DB().Update(func(btx *bolt.Tx) error {
		garbage := []byte{formatJSON1, '{', 0xff}
		if err := btx.Bucket(bChanges).Put(seqKey(2), garbage); err != nil {
			return err
		}
		return btx.Bucket(bOutbox).Bucket([]byte("app")).Put(seqKey(2), garbage)
	})
	if err != nil {
		t.Fatal(err)
	}
	view(t, s, func(tx readmodel.Tx) error {
		var changes, rows []uint64
		if err := tx.Changes(0, func(c readmodel.Change) error { changes = append(changes, c.Seq); return nil }); err != nil {
			t.Errorf("Changes: %v, want the others", err)
		}
		if err := tx.Outbox("", func(r readmodel.OutboxRow) error { rows = append(rows, r.Seq); return nil }); err != nil {
			t.Errorf("Outbox: %v, want the others", err)
		}
		if want := []uint64{1, 3}; !slices.Equal(changes, want) || !slices.Equal(rows, want) {
			t.Errorf("changes %v, outbox rows %v; want %v", changes, rows, want)
		}
		u := strings.Join(tx.Undecodable(), "\n")
		if !strings.Contains(u, "change 2") || !strings.Contains(u, "outbox app/2") {
			t.Errorf("Undecodable = %q, want the change and the outbox row", u)
		}
		return nil
	})
}

// A change is written without its workspace (a store is one workspace's), and every
// read of it, from the feed or from an outbox row, says the store's team_id: one
// webhook receives the changes of every workspace of a daemon.
func TestChangesAndOutboxRowsCarryTheStoresTeam(t *testing.T) {
	s := openTemp(t)
	c := readmodel.Change{Version: readmodel.ChangeVersion, ID: readmodel.NewEventID(), Kind: readmodel.ChangeMessagePosted,
		Channel: "C0GENERAL", TS: "1700000000.000100", ObservedAt: time.Now()}
	err := s.Update(func(tx readmodel.Tx) error {
		if err := tx.PutIdentity(readmodel.Identity{TeamID: "T0TEAMA", UserID: "U0BOT"}); err != nil {
			return err
		}
		if err := tx.AppendChange(&c); err != nil {
			return err
		}
		return tx.PutOutbox(readmodel.OutboxRow{Webhook: "app", Seq: c.Seq, Change: c, Enqueued: time.Now()})
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.View(func(tx readmodel.Tx) error {
		var n int
		if err := tx.Changes(0, func(got readmodel.Change) error {
			n++
			if got.TeamID != "T0TEAMA" {
				t.Errorf("feed change team_id = %q, want T0TEAMA", got.TeamID)
			}
			return nil
		}); err != nil {
			return err
		}
		r, ok, err := tx.OutboxRow("app", c.Seq)
		if err != nil || !ok || r.Change.TeamID != "T0TEAMA" {
			t.Errorf("outbox row = %+v, %v, %v; want its change's team_id T0TEAMA", r.Change, ok, err)
		}
		return tx.Outbox("app", func(r readmodel.OutboxRow) error {
			if r.Change.TeamID != "T0TEAMA" {
				t.Errorf("outbox rows' change team_id = %q, want T0TEAMA", r.Change.TeamID)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}
