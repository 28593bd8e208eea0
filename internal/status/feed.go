package status

import (
	"maps"
	"slices"
	"time"

	"github.com/slackpoll/slackpoll/internal/changefeed"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Feed is the change feed's state (README, "Change feed").
type Feed struct {
	// LastSeq is the last seq assigned (0 before the first change); OldestSeq the
	// oldest still held (changes before it were pruned by changes.retention).
	LastSeq   uint64 `json:"last_seq"`
	OldestSeq uint64 `json:"oldest_seq"`
	// Outbox is, per webhook with rows, what waits for delivery.
	Outbox []Outbox `json:"outbox"`
	// LastRestore is the store's last restore, null when it was never restored:
	// seqs after its seq up to skipped_to are never used, and a cursor among them
	// gets 410 Gone.
	LastRestore *rm.FeedRestore `json:"last_restore"`
}

// Outbox is one webhook's undelivered rows.
type Outbox struct {
	Webhook string `json:"webhook"`
	// Pending rows wait for delivery (due, backing off or claimed); Parked rows
	// failed max_attempts times and wait for `slackpoll requeue --webhook NAME`.
	Pending int `json:"pending"`
	Parked  int `json:"parked"`
	// OldestPendingAgeSeconds is how long the oldest pending row has waited; null
	// when none is pending.
	OldestPendingAgeSeconds *float64 `json:"oldest_pending_age_seconds"`
	// Dropped counts the rows dropped undelivered because the outbox held the
	// webhook's max_rows (ever, in this store); LastDroppedSeq is the seq of the
	// last of them, 0 when none: the change feed holds them until changes.retention.
	Dropped        uint64 `json:"dropped"`
	LastDroppedSeq uint64 `json:"last_dropped_seq"`
	// NotConfigured: no configured webhook has this name (it was removed or renamed),
	// so nothing delivers these rows; they are kept, and delivered if a webhook of
	// that name is configured again.
	NotConfigured bool `json:"not_configured"`
}

func (r *Report) addFeed(tx rm.Tx, webhooks []string) error {
	oldest, last, err := tx.ChangeBounds()
	if err != nil {
		return err
	}
	if oldest == 0 {
		oldest = last + 1
	}
	r.Feed = Feed{LastSeq: last, OldestSeq: oldest, Outbox: []Outbox{}}
	restores, err := tx.FeedRestores()
	if err != nil {
		return err
	}
	if n := len(restores); n > 0 {
		r.Feed.LastRestore = &restores[n-1]
	}
	stats, err := changefeed.OutboxStats(tx)
	if err != nil {
		return err
	}
	for _, name := range webhooks {
		if _, ok := stats[name]; !ok {
			stats[name] = changefeed.Stats{} // configured, everything delivered: listed, at 0
		}
	}
	for _, name := range slices.Sorted(maps.Keys(stats)) {
		s := stats[name]
		o := Outbox{Webhook: name, Pending: s.Pending, Parked: s.Parked, Dropped: s.Dropped, LastDroppedSeq: s.LastDropped,
			NotConfigured: !slices.Contains(webhooks, name)}
		if o.NotConfigured && o.Pending+o.Parked == 0 {
			continue // removed, and nothing left of it to deliver
		}
		if !s.OldestPending.IsZero() {
			o.OldestPendingAgeSeconds = seconds(max(0, r.GeneratedAt.Sub(s.OldestPending)))
		}
		r.Feed.Outbox = append(r.Feed.Outbox, o)
	}
	return nil
}

func (r *Report) writeFeed(p *printer) {
	f := r.Feed
	if f.LastSeq == 0 {
		p.line("change feed: no change yet")
	} else {
		p.line("change feed: last seq %d, oldest held %d", f.LastSeq, f.OldestSeq)
	}
	if r := f.LastRestore; r != nil {
		p.line("change feed: restored %s (%s) to seq %d; seqs %d to %d are never used", r.At.Format(time.RFC3339), r.By, r.Seq, r.Seq+1, r.SkippedTo)
	}
	for _, o := range f.Outbox {
		if o.NotConfigured {
			p.line("webhook %s: not configured: %d rows are kept undelivered until a webhook named %s is configured again",
				o.Webhook, o.Pending+o.Parked, o.Webhook)
			continue
		}
		age := ""
		if o.OldestPendingAgeSeconds != nil {
			age = ", oldest waiting " + dur(*o.OldestPendingAgeSeconds)
		}
		parked := ""
		if o.Parked > 0 {
			parked = "; see `slackpoll outbox --parked`, then `slackpoll requeue --webhook " + o.Webhook + "`"
		}
		p.line("webhook %s: %d pending%s, %d parked%s", o.Webhook, o.Pending, age, o.Parked, parked)
		if o.Dropped > 0 {
			p.line("webhook %s: %d rows dropped undelivered over max_rows, the last seq %d (the change feed holds them until changes.retention)",
				o.Webhook, o.Dropped, o.LastDroppedSeq)
		}
	}
}
