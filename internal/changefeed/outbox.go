package changefeed

import (
	"errors"
	"sync"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Defaults of the outbox and of a delivery, for the fields left zero (and shown by
// `slackpoll config`).
const (
	DefaultLease           = time.Minute
	DefaultBackoff         = 5 * time.Second
	DefaultMaxBackoff      = 10 * time.Minute
	DefaultMaxAttempts     = 10
	DefaultDeliveryTimeout = 10 * time.Second
	// MinLease is the shortest lease a webhook may have (config): a shorter claim is
	// over before its delivery can start.
	MinLease = time.Second
)

// Outbox holds the delivery rules of the webhooks' outbox rows. Every method is one
// store transaction, so a crash leaves each step whole or undone: a row is never
// lost, and a claim left behind by a crash is freed by its lease expiring, not by
// code that the crash would have skipped.
type Outbox struct {
	Store rm.Store
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Lease is how long a claim holds its rows (default 1m).
	Lease time.Duration
	// Backoff is the wait after a first failure, doubled per failure up to
	// MaxBackoff (defaults 5s and 10m).
	Backoff, MaxBackoff time.Duration
	// MaxAttempts parks a row after that many failed attempts (default 10).
	MaxAttempts int

	mu sync.Mutex
	// tokens are the claim tokens Claim was called with, until their lease ends: only
	// these can hold rows, so only their claims walk the whole outbox for them.
	tokens map[string]time.Time
}

// Outcome names what a delivery attempt did, for logs and metrics.
const (
	OutcomeDelivered = "delivered"
	OutcomeFailed    = "failed"
	OutcomeParked    = "parked"
	// OutcomeFenced: the claim was lost (its lease expired) before the attempt was
	// recorded; another claim delivers the row again.
	OutcomeFenced = "fenced"
)

func (o *Outbox) now() time.Time {
	if o.Now != nil {
		return o.Now().UTC()
	}
	return time.Now().UTC()
}

func (o *Outbox) lease() time.Duration { return o.LeaseOrDefault() }

// LeaseOrDefault is Lease, or its default (1m) when unset.
func (o *Outbox) LeaseOrDefault() time.Duration {
	if o.Lease > 0 {
		return o.Lease
	}
	return DefaultLease
}

func (o *Outbox) maxBackoff() time.Duration {
	if o.MaxBackoff > 0 {
		return o.MaxBackoff
	}
	return DefaultMaxBackoff
}

func (o *Outbox) backoff(attempts int) time.Duration {
	d := o.Backoff
	if d <= 0 {
		d = DefaultBackoff
	}
	for i := 1; i < attempts && d < o.maxBackoff(); i++ {
		d *= 2
	}
	return min(d, o.maxBackoff())
}

func (o *Outbox) maxAttempts() int {
	if o.MaxAttempts > 0 {
		return o.MaxAttempts
	}
	return DefaultMaxAttempts
}

// held reports whether token holds r at now.
func (o *Outbox) held(r *rm.OutboxRow, token string, now time.Time) bool {
	return r.ClaimToken != "" && r.ClaimToken == token && o.leased(r, now)
}

// leased reports whether r's claim holds at now. A lease more than two lease periods
// ahead was written by a clock that has since moved back by more than a lease: it is
// not trusted. A smaller step back (an NTP correction, a resumed VM) leaves a fresh
// claim a little more than one period ahead, and it still holds: its deliverer is
// at work, and neither its completion is refused nor its rows claimed by another.
func (o *Outbox) leased(r *rm.OutboxRow, now time.Time) bool {
	return r.ClaimToken != "" && now.Before(r.LeaseUntil) && !r.LeaseUntil.After(now.Add(2*o.lease()))
}

// Expired reports whether the claim on r, as Claim returned it, has run out: a
// deliverer stops its batch there and claims again, rather than deliver rows whose
// completion would be refused (and which another claim may be delivering).
func (o *Outbox) Expired(r *rm.OutboxRow) bool { return !o.now().Before(r.LeaseUntil) }

// waiting reports whether r backs off at now. A retry time further ahead than the
// longest backoff comes from a clock that has since moved back: it is now.
func (o *Outbox) waiting(r *rm.OutboxRow, now time.Time) bool {
	return now.Before(r.NextAttempt) && !r.NextAttempt.After(now.Add(o.maxBackoff()))
}

// used reports whether this Outbox was asked to claim for token before, while the
// rows that claim took may still hold, and remembers it for the claim's lease.
func (o *Outbox) used(token string, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for t, until := range o.tokens {
		if !now.Before(until) {
			delete(o.tokens, t)
		}
	}
	if _, ok := o.tokens[token]; ok {
		return true
	}
	if o.tokens == nil {
		o.tokens = map[string]time.Time{}
	}
	o.tokens[token] = now.Add(o.lease())
	return false
}

// Claim claims up to n rows of webhook for token, in seq order, with a lease of
// Lease, and returns them. Per conversation, order holds: a row that is held by
// another claim or backing off keeps every later row of its conversation out of the
// batch. Parked rows are skipped and hold nothing back. Claiming again with the same
// token while its claim holds returns the same rows and claims no others: a
// deliverer that retries a claim whose answer it lost does not take a second batch.
// (The same Outbox must see both claims: a token it never claimed for holds no row,
// so its claim reads the outbox only as far as its batch, not all of it.)
func (o *Outbox) Claim(webhook, token string, n int) ([]rm.OutboxRow, error) {
	if token == "" {
		return nil, errors.New("outbox: empty claim token")
	}
	var out []rm.OutboxRow
	used := o.used(token, o.now())
	err := o.Store.Update(func(tx rm.Tx) error {
		// One walk finds both the rows token holds and the rows it would claim: each
		// row decoded costs, and a backlog (a first sync with backfill, a receiver
		// down) is long. Only a token used before walks it all.
		var held []rm.OutboxRow
		out = out[:0]
		now := o.now()
		blocked := map[string]bool{}
		err := tx.Outbox(webhook, func(r rm.OutboxRow) error {
			switch {
			case used && o.held(&r, token, now):
				held = append(held, r)
			case !used && len(out) >= n:
				return rm.ErrStopIteration
			case len(held) > 0 || len(out) >= n || r.Parked || blocked[r.Change.Channel]:
			case o.leased(&r, now) || o.waiting(&r, now):
				blocked[r.Change.Channel] = true
			default:
				r.ClaimToken, r.LeaseUntil = token, now.Add(o.lease())
				out = append(out, r)
			}
			return nil
		})
		if err != nil || len(held) > 0 {
			out = held
			return err
		}
		for _, r := range out {
			if err := tx.PutOutbox(r); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// Complete deletes a delivered row if token still holds it, and reports whether it
// did. A false answer is the fence: the lease expired first, the row may be claimed
// and delivered again, and the receiver will see the event twice.
func (o *Outbox) Complete(webhook, token string, seq uint64) (bool, error) {
	ok := false
	err := o.Store.Update(func(tx rm.Tx) error {
		r, found, err := tx.OutboxRow(webhook, seq)
		if err != nil || !found {
			ok = false
			return err
		}
		if ok = o.held(&r, token, o.now()); !ok {
			return nil
		}
		return tx.DeleteOutbox(webhook, seq)
	})
	return ok, err
}

// Release lets go of the rows named by seqs that token holds, without an attempt:
// they are free to be claimed again at once. Rows token no longer holds are left
// alone.
func (o *Outbox) Release(webhook, token string, seqs []uint64) error {
	return o.Store.Update(func(tx rm.Tx) error {
		now := o.now()
		for _, seq := range seqs {
			r, found, err := tx.OutboxRow(webhook, seq)
			if err != nil {
				return err
			}
			if !found || !o.held(&r, token, now) {
				continue
			}
			r.ClaimToken, r.LeaseUntil = "", time.Time{}
			if err := tx.PutOutbox(r); err != nil {
				return err
			}
		}
		return nil
	})
}

// Fail records a failed attempt of a row token holds: the claim is released, the
// row backs off (Backoff doubled per attempt, at most MaxBackoff), and after
// MaxAttempts it is parked. It returns the outcome: failed, parked, or fenced when
// the claim was no longer held (nothing is recorded then).
func (o *Outbox) Fail(webhook, token string, seq uint64, reason string) (string, error) {
	outcome := OutcomeFenced
	err := o.Store.Update(func(tx rm.Tx) error {
		outcome = OutcomeFenced
		r, found, err := tx.OutboxRow(webhook, seq)
		now := o.now()
		if err != nil || !found || !o.held(&r, token, now) {
			return err
		}
		r.Attempts++
		r.LastError = reason
		r.ClaimToken, r.LeaseUntil = "", time.Time{}
		r.NextAttempt = now.Add(o.backoff(r.Attempts))
		outcome = OutcomeFailed
		if r.Attempts >= o.maxAttempts() {
			r.Parked, outcome = true, OutcomeParked
		}
		return tx.PutOutbox(r)
	})
	return outcome, err
}

// Requeue puts parked rows of webhook back in line with a fresh attempt count: the
// rows named by seqs, or every parked row when seqs is empty. It returns how many.
func (o *Outbox) Requeue(webhook string, seqs []uint64) (int, error) {
	n := 0
	err := o.Store.Update(func(tx rm.Tx) error {
		n = 0
		var back []rm.OutboxRow
		want := map[uint64]bool{}
		for _, s := range seqs {
			want[s] = true
		}
		err := tx.Outbox(webhook, func(r rm.OutboxRow) error {
			if r.Parked && (len(seqs) == 0 || want[r.Seq]) {
				back = append(back, r)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, r := range back {
			r.Parked, r.Attempts, r.NextAttempt = false, 0, time.Time{}
			if err := tx.PutOutbox(r); err != nil {
				return err
			}
		}
		n = len(back)
		return nil
	})
	return n, err
}

// Stats are one webhook's outbox figures, for status and metrics.
type Stats struct {
	// Pending rows are waiting for delivery (claimed, backing off or due); Parked
	// rows wait for a requeue.
	Pending, Parked int
	// OldestPending is when the oldest pending row was enqueued; zero when none.
	OldestPending time.Time
}

// OutboxStats returns the figures of every webhook with rows, by name.
func OutboxStats(tx rm.Tx) (map[string]Stats, error) {
	out := map[string]Stats{}
	err := tx.Outbox("", func(r rm.OutboxRow) error {
		s := out[r.Webhook]
		if r.Parked {
			s.Parked++
		} else {
			s.Pending++
			if s.OldestPending.IsZero() || r.Enqueued.Before(s.OldestPending) {
				s.OldestPending = r.Enqueued
			}
		}
		out[r.Webhook] = s
		return nil
	})
	return out, err
}

// RowSummary is one outbox row as listed to operators (GET /v1/outbox, `slackpoll
// outbox`): without the change body and the claim token.
type RowSummary struct {
	Webhook     string    `json:"webhook"`
	Seq         uint64    `json:"seq"`
	ID          string    `json:"id"`
	Kind        string    `json:"kind"`
	Channel     string    `json:"channel,omitempty"`
	Enqueued    time.Time `json:"enqueued"`
	Attempts    int       `json:"attempts"`
	NextAttempt time.Time `json:"next_attempt"`
	Claimed     bool      `json:"claimed"`
	Parked      bool      `json:"parked"`
	LastError   string    `json:"last_error,omitempty"`
}

// MaxListed is the most outbox rows one listing shows (GET /v1/outbox, `slackpoll
// outbox`); OutboxStats counts them all.
const MaxListed = 1000

// ListOutbox returns up to limit rows of webhook ("" for all), parked ones only
// when parkedOnly, by webhook and seq.
func ListOutbox(tx rm.Tx, webhook string, parkedOnly bool, now time.Time, limit int) ([]RowSummary, error) {
	out := []RowSummary{}
	err := tx.Outbox(webhook, func(r rm.OutboxRow) error {
		if len(out) >= limit {
			return rm.ErrStopIteration
		}
		if parkedOnly && !r.Parked {
			return nil
		}
		out = append(out, RowSummary{
			Webhook: r.Webhook, Seq: r.Seq, ID: r.Change.ID, Kind: r.Change.Kind, Channel: r.Change.Channel,
			Enqueued: r.Enqueued, Attempts: r.Attempts, NextAttempt: r.NextAttempt,
			Claimed: r.ClaimToken != "" && now.Before(r.LeaseUntil), Parked: r.Parked, LastError: r.LastError,
		})
		return nil
	})
	return out, err
}
