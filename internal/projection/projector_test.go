package projection_test

import (
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.UTC)

func conv(id, name string) rm.Conversation {
	return rm.Conversation{ID: id, Name: name, Type: rm.TypePublicChannel, Status: rm.StatusOK}
}

func msg(ch, ts, user, text string) rm.Message {
	at := t0
	return rm.Message{Channel: ch, TS: rm.TS(ts), User: user, Text: text, LastPolledAt: &at}
}

// TestProjectionFollowsEveryWrite writes what the change feed announces and what it
// does not (read times, a user's fields, a conversation's name, a record key, a
// thread), and checks after each write that the projection equals the store row for
// row.
func TestProjectionFollowsEveryWrite(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *projection.Target) {
		s, w := openStore(t)
		update(t, w, func(tx rm.Tx) error {
			for _, c := range []rm.Conversation{conv("C1", "general"), conv("C2", "random")} {
				if err := tx.PutConversation(c); err != nil {
					return err
				}
			}
			if err := tx.PutUser(rm.User{ID: "U1", DisplayName: "avery", FetchedAt: t0}); err != nil {
				return err
			}
			parent := msg("C1", "1796032800.000100", "U1", "Deploy <@U2> finished, see <https://example.com|the log> &amp; <#C2>")
			parent.ThreadTS, parent.ReplyCount, parent.LatestReply = parent.TS, 1, "1796032801.000100"
			parent.Reactions = []rm.Reaction{{Name: "eyes", Count: 3, Users: []string{"U1", "U2"}}}
			reply := msg("C1", "1796032801.000100", "U2", "東京都の会議は明日です")
			reply.ThreadTS = parent.TS
			for _, m := range []rm.Message{parent, reply, msg("C2", "1796032802.000100", "", "bot text")} {
				if err := tx.PutMessage(m); err != nil {
					return err
				}
			}
			return nil
		})
		p := runProjector(t, w, tg)
		waitIdle(t, p)
		rep := verify(t, s, tg)
		if rep.Messages != 3 || rep.Reactions != 2 {
			t.Fatalf("verified %v, want 3 messages and 2 reactions", rep)
		}

		steps := []struct {
			name string
			fn   func(tx rm.Tx) error
		}{
			{"a read changes last_polled_at only", func(tx rm.Tx) error {
				m, _, err := tx.Message("C1", "1796032800.000100")
				m.LastPolledAt = ptr(t0.Add(time.Minute))
				m.ThreadSyncedAt = ptr(t0.Add(time.Minute))
				return firstErr(err, tx.PutMessage(m))
			}},
			{"a user is looked up: labels and mentions change", func(tx rm.Tx) error {
				return tx.PutUser(rm.User{ID: "U2", RealName: "Bee Example", FetchedAt: t0})
			}},
			{"a user renamed", func(tx rm.Tx) error {
				return tx.PutUser(rm.User{ID: "U2", DisplayName: "bee", RealName: "Bee Example", FetchedAt: t0.Add(time.Hour)})
			}},
			{"a conversation renamed", func(tx rm.Tx) error {
				c := conv("C2", "random-2")
				return tx.PutConversation(c)
			}},
			{"an edit and a reaction", func(tx rm.Tx) error {
				m, _, err := tx.Message("C1", "1796032801.000100")
				m.Text = "東京の会議は明後日です"
				m.Edited = &rm.Edited{User: "U2", TS: "1796032900.000000"}
				m.Reactions = []rm.Reaction{{Name: "+1", Count: 1, Users: []string{"U1"}}}
				return firstErr(err, tx.PutMessage(m))
			}},
			{"a record key and the watched set", func(tx rm.Tx) error {
				m, _, err := tx.Message("C2", "1796032802.000100")
				m.Record = "ticket-42"
				ref := rm.Ref{Channel: "C2", TS: m.TS}
				return firstErr(err, tx.PutMessage(m), tx.PutRecord("ticket-42", ref), tx.PutWatched(ref))
			}},
			{"missing and deleted", func(tx rm.Tx) error {
				m, _, err := tx.Message("C1", "1796032800.000100")
				m.MissingSince = ptr(t0.Add(2 * time.Minute))
				m.Deleted = true
				return firstErr(err, tx.PutMessage(m))
			}},
			{"a reply removed", func(tx rm.Tx) error { return tx.DeleteMessage("C1", "1796032801.000100") }},
			{"history read below the baseline", func(tx rm.Tx) error {
				for i := range 50 {
					m := msg("C2", string(rm.TSFromUnix(1700000000+int64(i))), "U1", "old message")
					if err := tx.PutMessage(m); err != nil {
						return err
					}
				}
				return nil
			}},
		}
		for _, st := range steps {
			update(t, w, st.fn)
			waitIdle(t, p)
			if rep, err := projection.Verify(t.Context(), s, tg); err != nil || !rep.Equal() {
				t.Fatalf("after %q: %v %v\n%v", st.name, rep, err, rep.Differences)
			}
		}
	})
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
