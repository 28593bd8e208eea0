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
	// Secret signs every delivery (Sign).
	Secret []byte
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
	// Stamp is the time a delivery is signed with (X-Slackpoll-Timestamp), which a
	// receiver checks against its own clock: the daemon's is Slack's time
	// (slackapi.Client.SlackNow), so that a local clock gone wrong does not get
	// every delivery refused. Default time.Now.
	Stamp func() time.Time

	once sync.Once
	wake chan struct{}
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
		if d.Stamp == nil {
			d.Stamp = time.Now
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
		delivered := 0
		failed := map[string]bool{} // conversations whose order a failure holds back
		var held []uint64           // their later rows in this batch
		for _, r := range rows {
			if ctx.Err() != nil {
				return // the rows' lease frees them
			}
			if h.Outbox.Expired(&r) {
				break // the rest of the batch is claimed again, in order
			}
			if failed[r.Change.Channel] {
				held = append(held, r.Seq)
				continue
			}
			if d.attempt(ctx, h, token, &r) == changefeed.OutcomeDelivered {
				delivered++
			} else {
				failed[r.Change.Channel] = true
			}
		}
		// Rows held back behind a failure are let go now rather than when their lease
		// runs out: once the failed row parks or its backoff ends, they go at the next
		// sweep. (The lease would free them too; this only saves the wait.)
		if len(held) > 0 {
			if err := h.Outbox.Release(h.Name, token, held); err != nil {
				d.Log.Warn("webhook: releasing rows held behind a failure failed; their lease frees them", "webhook", h.Name, "err", err)
			}
		}
		if delivered == 0 && !h.Outbox.Expired(&rows[len(rows)-1]) {
			return // the periodic sweep retries after the backoff
		}
	}
}

// attempt POSTs one row and records the outcome in the outbox.
func (d *Deliverer) attempt(ctx context.Context, h *Hook, token string, r *rm.OutboxRow) string {
	err := d.post(ctx, h, &r.Change)
	outcome := changefeed.OutcomeDelivered
	if err == nil {
		ok, cerr := h.Outbox.Complete(h.Name, token, r.Seq)
		switch {
		case cerr != nil:
			d.Log.Error("webhook: recording a delivery failed; it will be delivered again", "webhook", h.Name, "seq", r.Seq, "err", cerr)
			outcome = changefeed.OutcomeFenced
		case !ok:
			d.Log.Warn("webhook: delivered after the claim's lease expired; the completion is refused and the event will be delivered again (receivers dedupe on its id)",
				"webhook", h.Name, "seq", r.Seq, "id", r.Change.ID)
			outcome = changefeed.OutcomeFenced
		}
	} else {
		if ctx.Err() != nil {
			return changefeed.OutcomeFailed // shutting down: the lease frees the row, no attempt is counted
		}
		var ferr error
		outcome, ferr = h.Outbox.Fail(h.Name, token, r.Seq, err.Error())
		if ferr != nil {
			d.Log.Error("webhook: recording a failed delivery failed", "webhook", h.Name, "seq", r.Seq, "err", ferr)
		}
		level := slog.LevelWarn
		if outcome == changefeed.OutcomeParked {
			level = slog.LevelError
		}
		d.Log.Log(ctx, level, "webhook: delivery failed", "webhook", h.Name, "seq", r.Seq, "outcome", outcome, "attempt", r.Attempts+1, "err", err)
	}
	if d.OnOutcome != nil {
		d.OnOutcome(h.Name, outcome)
	}
	return outcome
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
	ts := d.Stamp().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "slackpoll-webhook/1")
	req.Header.Set(HeaderEventID, c.ID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(h.Secret, ts, body))
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

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
