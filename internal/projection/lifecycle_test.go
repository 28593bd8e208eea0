package projection_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// seed writes a small workspace: two conversations, a user, a thread.
func seed(t *testing.T, s rm.Store) {
	update(t, s, func(tx rm.Tx) error {
		parent := msg("C1", "1796032800.000100", "U1", "parent <@U1>")
		parent.ThreadTS, parent.ReplyCount, parent.LatestReply = parent.TS, 1, "1796032801.000100"
		reply := msg("C1", "1796032801.000100", "U1", "reply")
		reply.ThreadTS = parent.TS
		return firstErr(tx.PutConversation(conv("C1", "general")), tx.PutConversation(conv("C2", "random")),
			tx.PutUser(rm.User{ID: "U1", DisplayName: "avery", FetchedAt: t0}),
			tx.PutMessage(parent), tx.PutMessage(reply), tx.PutMessage(msg("C2", "1796032802.000100", "U1", "hello")))
	})
}

// TestWritesMadeWithoutAProjectorAreFoundAtStart: what the store committed while no
// projector watched it — a daemon killed between its bbolt commit and the SQL
// commit, `slackpoll track` with the daemon stopped — and what the feed never
// announces are in the projection once a projector has started.
func TestWritesMadeWithoutAProjectorAreFoundAtStart(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *projection.Target) {
		s, w := openStore(t)
		seed(t, w)
		ctx, cancel := context.WithCancel(context.Background())
		p := projection.New(projection.Options{Store: w, Target: tg, Poll: 10 * time.Millisecond})
		done := make(chan struct{})
		go func() { defer close(done); _ = p.Run(ctx) }()
		waitIdle(t, p)
		cancel()
		<-done
		verify(t, s, tg)

		// s, not w: nothing watches these writes.
		update(t, s, func(tx rm.Tx) error {
			m, _, err := tx.Message("C1", "1796032800.000100")
			m.LastPolledAt = ptr(t0.Add(time.Hour))
			m.Record = "ticket-1"
			return firstErr(err, tx.PutMessage(m), tx.DeleteMessage("C2", "1796032802.000100"),
				tx.PutUser(rm.User{ID: "U1", DisplayName: "avery2", FetchedAt: t0.Add(time.Hour)}),
				tx.PutConversation(conv("C3", "new")), tx.PutMessage(msg("C3", "1796032803.000100", "U1", "new here")))
		})
		if rep, _ := projection.Verify(t.Context(), s, tg); rep.Equal() {
			t.Fatal("the projection already equals the store: the test writes nothing new")
		}
		p = runProjector(t, w, tg)
		waitIdle(t, p)
		verify(t, s, tg)
	})
}

// TestAChangeAppliedTwiceHasOneEffect: a change names a key; the projector writes
// the key's current state, so applying it again (a cursor that did not move with the
// rows, a change announcing what a commit already brought) writes nothing, and the
// rows' changed_seq stays where the first application put it.
func TestAChangeAppliedTwiceHasOneEffect(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *projection.Target) {
		s, w := openStore(t)
		seed(t, w)
		batches := make(chan projection.Batch, 100)
		p := projection.New(projection.Options{Store: w, Target: tg, Poll: 10 * time.Millisecond,
			OnBatch: func(b projection.Batch) { batches <- b }})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = p.Run(ctx) }()
		defer func() { cancel(); <-done }()
		waitIdle(t, p)

		edit := func(tx rm.Tx) error {
			m, _, err := tx.Message("C1", "1796032801.000100")
			m.Text = "reply, edited"
			c := rm.Change{Kind: rm.ChangeMessageEdited, Channel: "C1", TS: m.TS, ObservedAt: t0}
			return firstErr(err, tx.PutMessage(m), tx.AppendChange(&c))
		}
		update(t, w, edit)
		waitIdle(t, p)
		verify(t, s, tg)
		seqOf := func() (seq int64) {
			err := tg.DB().QueryRow(tgq(tg, "SELECT changed_seq FROM messages WHERE channel = ? AND ts = ?"), "C1", "1796032801.000100").Scan(&seq)
			if err != nil {
				t.Fatal(err)
			}
			return seq
		}
		first := seqOf()
		drain(batches)
		// The same change again: the projector reads the key, finds it as written.
		update(t, w, func(tx rm.Tx) error {
			c := rm.Change{Kind: rm.ChangeMessageEdited, Channel: "C1", TS: "1796032801.000100", ObservedAt: t0}
			return tx.AppendChange(&c)
		})
		waitIdle(t, p)
		for b := range drain(batches) {
			if b.Changed() != 0 {
				t.Errorf("applying the change again wrote %+v, want nothing", b.Counts)
			}
		}
		if got := seqOf(); got != first {
			t.Errorf("changed_seq %d after the change applied again, want %d (the first application's)", got, first)
		}
		verify(t, s, tg)
	})
}

func drain(c chan projection.Batch) chan projection.Batch {
	out := make(chan projection.Batch, len(c))
	for {
		select {
		case b := <-c:
			out <- b
		default:
			close(out)
			return out
		}
	}
}

// tgq writes ? placeholders as the target wants them.
func tgq(tg *projection.Target, q string) string {
	if tg.Kind() == projection.KindSQLite {
		return q
	}
	n := 0
	var b strings.Builder
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + string(rune('0'+n)))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// TestAProjectionBehindTheFeedsRetentionSyncs: changes after the cursor were pruned
// before the projector applied them (it was stopped for longer than
// changes.retention): it syncs from the store instead of skipping them.
func TestAProjectionBehindTheFeedsRetentionSyncs(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *projection.Target) {
		s, w := openStore(t)
		seed(t, w)
		p := runProjector(t, w, tg)
		waitIdle(t, p)
		// Behind the watch's back: changes written and pruned, and the message they
		// named changed.
		update(t, s, func(tx rm.Tx) error {
			m, _, err := tx.Message("C2", "1796032802.000100")
			m.Text = "changed while nobody projected"
			if err := firstErr(err, tx.PutMessage(m)); err != nil {
				return err
			}
			for range 5 {
				c := rm.Change{Kind: rm.ChangeMessageEdited, Channel: "C2", TS: m.TS, ObservedAt: t0}
				if err := tx.AppendChange(&c); err != nil {
					return err
				}
				if err := tx.DeleteChange(c.Seq); err != nil {
					return err
				}
			}
			return nil
		})
		// A watched commit wakes the projector, which finds the feed pruned past it.
		update(t, w, func(tx rm.Tx) error {
			c := rm.Change{Kind: rm.ChangeMessagePosted, Channel: "C1", TS: "1796032800.000100", ObservedAt: t0}
			return tx.AppendChange(&c)
		})
		waitIdle(t, p)
		verify(t, s, tg)
		if st := p.Status(); st.Syncs < 2 {
			t.Errorf("%d syncs, want the start's and one more for the pruned feed", st.Syncs)
		}
	})
}

// TestSyncRepairsAndRebuildRebuilds: rows changed by hand are put back by the sync a
// projector starts with, and a rebuild drops and writes everything again.
func TestSyncRepairsAndRebuildRebuilds(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *projection.Target) {
		s, w := openStore(t)
		seed(t, w)
		p := projection.New(projection.Options{Store: w, Target: tg})
		if err := p.Sync(t.Context(), false); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			"UPDATE messages SET text = 'tampered', content_hash = 1 WHERE ts = '1796032802.000100'",
			"DELETE FROM reactions",
			"UPDATE users SET label = 'nobody'",
			"DELETE FROM conversations WHERE channel = 'C2'",
		} {
			if _, err := tg.DB().Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		p = projection.New(projection.Options{Store: w, Target: tg})
		if err := p.Sync(t.Context(), false); err != nil {
			t.Fatal(err)
		}
		verify(t, s, tg)
		if _, err := tg.DB().Exec("UPDATE messages SET text = 'tampered', content_hash = 1"); err != nil {
			t.Fatal(err)
		}
		p = runProjector(t, w, tg)
		waitIdle(t, p)
		p.RequestRebuild()
		time.Sleep(20 * time.Millisecond)
		waitIdle(t, p)
		verify(t, s, tg)
		if st := p.Status(); st.Syncs != 2 {
			t.Errorf("%d syncs, want the start's and the rebuild's", st.Syncs)
		}
	})
}
