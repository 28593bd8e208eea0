package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// randomString mixes what JSON escapes: quotes, backslashes, every control byte, HTML
// characters (left as they are), U+2028/U+2029, invalid UTF-8 and plain text.
func randomString(rng *rand.Rand) string {
	pieces := []string{"a", "plain text ", `"`, `\`, "<", ">", "&", "\u2028", "\u2029", "é", "日本", "🙂",
		"\xff", "\xc3", "\xe2\x80", "\x7f", "\u00a0", "\ufffd"}
	var b strings.Builder
	for range rng.IntN(12) {
		if rng.IntN(4) == 0 {
			b.WriteByte(byte(rng.IntN(0x20)))
			continue
		}
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

func randomTime(rng *rand.Rand) *time.Time {
	if rng.IntN(3) == 0 {
		return nil
	}
	t := time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).UTC()
	if rng.IntN(2) == 0 {
		t = t.Truncate(time.Second)
	}
	return &t
}

func randomReactions(rng *rand.Rand) []rm.Reaction {
	if rng.IntN(4) == 0 {
		return nil
	}
	rs := []rm.Reaction{}
	for range rng.IntN(3) {
		r := rm.Reaction{Name: randomString(rng), Count: rng.IntN(1000) - 5}
		if rng.IntN(3) > 0 {
			r.Users = []string{}
			for range rng.IntN(3) {
				r.Users = append(r.Users, randomString(rng))
			}
		}
		rs = append(rs, r)
	}
	return rs
}

func randomEdited(rng *rand.Rand) *rm.Edited {
	if rng.IntN(2) == 0 {
		return nil
	}
	return &rm.Edited{User: randomString(rng), TS: rm.TS(randomString(rng))}
}

// The hand-written encoder writes exactly the bytes encoding/json writes (HTML
// escaping off), so that the export format does not depend on which one wrote it.
func TestMessageLineEncoding(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 4))
	for i := range 20000 {
		s := func() string { return randomString(rng) }
		l := MessageLine{
			Kind: KindMessage, Channel: s(), TS: rm.TS(s()), ThreadTS: rm.TS(s()), User: s(), UserLabel: s(),
			BotID: s(), Subtype: s(), Text: s(), Edited: randomEdited(rng), Reactions: randomReactions(rng),
			ReplyCount: rng.IntN(100), LatestReply: rm.TS(s()), ReplyWatermark: rm.TS(s()),
			OwnPost: rng.IntN(2) == 0, Deleted: rng.IntN(2) == 0, MissingSince: randomTime(rng), Record: s(),
			LastPolledAt: randomTime(rng), Tracked: rng.IntN(2) == 0,
		}
		if rng.IntN(5) > 0 {
			l.Replies = []ReplyLine{}
			for range rng.IntN(3) {
				l.Replies = append(l.Replies, ReplyLine{TS: rm.TS(s()), ThreadTS: rm.TS(s()), User: s(), UserLabel: s(),
					BotID: s(), Subtype: s(), Text: s(), Edited: randomEdited(rng), Reactions: randomReactions(rng), OwnPost: rng.IntN(2) == 0,
					LastPolledAt: randomTime(rng)})
			}
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&l); err != nil {
			t.Fatal(err)
		}
		got, err := encodeMessageLine(nil, &l)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("line %d:\ngot  %s\nwant %s", i, got, want.Bytes())
		}
	}
	// A time encoding/json refuses is refused the same way.
	bad := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := encodeMessageLine(nil, &MessageLine{LastPolledAt: &bad}); err == nil {
		t.Error("a year-10000 time encoded without error")
	}
}

// countingTx counts the user records an export reads.
type countingTx struct {
	rm.Tx
	users int
}

func (c *countingTx) User(id string) (rm.User, bool, error) {
	c.users++
	return c.Tx.User(id)
}

// An export reads each user's record once, not once per message that names it.
func TestExportReadsEachUserOnce(t *testing.T) {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "s.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Update(func(tx rm.Tx) error {
		for u := range 3 {
			if err := tx.PutUser(rm.User{ID: fmt.Sprintf("U%d", u), DisplayName: fmt.Sprintf("user %d", u)}); err != nil {
				return err
			}
		}
		for i := range 200 {
			m := rm.Message{Channel: "C1", TS: rm.TS(fmt.Sprintf("%d.000000", 1700000000+i)), User: fmt.Sprintf("U%d", i%4)}
			if i%10 == 9 {
				m.ThreadTS = rm.TS(fmt.Sprintf("%d.000000", 1700000000+i-1))
			}
			if err := tx.PutMessage(m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var ctx *countingTx
	if err := s.View(func(tx rm.Tx) error {
		ctx = &countingTx{Tx: tx}
		return Write(ctx, &out, []string{"C1"})
	}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), `"kind":"message"`); n != 180 {
		t.Errorf("export holds %d message lines, want 180", n)
	}
	if !strings.Contains(out.String(), `"user_label":"user 2"`) {
		t.Errorf("export lacks the looked-up label")
	}
	// U0–U2 looked up, U3 not: one read each.
	if ctx.users != 4 {
		t.Errorf("export read user records %d times, want 4 (once per user named)", ctx.users)
	}
}
