package readmodel_test

import (
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

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
