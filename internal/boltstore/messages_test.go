package boltstore

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// fullMessage sets every field of Message to a non-zero value.
func fullMessage() readmodel.Message {
	polled := time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.UTC)
	synced := polled.Add(-time.Hour)
	missing := time.Date(2026, 11, 29, 9, 30, 0, 1, time.UTC)
	return readmodel.Message{
		Channel:  "C0AAAAAAA",
		TS:       "1718906000.000100",
		ThreadTS: "1718906000.000100",
		User:     "U0AAAAAAA",
		BotID:    "B0AAAAAAA",
		BotName:  "deploy-bot",
		Subtype:  "bot_message",
		Text:     "Deploy finished ✅ <@U0BBBBBBB>\n\x00binary-safe",
		Edited:   &readmodel.Edited{User: "U0AAAAAAA", TS: "1718906100.000000"},
		Reactions: []readmodel.Reaction{
			{Name: "white_check_mark", Count: 2, Users: []string{"U0AAAAAAA", "U0BBBBBBB"}},
			{Name: "thumbsup::skin-tone-2", Count: 40, Users: []string{"U0CCCCCCC"}},
		},
		ReplyCount:     3,
		LatestReply:    "1718906900.000200",
		ReplyWatermark: "1718906800.000300",
		OwnPost:        true,
		Deleted:        true,
		MissingSince:   &missing,
		Record:         "ticket-42",
		LastPolledAt:   &polled,
		ThreadSyncedAt: &synced,
		ThreadGone:     true,
	}
}

func TestMessageRoundTripEveryField(t *testing.T) {
	s := openTemp(t)
	want := fullMessage()
	putAll(t, s, want)
	view(t, s, func(tx readmodel.Tx) error {
		got, ok, err := tx.Message(want.Channel, want.TS)
		if err != nil || !ok {
			t.Fatalf("Message: ok=%v err=%v", ok, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
		return nil
	})
	// The zero message (only the key fields) also round-trips, nils staying nil.
	min := readmodel.Message{Channel: "C1", TS: "1.000001"}
	putAll(t, s, min)
	view(t, s, func(tx readmodel.Tx) error {
		got, _, err := tx.Message("C1", "1.000001")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(min, got); diff != "" {
			t.Errorf("zero round trip (-want +got):\n%s", diff)
		}
		return nil
	})
}

func TestTSStaysByteIdentical(t *testing.T) {
	s := openTemp(t)
	// Through a float64 "1718906000.000100" becomes 1718906000.0001 (or worse).
	putAll(t, s, msg("1718906000.000100"))
	view(t, s, func(tx readmodel.Tx) error {
		var got []readmodel.TS
		err := tx.Timeline("C1", "", "", func(m readmodel.Message) error {
			got = append(got, m.TS)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || string(got[0]) != "1718906000.000100" {
			t.Errorf("Timeline ts = %q, want exactly \"1718906000.000100\"", got)
		}
		tail, err := tx.TailOldest(1, nil)
		if err != nil || len(tail) != 1 || string(tail[0].TS) != "1718906000.000100" {
			t.Errorf("TailOldest = %+v, %v; want ts exactly \"1718906000.000100\"", tail, err)
		}
		return nil
	})
}

func TestNineDigitSecondsSortBeforeTen(t *testing.T) {
	s := openTemp(t)
	// As strings "999999999.000001" > "1000000000.000000"; as times it is earlier.
	putAll(t, s, msg("1000000000.000000"), msg("999999999.000001"), msg("999999999.000000"))
	view(t, s, func(tx readmodel.Tx) error {
		var got []readmodel.TS
		err := tx.Timeline("C1", "", "", func(m readmodel.Message) error {
			got = append(got, m.TS)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []readmodel.TS{"999999999.000000", "999999999.000001", "1000000000.000000"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("order (-want +got):\n%s", diff)
		}
		return nil
	})
}

func TestPutMessageRejectsInvalidKeys(t *testing.T) {
	s := openTemp(t)
	cases := map[string]readmodel.Message{
		"bad ts":        {Channel: "C1", TS: "12.3.4"},
		"empty ts":      {Channel: "C1"},
		"bad thread_ts": {Channel: "C1", TS: "1.000001", ThreadTS: "x"},
		"empty channel": {TS: "1.000001"},
		"NUL channel":   {Channel: "C\x001", TS: "1.000001"},
		"same instant":  {Channel: "C1", TS: "5.5", ThreadTS: "5.500000"},
	}
	for name, m := range cases {
		err := s.Update(func(tx readmodel.Tx) error { return tx.PutMessage(m) })
		if err == nil {
			t.Errorf("%s: PutMessage(%+v) succeeded", name, m)
		}
	}
}

func TestTimelineRangeAndMembership(t *testing.T) {
	s := openTemp(t)
	broadcast := reply("1718906003.000000", "1718906001.000000")
	broadcast.Subtype = readmodel.SubtypeThreadBroadcast
	parent := msg("1718906001.000000")
	parent.ThreadTS = parent.TS
	putAll(t, s,
		msg("1718906000.000000"),
		parent,
		reply("1718906002.000000", "1718906001.000000"), // plain reply: not in the timeline
		broadcast,
		msg("1718906004.000000"),
		readmodel.Message{Channel: "C2", TS: "1718906002.500000"}, // another channel
	)
	timeline := func(oldest, latest readmodel.TS) []readmodel.TS {
		var got []readmodel.TS
		view(t, s, func(tx readmodel.Tx) error {
			return tx.Timeline("C1", oldest, latest, func(m readmodel.Message) error {
				got = append(got, m.TS)
				return nil
			})
		})
		return got
	}
	cases := []struct {
		oldest, latest readmodel.TS
		want           []readmodel.TS
	}{
		{"", "", []readmodel.TS{"1718906000.000000", "1718906001.000000", "1718906003.000000", "1718906004.000000"}},
		{"1718906001.000000", "1718906003.000000", []readmodel.TS{"1718906001.000000", "1718906003.000000"}}, // inclusive
		{"1718906000.500000", "", []readmodel.TS{"1718906001.000000", "1718906003.000000", "1718906004.000000"}},
		{"", "1718906002.999999", []readmodel.TS{"1718906000.000000", "1718906001.000000"}},
		{"1718906004.000001", "", nil},
	}
	for _, c := range cases {
		if diff := cmp.Diff(c.want, timeline(c.oldest, c.latest)); diff != "" {
			t.Errorf("Timeline(%q, %q) (-want +got):\n%s", c.oldest, c.latest, diff)
		}
	}
	// ErrStopIteration ends the walk without an error.
	n := 0
	view(t, s, func(tx readmodel.Tx) error {
		err := tx.Timeline("C1", "", "", func(readmodel.Message) error {
			n++
			return readmodel.ErrStopIteration
		})
		if err != nil || n != 1 {
			t.Errorf("stop: err=%v after %d messages, want nil after 1", err, n)
		}
		// Other errors come back as they are.
		boom := errors.New("boom")
		if err := tx.Timeline("C1", "", "", func(readmodel.Message) error { return boom }); !errors.Is(err, boom) {
			t.Errorf("callback error: got %v", err)
		}
		// A channel never written is empty, not an error.
		return tx.Timeline("C9", "", "", func(readmodel.Message) error { t.Error("C9 has messages"); return nil })
	})
}

func TestRepliesAscendingWithoutParent(t *testing.T) {
	s := openTemp(t)
	p := "1718906001.000000"
	parent := msg(p)
	parent.ThreadTS = readmodel.TS(p)
	broadcast := reply("1718906005.000000", p)
	broadcast.Subtype = readmodel.SubtypeThreadBroadcast
	putAll(t, s,
		reply("1718906009.000000", p), broadcast, parent, reply("1718906002.000000", p),
		reply("1718906003.000000", "1718906000.000000"), // another thread
		msg("1718906004.000000"),
	)
	view(t, s, func(tx readmodel.Tx) error {
		got, err := tx.Replies("C1", readmodel.TS(p))
		if err != nil {
			t.Fatal(err)
		}
		want := []readmodel.TS{"1718906002.000000", "1718906005.000000", "1718906009.000000"}
		if diff := cmp.Diff(want, tsList(got)); diff != "" {
			t.Errorf("Replies (-want +got):\n%s", diff)
		}
		if got[1].Subtype != readmodel.SubtypeThreadBroadcast {
			t.Errorf("broadcast came back as %+v", got[1])
		}
		none, err := tx.Replies("C1", "1718906004.000000")
		if err != nil || len(none) != 0 {
			t.Errorf("Replies of a message without a thread = %v, %v", none, err)
		}
		return nil
	})
}

func TestReplyMovingThreadsMovesIndexEntry(t *testing.T) {
	s := openTemp(t)
	putAll(t, s, reply("1718906003.000000", "1718906001.000000"))
	putAll(t, s, reply("1718906003.000000", "1718906002.000000"))
	view(t, s, func(tx readmodel.Tx) error {
		a, _ := tx.Replies("C1", "1718906001.000000")
		b, _ := tx.Replies("C1", "1718906002.000000")
		if len(a) != 0 || len(b) != 1 {
			t.Errorf("after moving: old thread %v, new thread %v", tsList(a), tsList(b))
		}
		return nil
	})
	if n := bucketLen(t, s, "chan", "C1", "t"); n != 1 {
		t.Errorf("thread index has %d entries, want 1", n)
	}
}

func TestDeleteMessageCleansIndexes(t *testing.T) {
	s := openTemp(t)
	p := "1718906001.000000"
	parent := msg(p)
	parent.ThreadTS = readmodel.TS(p)
	parent.LastPolledAt = at(100)
	putAll(t, s, parent, reply("1718906002.000000", p), reply("1718906003.000000", p), msg("1718906004.000000"))
	if got := tailLen(t, s); got != 2 {
		t.Fatalf("tail entries before delete = %d, want 2", got)
	}
	update(t, s, func(tx readmodel.Tx) error {
		for _, ts := range []readmodel.TS{"1718906002.000000", "1718906003.000000", readmodel.TS(p), "1718906099.000000"} {
			if err := tx.DeleteMessage("C1", ts); err != nil {
				return err
			}
		}
		return tx.DeleteMessage("C9", "1.000000") // missing channel: not an error
	})
	if got := tailLen(t, s); got != 1 {
		t.Errorf("tail entries after delete = %d, want 1", got)
	}
	if got := bucketLen(t, s, "chan", "C1", "t"); got != 0 {
		t.Errorf("thread index entries after delete = %d, want 0", got)
	}
	view(t, s, func(tx readmodel.Tx) error {
		if _, ok, _ := tx.Message("C1", readmodel.TS(p)); ok {
			t.Error("deleted parent still readable")
		}
		tail, _ := tx.TailOldest(10, nil)
		if len(tail) != 1 || tail[0].TS != "1718906004.000000" {
			t.Errorf("TailOldest after delete = %+v", tail)
		}
		c, err := tx.Counts("C1")
		if want := (readmodel.ChannelCounts{Messages: 1, Threads: 0, Tracked: 1}); err != nil || c != want {
			t.Errorf("Counts = %+v, %v, want %+v", c, err, want)
		}
		return nil
	})
}

func TestUpdateRollbackWritesNothing(t *testing.T) {
	s := openTemp(t)
	putAll(t, s, msg("1718906000.000000"))
	boom := errors.New("cut short")
	err := s.Update(func(tx readmodel.Tx) error {
		m := msg("1718906000.000000")
		m.Text = "changed"
		m.LastPolledAt = at(5)
		for _, w := range []func() error{
			func() error { return tx.PutMessage(m) },
			func() error { return tx.PutMessage(reply("1718906001.000000", "1718906000.000000")) },
			func() error { return tx.PutMessage(msg("1718906002.000000")) },
			func() error { return tx.PutUser(readmodel.User{ID: "U1"}) },
			func() error { return tx.PutRecord("ticket-1", readmodel.Ref{Channel: "C1", TS: "1718906000.000000"}) },
		} {
			if err := w(); err != nil {
				return err
			}
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update err = %v, want the callback's error", err)
	}
	view(t, s, func(tx readmodel.Tx) error {
		m, _, _ := tx.Message("C1", "1718906000.000000")
		if m.Text != "m 1718906000.000000" || m.LastPolledAt != nil {
			t.Errorf("rolled-back message changed: %+v", m)
		}
		if _, ok, _ := tx.Message("C1", "1718906002.000000"); ok {
			t.Error("rolled-back message exists")
		}
		if r, _ := tx.Replies("C1", "1718906000.000000"); len(r) != 0 {
			t.Error("rolled-back reply listed")
		}
		if _, ok, _ := tx.User("U1"); ok {
			t.Error("rolled-back user exists")
		}
		if _, ok, _ := tx.Record("ticket-1"); ok {
			t.Error("rolled-back record exists")
		}
		c, _ := tx.Counts("C1")
		if want := (readmodel.ChannelCounts{Messages: 1, Tracked: 1}); c != want {
			t.Errorf("Counts after rollback = %+v, want %+v", c, want)
		}
		return nil
	})
	if got := tailLen(t, s); got != 1 {
		t.Errorf("tail entries after rollback = %d, want 1", got)
	}
}

func TestWritesFailInView(t *testing.T) {
	s := openTemp(t)
	view(t, s, func(tx readmodel.Tx) error {
		if err := tx.PutMessage(msg("1.000000")); err == nil {
			t.Error("PutMessage in View succeeded")
		}
		if err := tx.DeleteMessage("C1", "1.000000"); err == nil {
			t.Error("DeleteMessage in View succeeded")
		}
		if err := tx.PutUser(readmodel.User{ID: "U1"}); err == nil {
			t.Error("PutUser in View succeeded")
		}
		return nil
	})
}

func TestReturnedValuesOutliveTheTransaction(t *testing.T) {
	s := openTemp(t)
	want := fullMessage()
	putAll(t, s, want)
	var got readmodel.Message
	view(t, s, func(tx readmodel.Tx) error {
		var err error
		got, _, err = tx.Message(want.Channel, want.TS)
		return err
	})
	// Overwrite the page the value lived on, with a bigger store, then read the copy.
	for i := 0; i < 20; i++ {
		m := want
		m.Text = string(make([]byte, 4000))
		m.TS = readmodel.TSFromUnix(int64(i))
		putAll(t, s, m)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("value changed after its transaction (-want +got):\n%s", diff)
	}
}

// Tiles are numbered from the channel's oldest timeline message, replies not counted;
// an undecodable message keeps its number and is left out of the messages, not of the
// bounds; a ts that is not a stored timeline message has no tile.
func TestTimelineTile(t *testing.T) {
	s := openTemp(t)
	var ms []readmodel.Message
	for i := range 7 {
		ms = append(ms, msg(fmt.Sprintf("17000000%02d.000000", 10+i)))
	}
	// Replies sort between the timeline messages but are not part of it.
	ms = append(ms, reply("1700000011.500000", "1700000011.000000"), reply("1700000013.500000", "1700000011.000000"))
	putAll(t, s, ms...)
	k := readmodel.TS("1700000014.000000").Key()
	if err := s.DB().Update(func(btx *bolt.Tx) error { // a format no decoder knows
		return btx.Bucket(bChan).Bucket([]byte("C1")).Bucket(bMsgs).Put(k[:], []byte{0x7f, 0xff})
	}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		ts             readmodel.TS
		size           int
		want           []readmodel.TS
		oldest, latest readmodel.TS
	}{
		{"1700000010.000000", 3, []readmodel.TS{"1700000010.000000", "1700000011.000000", "1700000012.000000"}, "1700000010.000000", "1700000012.000000"},
		{"1700000012.000000", 3, []readmodel.TS{"1700000010.000000", "1700000011.000000", "1700000012.000000"}, "1700000010.000000", "1700000012.000000"},
		// The second tile holds 13, 14 (undecodable, left out) and 15.
		{"1700000013.000000", 3, []readmodel.TS{"1700000013.000000", "1700000015.000000"}, "1700000013.000000", "1700000015.000000"},
		{"1700000016.000000", 3, []readmodel.TS{"1700000016.000000"}, "1700000016.000000", "1700000016.000000"},
		// 14, undecodable, is the first of this tile: its bound still.
		{"1700000016.000000", 4, []readmodel.TS{"1700000015.000000", "1700000016.000000"}, "1700000014.000000", "1700000016.000000"},
		{"1700000012.000000", 2, []readmodel.TS{"1700000012.000000", "1700000013.000000"}, "1700000012.000000", "1700000013.000000"},
		// 14, undecodable, is the last of this one.
		{"1700000013.000000", 5, []readmodel.TS{"1700000010.000000", "1700000011.000000", "1700000012.000000", "1700000013.000000"}, "1700000010.000000", "1700000014.000000"},
		{"1700000016.000000", 999, []readmodel.TS{"1700000010.000000", "1700000011.000000", "1700000012.000000", "1700000013.000000", "1700000015.000000", "1700000016.000000"}, "1700000010.000000", "1700000016.000000"},
		{"1700000011.500000", 3, nil, "", ""}, // a reply
		{"1700000012.500000", 3, nil, "", ""}, // not stored
		{"1700000099.000000", 3, nil, "", ""}, // past the newest
	}
	view(t, s, func(tx readmodel.Tx) error {
		for _, c := range cases {
			got, err := tx.TimelineTile("C1", c.ts, c.size)
			if err != nil {
				t.Fatalf("TimelineTile(%s, %d): %v", c.ts, c.size, err)
			}
			if !slices.Equal(tsList(got.Messages), c.want) || got.Oldest != c.oldest || got.Latest != c.latest {
				t.Errorf("TimelineTile(%s, %d) = %v from %s to %s, want %v from %s to %s", c.ts, c.size,
					tsList(got.Messages), got.Oldest, got.Latest, c.want, c.oldest, c.latest)
			}
		}
		if got, err := tx.TimelineTile("C9", "1700000010.000000", 3); got.Messages != nil || got.Oldest != "" || err != nil {
			t.Errorf("TimelineTile of an unknown channel = %v, %v; want nothing", got, err)
		}
		return nil
	})
}
