package boltstore

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

func randomChange(rng *rand.Rand) readmodel.Change {
	str := func() string {
		return []string{"", "C0AAAAAAA", "1718906000.000100", "U0BBBBBBB", "eyes", "some text, with é and \x00", "rec-1"}[rng.IntN(7)]
	}
	kinds := append(changeKinds[1:], "a_future_kind")
	c := readmodel.Change{
		Version: rng.IntN(3), Seq: rng.Uint64N(1000) + 1, Kind: kinds[rng.IntN(len(kinds))],
		Channel: str(), TS: readmodel.TS(str()), ThreadTS: readmodel.TS(str()), Record: str(), ThreadRecord: str(),
		Own: rng.IntN(2) == 0, Reaction: str(), User: str(),
		ObservedAt: time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).UTC(),
	}
	switch rng.IntN(3) {
	case 0:
		c.ID = readmodel.NewEventID()
	case 1:
		c.ID = "ABCDEF0123456789abcdef0123456789" // upper case: kept as a string
	default:
		c.ID = str()
	}
	value := func() *readmodel.ChangeValue {
		if rng.IntN(3) == 0 {
			return nil
		}
		v := &readmodel.ChangeValue{User: str(), BotID: str(), Subtype: str(), Status: str(), Label: str(),
			ReactionsOmitted: rng.IntN(2) == 0, UsersOmitted: rng.IntN(2) == 0, Deleted: rng.IntN(2) == 0}
		if rng.IntN(2) == 0 {
			s := str()
			v.Text = &s
		}
		if rng.IntN(2) == 0 {
			v.Edited = &readmodel.Edited{User: str(), TS: readmodel.TS(str())}
		}
		for range rng.IntN(3) {
			r := readmodel.Reaction{Name: str(), Count: rng.IntN(20) - 2}
			for range rng.IntN(3) {
				r.Users = append(r.Users, str())
			}
			v.Reactions = append(v.Reactions, r)
		}
		if rng.IntN(2) == 0 {
			n := rng.IntN(100) - 1
			v.Count = &n
		}
		for range rng.IntN(3) {
			v.Users = append(v.Users, str())
		}
		return v
	}
	c.Before, c.After = value(), value()
	return c
}

// The binary change row reads back as the JSON row did: every field, with the seq from
// its key; truncated it is an error, never a panic.
func TestChangeCodecReadsBackAsJSONDid(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 5))
	for i := range 5000 {
		c := randomChange(rng)
		data, err := json.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		want, err := decodeChange(append([]byte{formatJSON1}, data...))
		if err != nil {
			t.Fatal(err)
		}
		v := appendChange(nil, &c)
		got, err := decodeChange(v)
		if err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
		got.Seq = want.Seq // the seq is the key's
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("change %d: binary != JSON (-json +binary):\n%s", i, d)
		}
		if len(v) >= len(data) {
			t.Errorf("change %d: binary %d bytes, JSON %d", i, len(v), len(data))
		}
		for j := range len(v) {
			if _, err := decodeChange(v[:j]); err == nil {
				t.Fatalf("change %d: a prefix of %d/%d bytes decoded", i, j, len(v))
			}
		}
	}
}

// A feed of the previous release (JSON rows) reads on, and new rows follow it in seq
// order in the new encoding.
func TestFeedOfThePreviousReleaseReadsOn(t *testing.T) {
	s := openTemp(t)
	rng := rand.New(rand.NewPCG(23, 6))
	var want []readmodel.Change
	err := s.DB().Update(func(btx *bolt.Tx) error {
		b := btx.Bucket(bChanges)
		for range 3 {
			seq, _ := b.NextSequence()
			c := randomChange(rng)
			c.Seq = seq
			if err := putJSONIn(b, bChanges, seqKey(seq), &c); err != nil { // what the previous release wrote
				return err
			}
			data, _ := json.Marshal(&c)
			var back readmodel.Change
			if err := json.Unmarshal(data, &back); err != nil {
				return err
			}
			want = append(want, back)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx readmodel.Tx) error {
		c := readmodel.Change{Version: 1, ID: readmodel.NewEventID(), Kind: readmodel.ChangeMessagePosted, Channel: "C1",
			ObservedAt: time.Unix(1764496800, 0).UTC(), After: &readmodel.ChangeValue{User: "U1"}}
		if err := tx.AppendChange(&c); err != nil {
			return err
		}
		want = append(want, c)
		return nil
	})
	var got []readmodel.Change
	view(t, s, func(tx readmodel.Tx) error {
		return tx.Changes(0, func(c readmodel.Change) error { got = append(got, c); return nil })
	})
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("feed (-want +got):\n%s", d)
	}
	if len(got) == 4 && got[3].Seq != 4 {
		t.Errorf("new change seq %d, want 4", got[3].Seq)
	}
}
