package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/slackpoll/slackpoll/config"
	"github.com/slackpoll/slackpoll/internal/changefeed"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Hook is one configured receiver.
type Hook struct {
	// Name keys the hook's outbox rows; URL receives the POSTs.
	Name string
	URL  *url.URL
	// Keys sign every delivery (Sign): one webhook-signature entry each, so that a
	// receiver holding any of them accepts it while a secret is rotated.
	Keys [][]byte
	// LegacyKey, if set, also signs the deprecated X-Slackpoll-* headers
	// (SignLegacy): set while the webhook has a plain secret, as earlier releases
	// took, so that a receiver written for them goes on working.
	LegacyKey []byte
	// Timeout bounds one POST (default 10s).
	Timeout time.Duration
	// Outbox holds the hook's rows and its lease, backoff and attempt rules.
	Outbox *changefeed.Outbox
}

// TimeoutOrDefault is Timeout, or its default (10s) when unset.
func (h *Hook) TimeoutOrDefault() time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	return changefeed.DefaultDeliveryTimeout
}

// Deliverer POSTs outbox rows to their hooks. Run loops; Sweep is one pass, and the
// only code path: Wake (after a tick wrote changes) and the periodic timer of Run both
// lead to it.
type Deliverer struct {
	Hooks []Hook
	// Client sends the POSTs (default: one that follows no redirect).
	Client *http.Client
	Log    *slog.Logger
	// Batch is how many rows one claim takes (default 50); Every is the period of
	// the sweep that retries failed rows and frees expired claims (default 5s).
	Batch int
	Every time.Duration
	// OnOutcome, if set, is called after every attempt with the hook name and its
	// outcome (changefeed.Outcome*), for metrics.
	OnOutcome func(hook, outcome string)
	// Now is the clock of webhook-timestamp, which a receiver checks against its own
	// clock: the daemon's is Slack's time (slackapi.Client.SlackNow), so that a local
	// clock gone wrong does not get every delivery refused. Default time.Now.
	Now func() time.Time

	once sync.Once
	wake chan struct{}
	// dropped is, per hook, the count of rows dropped by its max_rows last logged.
	mu      sync.Mutex
	dropped map[string]uint64
}

func (d *Deliverer) init() {
	d.once.Do(func() {
		d.wake = make(chan struct{}, 1)
		if d.Client == nil {
			d.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		}
		if d.Log == nil {
			d.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
		}
		if d.Batch <= 0 {
			d.Batch = 50
		}
		if d.Every <= 0 {
			d.Every = 5 * time.Second
		}
		if d.Now == nil {
			d.Now = time.Now
		}
	})
}

// Wake asks Run for a sweep now; it never blocks.
func (d *Deliverer) Wake() {
	d.init()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run sweeps when woken and every Every until ctx ends; it returns nil then.
func (d *Deliverer) Run(ctx context.Context) error {
	d.init()
	t := time.NewTicker(d.Every)
	defer t.Stop()
	for {
		d.Sweep(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-d.wake:
		case <-t.C:
		}
	}
}

// Sweep delivers what each hook can take now: claim a batch, POST it in seq order,
// repeat while a batch delivered something. Hooks are swept concurrently; a slow
// receiver delays only its own hook.
func (d *Deliverer) Sweep(ctx context.Context) {
	d.init()
	var wg sync.WaitGroup
	for i := range d.Hooks {
		wg.Go(func() { d.sweepHook(ctx, &d.Hooks[i]) })
	}
	wg.Wait()
}

func (d *Deliverer) sweepHook(ctx context.Context, h *Hook) {
	d.noteDropped(h)
	for ctx.Err() == nil {
		token := newToken()
		rows, err := h.Outbox.Claim(h.Name, token, d.Batch)
		if err != nil {
			d.Log.Error("webhook: claim failed", "webhook", h.Name, "err", err)
			return
		}
		if len(rows) == 0 {
			return
		}
		if d.deliverBatch(ctx, h, token, rows) == 0 {
			// Nothing went through: the periodic sweep tries again after the
			// backoff. Claiming again at once would spin while a receiver fails
			// or answers after the lease.
			return
		}
	}
}

// deliverBatch POSTs the rows of one claim in seq order and records the outcomes; it
// returns how many were delivered. A failure holds back the later rows of its
// conversation. Deliveries are recorded together — when the batch ends, and before
// half the lease is gone — rather than one transaction (one fsync) each: after a
// crash, those of the batch not recorded yet are delivered again, which at least
// once allows.
func (d *Deliverer) deliverBatch(ctx context.Context, h *Hook, token string, rows []rm.OutboxRow) int {
	delivered := 0
	var done []uint64           // delivered, not recorded yet
	failed := map[string]bool{} // conversations whose order a failure holds back
	var held []uint64           // their later rows in this batch
	flush := func() {
		if len(done) > 0 {
			delivered += d.complete(h, token, done)
			done = done[:0]
		}
	}
	for i := range rows {
		r := &rows[i]
		if ctx.Err() != nil || h.Outbox.Expired(r) {
			break // the rest of the batch is claimed again, in order (or freed by its lease)
		}
		if failed[r.Change.Channel] {
			held = append(held, r.Seq)
			continue
		}
		if err := d.post(ctx, h, &r.Change); err != nil {
			if ctx.Err() != nil {
				break // shutting down: the lease frees the row, no attempt is counted
			}
			failed[r.Change.Channel] = true
			d.fail(ctx, h, token, r, err)
			continue
		}
		done = append(done, r.Seq)
		if h.Outbox.Left(r) < h.Outbox.LeaseOrDefault()/2 {
			flush()
		}
	}
	flush()
	// Rows held back behind a failure are let go now rather than when their lease
	// runs out: once the failed row parks or its backoff ends, they go at the next
	// sweep. (The lease would free them too; this only saves the wait.)
	if len(held) > 0 {
		if err := h.Outbox.Release(h.Name, token, held); err != nil {
			d.Log.Warn("webhook: releasing rows held behind a failure failed; their lease frees them", "webhook", h.Name, "err", err)
		}
	}
	return delivered
}

// complete records the deliveries of seqs and reports each outcome; it returns how
// many were recorded as delivered.
func (d *Deliverer) complete(h *Hook, token string, seqs []uint64) int {
	outcomes, err := h.Outbox.Complete(h.Name, token, seqs)
	if err != nil {
		d.Log.Error("webhook: recording deliveries failed; they will be delivered again", "webhook", h.Name, "rows", len(seqs), "err", err)
		for range seqs {
			d.outcome(h, changefeed.OutcomeFenced)
		}
		return 0
	}
	n := 0
	for i, o := range outcomes {
		switch o {
		case changefeed.OutcomeDelivered:
			n++
		default:
			d.Log.Warn("webhook: delivered after the claim's lease expired; the completion is refused and the event will be delivered again (receivers dedupe on its id)",
				"webhook", h.Name, "seq", seqs[i], "outcome", o, "lease", h.Outbox.LeaseOrDefault())
		}
		d.outcome(h, o)
	}
	return n
}

// fail records a failed POST of r.
func (d *Deliverer) fail(ctx context.Context, h *Hook, token string, r *rm.OutboxRow, err error) {
	outcome, ferr := h.Outbox.Fail(h.Name, token, r.Seq, err.Error())
	if ferr != nil {
		d.Log.Error("webhook: recording a failed delivery failed", "webhook", h.Name, "seq", r.Seq, "err", ferr)
	}
	level := slog.LevelWarn
	if outcome == changefeed.OutcomeParked {
		level = slog.LevelError
	}
	d.Log.Log(ctx, level, "webhook: delivery failed", "webhook", h.Name, "seq", r.Seq, "outcome", outcome, "attempt", r.Attempts+1, "err", err)
	d.outcome(h, outcome)
}

func (d *Deliverer) outcome(h *Hook, outcome string) {
	if d.OnOutcome != nil {
		d.OnOutcome(h.Name, outcome)
	}
}

// noteDropped logs the rows the outbox's bound dropped since the last sweep (the
// writer drops them, in the transaction that adds rows over max_rows).
func (d *Deliverer) noteDropped(h *Hook) {
	c, err := h.Outbox.Counts(h.Name)
	if err != nil {
		d.Log.Error("webhook: reading the outbox counts failed", "webhook", h.Name, "err", err)
		return
	}
	d.mu.Lock()
	seen, known := d.dropped[h.Name]
	if d.dropped == nil {
		d.dropped = map[string]uint64{}
	}
	d.dropped[h.Name] = c.Dropped
	d.mu.Unlock()
	switch {
	case !known && c.Dropped > 0:
		d.Log.Warn("webhook: rows were dropped undelivered before, over max_rows (the change feed holds them until changes.retention)",
			"webhook", h.Name, "dropped", c.Dropped, "last_dropped_seq", c.LastDropped)
	case known && c.Dropped > seen:
		d.Log.Warn("webhook: the outbox is over max_rows: its oldest rows were dropped undelivered (the change feed holds them until changes.retention: read them with GET /v1/changes)",
			"webhook", h.Name, "dropped", c.Dropped-seen, "last_dropped_seq", c.LastDropped, "pending", c.Pending, "parked", c.Parked)
	}
}

// post sends one change; only a 2xx answer is a delivery.
func (d *Deliverer) post(ctx context.Context, h *Hook, c *rm.Change) error {
	body, err := json.Marshal(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, h.TimeoutOrDefault())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	setHeaders(req.Header, h, c.ID, d.Now().Unix(), body)
	resp, err := d.Client.Do(req)
	if err != nil {
		// The URL may carry credentials: errors name it redacted.
		if uerr, ok := err.(*url.Error); ok {
			return fmt.Errorf("POST %s: %w", config.RedactURL(h.URL), uerr.Err)
		}
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: HTTP %d", config.RedactURL(h.URL), resp.StatusCode)
	}
	return nil
}

// setHeaders sets the headers of a delivery of event id signed at timestamp (unix
// seconds): the Standard Webhooks ones, and the deprecated ones for a hook with a
// LegacyKey.
func setHeaders(hdr http.Header, h *Hook, id string, timestamp int64, body []byte) {
	ts := strconv.FormatInt(timestamp, 10)
	hdr.Set("Content-Type", "application/json")
	hdr.Set("User-Agent", "slackpoll-webhook/1")
	hdr.Set(HeaderID, id)
	hdr.Set(HeaderTimestamp, ts)
	hdr.Set(HeaderSignature, Sign(h.Keys, id, timestamp, body))
	if h.LegacyKey != nil {
		hdr.Set(LegacyHeaderEventID, id)
		hdr.Set(LegacyHeaderTimestamp, ts)
		hdr.Set(LegacyHeaderSignature, SignLegacy(h.LegacyKey, timestamp, body))
	}
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
