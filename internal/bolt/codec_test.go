package boltstore

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

func TestDecodeMessageRejectsEveryTruncation(t *testing.T) {
	m := fullMessage()
	v := appendMessage(nil, &m)
	if got, err := decodeMessage(m.Channel, v); err != nil || cmp.Diff(m, got) != "" {
		t.Fatalf("full value: err=%v diff=%s", err, cmp.Diff(m, got))
	}
	if bound := messageSizeBound(&m); len(v) > bound {
		t.Errorf("encoded %d bytes, size bound says at most %d", len(v), bound)
	}
	for i := 0; i < len(v); i++ {
		if _, err := decodeMessage(m.Channel, v[:i]); err == nil {
			t.Errorf("prefix of %d/%d bytes decoded without error", i, len(v))
		}
	}
	if _, err := decodeMessage(m.Channel, append(v[:len(v):len(v)], 0)); err == nil {
		t.Error("trailing byte decoded without error")
	}
	if _, err := decodeMessage(m.Channel, append([]byte{99}, v[1:]...)); err == nil || !strings.Contains(err.Error(), "format") {
		t.Errorf("unknown format: err = %v", err)
	}
}

func TestDecodeMessageNeverPanicsOnGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := fullMessage()
	good := appendMessage(nil, &m)
	for i := 0; i < 20000; i++ {
		v := append([]byte(nil), good...)
		for j := rng.IntN(4); j >= 0; j-- {
			v[rng.IntN(len(v))] = byte(rng.Uint32())
		}
		_, _ = decodeMessage("C1", v) // must not panic
		_, _ = readHeader(v)
	}
}

func TestCorruptValueIsAnErrorNamingTheKey(t *testing.T) {
	s := openTemp(t)
	putAll(t, s, msg("1718906000.000100"))
	err := s.DB().Update(func(btx *bolt.Tx) error {
		k := readmodel.TS("1718906000.000100").Key()
		return btx.Bucket(bChan).Bucket([]byte("C1")).Bucket(bMsgs).Put(k[:], []byte{formatMessage, flagTimeline | flagTracked, 200})
	})
	if err != nil {
		t.Fatal(err)
	}
	view(t, s, func(tx readmodel.Tx) error {
		_, _, err := tx.Message("C1", "1718906000.000100")
		if err == nil || !strings.Contains(err.Error(), "C1/1718906000.000100") {
			t.Errorf("Message err = %v, want one naming C1/1718906000.000100", err)
		}
		err = tx.Timeline("C1", "", "", func(readmodel.Message) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "C1/1718906000.000100") {
			t.Errorf("Timeline err = %v, want one naming the key", err)
		}
		return nil
	})
	err = s.Update(func(tx readmodel.Tx) error { return tx.PutMessage(msg("1718906000.000100")) })
	if err == nil {
		t.Error("PutMessage over a corrupt record succeeded: its old index entries are unknown")
	}
}

func TestCorruptJSONValueIsAnError(t *testing.T) {
	s := openTemp(t)
	err := s.DB().Update(func(btx *bolt.Tx) error {
		return btx.Bucket(bUsers).Put([]byte("U1"), []byte{formatJSON1, '{'})
	})
	if err != nil {
		t.Fatal(err)
	}
	view(t, s, func(tx readmodel.Tx) error {
		if _, _, err := tx.User("U1"); err == nil || !strings.Contains(err.Error(), `users/"U1"`) {
			t.Errorf("User err = %v, want one naming users/\"U1\"", err)
		}
		if err := tx.Users(func(readmodel.User) error { return nil }); err == nil {
			t.Error("Users over a corrupt value succeeded")
		}
		return nil
	})
}
