package poller_test

import (
	"fmt"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// A stored message that no longer decodes (a flipped bit on disk) does not stop the
// poller: the tick skips it, reads it again from Slack and replaces it.
func TestUndecodableStoredMessageDoesNotStopTheTick(t *testing.T) {
	src := newStub()
	src.addChannel(ch)
	m := msg(ch, ts(600, 0), "U1", "hello")
	src.post(m)
	p, store, clock := newPoller(t, src, ch)
	mustTick(t, p)
	k := m.TS.Key()
	err := store.DB().Update(func(btx *bbolt.Tx) error {
		return btx.Bucket([]byte("chan")).Bucket([]byte(ch)).Bucket([]byte("m")).Put(k[:], []byte{2, 0xff, 0xff})
	})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	mustTick(t, p)
	if got := getMsg(t, store, ch, m.TS); got.Text != "hello" {
		t.Errorf("message = %+v, want it read again", got)
	}
	if err := store.View(func(tx rm.Tx) error {
		if u := tx.Undecodable(); len(u) != 0 {
			t.Errorf("undecodable after the tick = %q, want none", u)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A stored message that no longer decodes at a tile's edge is read again too: tiles
// number it (it is in Slack's timeline) but leave it out of the tile, and a range
// from the tile's first decodable message to its last did not cover it, so no range
// ever read it again and it stayed undecodable for good.
func TestUndecodableStoredMessageAtATileEdgeIsReadAgain(t *testing.T) {
	for _, edge := range []int{15, 29} { // the first and the last of the middle tile
		src, store, clock, tss := tiledStore(t)
		p := poller.New(store, src, poller.Config{Conversations: []string{ch}, Now: clock.Now,
			Budget: poller.Budget{HistoryCalls: 1, RepliesCalls: 1, UsersInfoCalls: 10}})
		mustTick(t, p) // learns the page cap
		clock.Advance(time.Minute)
		k := tss[edge].Key()
		err := store.(*boltstore.Store).DB().Update(func(btx *bbolt.Tx) error {
			return btx.Bucket([]byte("chan")).Bucket([]byte(ch)).Bucket([]byte("m")).Put(k[:], []byte{2, 0xff, 0xff})
		})
		if err != nil {
			t.Fatal(err)
		}
		for range 12 { // four rotations of the three tiles at one call a tick
			mustTick(t, p)
			clock.Advance(time.Minute)
		}
		var got rm.Message
		if err := store.View(func(tx rm.Tx) error {
			var err error
			got, _, err = tx.Message(ch, tss[edge])
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if got.Text != fmt.Sprint("m", edge) {
			t.Errorf("message %d = %+v after 12 one-call ticks, want it read again", edge, got)
		}
	}
}
