package changefeed

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
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
	// DefaultMaxRows bounds a webhook's outbox: past it, the oldest rows are dropped
	// undelivered. At about 1 KB a row, 100,000 rows are about 100 MB of store;
	// claims and status cost the same at any size.
	DefaultMaxRows = 100_000
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
	// claims are the claims this Outbox made, by token, until their lease ends: the
	// rows each took, so that a claim repeated with its token returns them (a token
	// it never claimed for holds no row).
	claims map[string]claim
}

// claim is one claim of an Outbox: until when it holds, and the rows it took.
type claim struct {
	until time.Time
	seqs  []uint64
}

// Outcome names what a delivery attempt did, for logs and metrics.
const (
	OutcomeDelivered = "delivered"
	OutcomeFailed    = "failed"
	OutcomeParked    = "parked"
	// OutcomeFenced: the claim was lost (its lease expired) before the attempt was
	// recorded; the row is delivered again. The attempt counts toward max_attempts
	// (unless another claim holds the row by then, whose attempt counts), so that
	// one event is not delivered again for ever.
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

// Left is how long the claim on r, as Claim returned it, still holds.
func (o *Outbox) Left(r *rm.OutboxRow) time.Duration { return r.LeaseUntil.Sub(o.now()) }

// Counts returns webhook's outbox counts (zero when it has no bucket).
func (o *Outbox) Counts(webhook string) (rm.OutboxCounts, error) {
	var out rm.OutboxCounts
	err := o.Store.View(func(tx rm.Tx) error {
		return tx.OutboxCounts(func(name string, c rm.OutboxCounts) error {
			if name == webhook {
				out = c
				return rm.ErrStopIteration
			}
			return nil
		})
	})
	return out, err
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

// claimed returns the rows the claim of token took, with true, while that claim may
// still hold; else it remembers token, for the claim's lease, and returns false.
func (o *Outbox) claimed(token string, now time.Time) ([]uint64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for t, c := range o.claims {
		if !now.Before(c.until) {
			delete(o.claims, t)
		}
	}
	if c, ok := o.claims[token]; ok {
		return c.seqs, true
	}
	if o.claims == nil {
		o.claims = map[string]claim{}
	}
	o.claims[token] = claim{until: now.Add(o.lease())}
	return nil, false
}

// remember records the rows the claim of token took.
func (o *Outbox) remember(token string, rows []rm.OutboxRow) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c, ok := o.claims[token]; ok {
		c.seqs = c.seqs[:0]
		for _, r := range rows {
			c.seqs = append(c.seqs, r.Seq)
		}
		o.claims[token] = c
	}
}

// due reports whether a pending row may be tried at now, from its index entry. One
// whose DueAt is past, or within the horizon where both a lease and a backoff are
// trusted, is decided by the entry alone; only one further ahead (written by a
// clock that has since moved back) is read.
func (o *Outbox) due(tx rm.Tx, webhook string, e rm.OutboxEntry, now time.Time) (bool, error) {
	if !e.DueAt.After(now) {
		return true, nil
	}
	if !e.DueAt.After(now.Add(min(2*o.lease(), o.maxBackoff()))) {
		return false, nil
	}
	r, ok, err := tx.OutboxRow(webhook, e.Seq)
	if err != nil || !ok {
		return false, err
	}
	return !o.leased(&r, now) && !o.waiting(&r, now), nil
}

// Claim claims up to n rows of webhook for token, with a lease of Lease, and
// returns them in seq order: the n oldest rows that may go now. Per conversation,
// order holds: a row that is held by another claim or backing off keeps every later
// row of its conversation out of the batch. Parked rows are skipped and hold nothing
// back. Claiming again with the same token while its claim holds returns the same
// rows and claims no others: a deliverer that retries a claim whose answer it lost
// does not take a second batch (the same Outbox must see both claims).
//
// Its cost grows with the conversations that have rows and with n, not with the
// rows waiting: it reads the store's index of pending rows (each conversation's
// first, then as many as the batch can take), and only the rows it takes.
func (o *Outbox) Claim(webhook, token string, n int) ([]rm.OutboxRow, error) {
	if token == "" {
		return nil, errors.New("outbox: empty claim token")
	}
	var out []rm.OutboxRow
	prior, _ := o.claimed(token, o.now())
	fresh := false
	err := o.Store.Update(func(tx rm.Tx) error {
		out, fresh = out[:0], false
		now := o.now()
		for _, seq := range prior {
			r, ok, err := tx.OutboxRow(webhook, seq)
			if err != nil {
				return err
			}
			if ok && o.held(&r, token, now) {
				out = append(out, r)
			}
		}
		if len(out) > 0 {
			return nil
		}
		take, err := o.oldestDue(tx, webhook, n, now)
		if err != nil {
			return err
		}
		stopped := map[string]bool{}
		for _, e := range take {
			r, ok, err := tx.OutboxRow(webhook, e.Seq)
			if err != nil {
				return err
			}
			if !ok || stopped[e.Channel] || o.leased(&r, now) || o.waiting(&r, now) {
				stopped[e.Channel] = true // unreadable or not due after all: holds back the rest
				continue
			}
			r.ClaimToken, r.LeaseUntil = token, now.Add(o.lease())
			out = append(out, r)
		}
		fresh = true
		if len(out) == 0 {
			return errNothingDue // rolled back: no commit, no fsync, for a sweep that finds nothing
		}
		for _, r := range out {
			if err := tx.PutOutbox(r); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, errNothingDue) {
		err = nil
	}
	if err == nil && fresh {
		o.remember(token, out)
	}
	return out, err
}

// errNothingDue ends a claim's transaction that claimed nothing.
var errNothingDue = errors.New("outbox: nothing due")

// oldestDue returns the index entries of the up to n oldest rows of webhook that may
// be tried at now, by seq: of each conversation whose first row is due, its rows
// up to the first that is not. Conversations are read oldest first, and only as far
// as their rows can still be among the n oldest.
func (o *Outbox) oldestDue(tx rm.Tx, webhook string, n int, now time.Time) ([]rm.OutboxEntry, error) {
	var heads []rm.OutboxEntry
	err := tx.OutboxHeads(webhook, func(h rm.OutboxEntry) error {
		due, err := o.due(tx, webhook, h, now)
		if due {
			heads = append(heads, h)
		}
		return err
	})
	if err != nil || n <= 0 {
		return nil, err
	}
	bySeq := func(a, b rm.OutboxEntry) int { return cmp.Compare(a.Seq, b.Seq) }
	slices.SortFunc(heads, bySeq)
	var take []rm.OutboxEntry
	for _, h := range heads {
		full := len(take) >= n
		if full && h.Seq > take[n-1].Seq {
			break // this conversation's rows, and every later one's, are newer than the n taken
		}
		got := 0
		var dueErr error
		err := tx.OutboxPending(webhook, h.Channel, func(e rm.OutboxEntry) error {
			if got >= n || full && e.Seq > take[n-1].Seq {
				return rm.ErrStopIteration
			}
			if e.Seq != h.Seq {
				due, err := o.due(tx, webhook, e, now)
				if dueErr = err; err != nil || !due {
					return rm.ErrStopIteration
				}
			}
			take = append(take, e)
			got++
			return nil
		})
		if err = errors.Join(err, dueErr); err != nil {
			return nil, err
		}
		slices.SortFunc(take, bySeq)
		take = take[:min(len(take), n)]
	}
	return take, nil
}

// Complete records the delivery of rows token claimed, in one transaction, and
// returns each one's outcome, in the order of seqs: delivered (the row is deleted),
// fenced or parked. A delivery completed after its claim's lease ran out is the
// fence: it is not recorded, the row is delivered again, and the receiver sees the
// event twice; the attempt counts toward MaxAttempts and backs off like a failure,
// unless another claim holds the row by now (its own attempt will count). A row no
// longer there (dropped by the outbox's bound) is delivered.
func (o *Outbox) Complete(webhook, token string, seqs []uint64) ([]string, error) {
	out := make([]string, len(seqs))
	err := o.Store.Update(func(tx rm.Tx) error {
		now := o.now()
		for i, seq := range seqs {
			r, found, err := tx.OutboxRow(webhook, seq)
			switch {
			case err != nil:
				return err
			case !found:
				out[i] = OutcomeDelivered
			case o.held(&r, token, now):
				out[i] = OutcomeDelivered
				err = tx.DeleteOutbox(webhook, seq)
			case o.leased(&r, now):
				out[i] = OutcomeFenced // another claim's: its attempt counts
			default:
				out[i] = o.failed(&r, now, fmt.Sprintf("delivered, but after the claim's lease (%s) ran out: not recorded (fenced), sent again", o.lease()))
				if out[i] == OutcomeFailed {
					out[i] = OutcomeFenced
				}
				err = tx.PutOutbox(r)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
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

// Fail records a failed attempt of a row token claimed: the claim is released, the
// row backs off (Backoff doubled per attempt, at most MaxBackoff), and after
// MaxAttempts it is parked. It returns the outcome: failed or parked; fenced when
// another claim holds the row by now (nothing is recorded then: that claim's attempt
// counts) or the row is gone. A failure recorded after the claim's lease ran out
// still counts: a receiver slower than the lease must not be retried for ever.
func (o *Outbox) Fail(webhook, token string, seq uint64, reason string) (string, error) {
	outcome := OutcomeFenced
	err := o.Store.Update(func(tx rm.Tx) error {
		outcome = OutcomeFenced
		r, found, err := tx.OutboxRow(webhook, seq)
		now := o.now()
		if err != nil || !found || !o.held(&r, token, now) && o.leased(&r, now) {
			return err
		}
		outcome = o.failed(&r, now, reason)
		return tx.PutOutbox(r)
	})
	return outcome, err
}

// failed records one failed attempt of r at now: released, backing off, parked
// after MaxAttempts. It returns OutcomeFailed or OutcomeParked.
func (o *Outbox) failed(r *rm.OutboxRow, now time.Time, reason string) string {
	r.Attempts++
	r.LastError = reason
	r.ClaimToken, r.LeaseUntil = "", time.Time{}
	r.NextAttempt = now.Add(o.backoff(r.Attempts))
	if r.Attempts >= o.maxAttempts() {
		r.Parked = true
		return OutcomeParked
	}
	return OutcomeFailed
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
		err := tx.OutboxParked(webhook, func(r rm.OutboxRow) error {
			if len(seqs) == 0 || want[r.Seq] {
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
	// Dropped counts the rows dropped undelivered by the webhook's max_rows, ever;
	// LastDropped is the seq of the last of them (the feed may still hold it).
	Dropped, LastDropped uint64
}

// OutboxStats returns the figures of every webhook with rows, or rows dropped, by
// name. It reads the store's counts and each conversation's first pending row, not
// the rows.
func OutboxStats(tx rm.Tx) (map[string]Stats, error) {
	out := map[string]Stats{}
	err := tx.OutboxCounts(func(name string, c rm.OutboxCounts) error {
		if c.Pending+c.Parked == 0 && c.Dropped == 0 {
			return nil
		}
		s := Stats{Pending: c.Pending, Parked: c.Parked, Dropped: c.Dropped, LastDropped: c.LastDropped}
		err := tx.OutboxHeads(name, func(h rm.OutboxEntry) error {
			if !h.Enqueued.IsZero() && (s.OldestPending.IsZero() || h.Enqueued.Before(s.OldestPending)) {
				s.OldestPending = h.Enqueued
			}
			return nil
		})
		out[name] = s
		return err
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
	walk := tx.Outbox
	if parkedOnly {
		walk = func(webhook string, fn func(rm.OutboxRow) error) error { return parkedRows(tx, webhook, fn) }
	}
	err := walk(webhook, func(r rm.OutboxRow) error {
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

// parkedRows calls fn for the parked rows of webhook, or of every webhook ("") by
// name, from the store's index of parked rows; fn's ErrStopIteration ends the walk.
func parkedRows(tx rm.Tx, webhook string, fn func(rm.OutboxRow) error) error {
	if webhook != "" {
		return tx.OutboxParked(webhook, fn)
	}
	stop := false
	err := tx.OutboxCounts(func(name string, c rm.OutboxCounts) error {
		if stop {
			return rm.ErrStopIteration
		}
		if c.Parked == 0 {
			return nil
		}
		return tx.OutboxParked(name, func(r rm.OutboxRow) error {
			if err := fn(r); err != nil {
				stop = errors.Is(err, rm.ErrStopIteration)
				return err
			}
			return nil
		})
	})
	if stop {
		return nil
	}
	return err
}
