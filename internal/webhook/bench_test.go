package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/changefeed"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
	"github.com/slackpoll/slackpoll/internal/webhook"
)

// benchRows is the outbox of the receiver-down case: rows grow with every change
// while the receiver does not answer.
const benchRows = 200_000

// outboxWhileTheReceiverIsDown builds a store (synced on commit, as the daemon opens
// it) whose outbox holds benchRows rows of one webhook over 8 conversations, every
// conversation's first row failed once and backing off: the state after a receiver
// outage. It returns the store, the hook and the clock its outbox reads.
func outboxWhileTheReceiverIsDown(b *testing.B, srv *httptest.Server) (*boltstore.Store, webhook.Hook, *fakeClock) {
	b.Helper()
	s := storetest.OpenAt(b, b.TempDir()+"/bench.db", boltstore.Options{NoSync: true})
	clock := &fakeClock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	text := "a message of a usual length, some hundred and fifty bytes, with words and more words and then a few more words."
	for done := 0; done < benchRows; {
		err := s.Update(func(tx rm.Tx) error {
			for i := 0; i < 5000 && done < benchRows; i++ {
				c := rm.Change{ID: rm.NewEventID(), Kind: rm.ChangeMessagePosted, Channel: fmt.Sprintf("C%d", done%8), TS: "1700000000.000100",
					ObservedAt: clock.Now(), After: &rm.ChangeValue{Text: &text, User: "U0AVERY00"}}
				if err := tx.AppendChange(&c); err != nil {
					return err
				}
				if err := tx.PutOutbox(rm.OutboxRow{Webhook: "app", Seq: c.Seq, Change: c, Enqueued: clock.Now()}); err != nil {
					return err
				}
				done++
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	s.DB().NoSync = false // from here on, as in the daemon
	u, _ := url.Parse(srv.URL)
	hook := webhook.Hook{Name: "app", URL: u, Keys: [][]byte{testKey}, Timeout: 5 * time.Second,
		Outbox: &changefeed.Outbox{Store: s, Now: clock.Now, MaxAttempts: 10}}
	rows, err := hook.Outbox.Claim("app", "down", 8)
	if err != nil || len(rows) != 8 {
		b.Fatalf("claimed %d, %v", len(rows), err)
	}
	for _, r := range rows {
		if _, err := hook.Outbox.Fail("app", "down", r.Seq, "HTTP 503"); err != nil {
			b.Fatal(err)
		}
	}
	return s, hook, clock
}

// BenchmarkOutboxWhileTheReceiverIsDown measures, with 200,000 rows waiting and every
// conversation backing off, what the daemon pays for its outbox:
//
//   - sweep: one delivery sweep that finds nothing due (each 5 s and after each
//     tick, in a write transaction: it holds the poller's writer off meanwhile);
//   - stats: the outbox figures of status and /metrics (a read transaction);
//   - drain: once the receiver answers again, rows delivered a second (rows/s), over
//     the first 2,000 rows.
func BenchmarkOutboxWhileTheReceiverIsDown(b *testing.B) {
	var delivered atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		delivered.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(srv.Close)
	s, hook, clock := outboxWhileTheReceiverIsDown(b, srv)
	b.Run("sweep", func(b *testing.B) {
		d := &webhook.Deliverer{Hooks: []webhook.Hook{hook}}
		for b.Loop() {
			d.Sweep(context.Background())
		}
		if delivered.Load() != 0 {
			b.Fatalf("delivered %d rows while every conversation backs off", delivered.Load())
		}
	})
	b.Run("stats", func(b *testing.B) {
		for b.Loop() {
			err := s.View(func(tx rm.Tx) error {
				st, err := changefeed.OutboxStats(tx)
				if st["app"].Pending != benchRows {
					b.Fatalf("stats %+v", st)
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("drain", func(b *testing.B) {
		const n = 2000
		clock.Advance(time.Hour) // the backoffs are over: the receiver is back
		for b.Loop() {
			ctx, cancel := context.WithCancel(context.Background())
			d := &webhook.Deliverer{Hooks: []webhook.Hook{hook}, OnOutcome: func(string, string) {
				if delivered.Load() >= n {
					cancel()
				}
			}}
			start := time.Now()
			delivered.Store(0)
			d.Sweep(ctx)
			cancel()
			b.ReportMetric(float64(delivered.Load())/time.Since(start).Seconds(), "rows/s")
		}
	})
}
