package changefeed_test

import (
	"fmt"
	"testing"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// BenchmarkClaimWhileTheReceiverIsDown: 20,000 rows over 8 conversations whose first
// rows back off, as after a receiver outage. Every sweep (each 5 s, and after each
// tick) claims in a write transaction, which holds off the poller's writer meanwhile.
func BenchmarkClaimWhileTheReceiverIsDown(b *testing.B) {
	s := openStore(b)
	c := &clock{t: t0}
	o := newOutbox(s, c)
	text := "a message of a usual length, some hundred and fifty bytes, with words and more words and then a few more words."
	for range 20 {
		err := s.Update(func(tx rm.Tx) error {
			for i := range 1000 {
				cc := rm.Change{ID: rm.NewEventID(), Kind: rm.ChangeMessagePosted, Channel: fmt.Sprintf("C%d", i%8), TS: "1.000001", ObservedAt: t0, After: &rm.ChangeValue{Text: &text}}
				if err := tx.AppendChange(&cc); err != nil {
					return err
				}
				if err := tx.PutOutbox(rm.OutboxRow{Webhook: "h", Seq: cc.Seq, Change: cc, Enqueued: t0}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	rows, _ := o.Claim("h", "first", 8)
	for _, r := range rows {
		_, _ = o.Fail("h", "first", r.Seq, "down")
	}
	b.ResetTimer()
	for i := range b.N {
		if rows, err := o.Claim("h", fmt.Sprint("t", i), 50); err != nil || len(rows) != 0 {
			b.Fatalf("claimed %d, %v", len(rows), err)
		}
	}
}
