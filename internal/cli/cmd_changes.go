package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/slackpoll/slackpoll/config"
	"github.com/slackpoll/slackpoll/internal/changefeed"
	"github.com/slackpoll/slackpoll/internal/httpapi"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// feedFlags are the flags of changes, outbox and requeue.
type feedFlags struct {
	after                    uint64
	follow                   bool
	kinds, channels, records []string
	own                      string
	webhook                  string
	parked                   bool
	drop                     bool // outbox --drop: the rows of a webhook no longer configured
}

func changesFlags(fs *pflag.FlagSet, c *cmdCtx) {
	fs.Uint64Var(&c.feed.after, "after", 0, "print the changes after this seq (the last seq you processed)")
	fs.BoolVar(&c.feed.follow, "follow", false, "keep printing new changes as the running daemon writes them (needs http.listen)")
	fs.StringSliceVar(&c.feed.kinds, "kind", nil, "only these change kinds (repeatable or comma-separated)")
	fs.StringSliceVar(&c.feed.channels, "channel", nil, "only these conversation IDs")
	fs.StringSliceVar(&c.feed.records, "record", nil, "only changes of messages with these record keys")
	fs.StringVar(&c.feed.own, "own", "", "true: only the app's own posts and reactions; false: only others'")
}

// followWait is the long poll of changes --follow.
const followWait = 30 * time.Second

// cmdChanges is `slackpoll changes [--after SEQ] [--follow] [filters]`: the change
// feed as JSON Lines, one change per line, in seq order (README, "Change feed"). From
// the store file, or from the daemon's API while it holds the store; --follow long
// polls the API until interrupted.
func cmdChanges(ctx context.Context, c *cmdCtx) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	q := changefeed.FilterQuery(rm.ChangeFilter{Kinds: c.feed.kinds, Channels: c.feed.channels, Records: c.feed.records})
	if c.feed.own != "" {
		q.Set("own", c.feed.own)
	}
	f, err := changefeed.ParseFilter(q)
	if err != nil {
		return usageErr("changes: %v", err)
	}
	r, err := openReader(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }() // read-only
	enc := json.NewEncoder(c.env.Stdout)
	enc.SetEscapeHTML(false)
	after := c.feed.after
	var lost time.Time // when the daemon stopped answering a follow; zero while it answers
	for {
		var p changefeed.Page
		if r.api != nil {
			p, err = r.api.changes(ctx, after, q, c.feed.follow)
			if c.feed.follow && ctx.Err() == nil && errors.Is(err, errAPIUnreachable) {
				// The daemon restarts (an upgrade, a crash, a SIGHUP turned into a
				// restart): wait for it and go on after the last seq printed.
				if lost.IsZero() {
					lost = time.Now()
					fmt.Fprintf(c.env.Stderr, "slackpoll: changes --follow: the daemon at %s does not answer (%v); reconnecting, then resuming after seq %d\n", r.api.base, errors.Unwrap(err), after)
				}
				if sleepCtx(ctx, followRetry(time.Since(lost))) != nil {
					return nil
				}
				continue
			}
			if err == nil && !lost.IsZero() {
				fmt.Fprintf(c.env.Stderr, "slackpoll: changes --follow: reconnected after %s; resuming after seq %d\n", time.Since(lost).Round(time.Second), after)
				lost = time.Time{}
			}
		} else {
			err = r.store.View(func(tx rm.Tx) error {
				var err error
				p, err = changefeed.Read(tx, after, 1000, f)
				return err
			})
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil // interrupted while following: a normal end
			}
			return err
		}
		for i := range p.Changes {
			if err := enc.Encode(&p.Changes[i]); err != nil {
				return err
			}
		}
		moved := p.Next > after
		after = p.Next
		switch {
		case moved && p.Next < p.Last:
			continue // more pages
		case !c.feed.follow:
			return nil
		case r.store != nil:
			return fmt.Errorf("changes --follow: no daemon holds store %s, so nothing new will come; printed up to seq %d (start `slackpoll run` with http.listen set, then follow with --after %d)",
				cfg.Store.Path, after, after)
		}
	}
}

// followRetry is the pause before asking again a daemon that stopped answering for
// down: 1 s at first, then longer, at most 10 s.
func followRetry(down time.Duration) time.Duration {
	return min(max(down/4, time.Second), 10*time.Second)
}

// sleepCtx sleeps d or until ctx ends (then its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// changes asks GET /v1/changes once; with wait it is a long poll.
func (c *apiClient) changes(ctx context.Context, after uint64, filter url.Values, wait bool) (changefeed.Page, error) {
	q := url.Values{}
	for k, v := range filter {
		q[k] = v
	}
	q.Set("after", strconv.FormatUint(after, 10))
	q.Set("limit", "1000")
	long := *c
	if wait {
		q.Set("wait", followWait.String())
		hc := *c.hc
		hc.Timeout = followWait + apiTimeout
		long.hc = &hc
	}
	var p changefeed.Page
	err := long.doCtx(ctx, http.MethodGet, "/v1/changes?"+q.Encode(), nil, &p)
	var ae *apiError
	if errors.As(err, &ae) && ae.code == http.StatusGone {
		return p, fmt.Errorf("changes: %s", ae.msg)
	}
	return p, err
}

// cmdOutbox is `slackpoll outbox [--webhook NAME] [--parked]`: the webhooks' rows
// waiting for delivery, as a table (or --json).
func cmdOutbox(ctx context.Context, c *cmdCtx) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	if c.feed.drop {
		return dropOutbox(c, cfg)
	}
	r, err := openReader(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }() // read-only
	var rows []changefeed.RowSummary
	if r.api != nil {
		var l struct {
			Items []changefeed.RowSummary `json:"items"`
		}
		q := url.Values{"webhook": {c.feed.webhook}, "parked": {strconv.FormatBool(c.feed.parked)}}
		err = r.api.get("/v1/outbox?"+q.Encode(), &l)
		rows = l.Items
	} else {
		err = r.store.View(func(tx rm.Tx) error {
			rows, err = changefeed.ListOutbox(tx, c.feed.webhook, c.feed.parked, time.Now(), changefeed.MaxListed)
			return err
		})
	}
	if err != nil {
		return err
	}
	if c.jsonOut {
		enc := json.NewEncoder(c.env.Stdout)
		for i := range rows {
			if err := enc.Encode(&rows[i]); err != nil {
				return err
			}
		}
		if len(rows) == 0 {
			// stdout stays JSON Lines (none); a person is told why it is empty.
			fmt.Fprintln(c.env.Stderr, "slackpoll: outbox: no rows")
		}
		return nil
	}
	held := heldBehind(rows)
	tw := tabwriter.NewWriter(c.env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WEBHOOK\tSEQ\tKIND\tCHANNEL\tSTATE\tATTEMPTS\tWAITING\tLAST ERROR")
	for _, row := range rows {
		state := "due"
		switch {
		case row.Parked:
			state = "parked"
		case row.Claimed:
			state = "claimed"
		case time.Now().Before(row.NextAttempt):
			state = "retry at " + row.NextAttempt.Format(time.RFC3339)
		case held[row.Seq] != 0:
			state = fmt.Sprintf("held (behind seq %d)", held[row.Seq])
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%s\t%s\n", row.Webhook, row.Seq, row.Kind, dashIfEmpty(row.Channel), state,
			row.Attempts, time.Since(row.Enqueued).Round(time.Second), dashIfEmpty(row.LastError))
	}
	switch {
	case len(rows) == 0:
		if c.feed.parked {
			fmt.Fprintln(tw, "(no parked rows)")
		} else {
			fmt.Fprintln(tw, "(no rows: everything was delivered)")
		}
	case len(rows) >= changefeed.MaxListed:
		fmt.Fprintf(tw, "(only the first %d rows are listed; `slackpoll status` counts them all)\n", changefeed.MaxListed)
	}
	return tw.Flush()
}

// heldBehind finds the rows a failing row of their webhook and conversation holds
// back (delivery follows seq order per conversation, README "Push"): seq → the
// failing row's seq. A parked row holds nothing back.
func heldBehind(rows []changefeed.RowSummary) map[uint64]uint64 {
	held := map[uint64]uint64{}
	failing := map[[2]string]uint64{} // webhook, channel → the first failing row's seq
	for _, r := range rows {          // by webhook and seq
		key := [2]string{r.Webhook, r.Channel}
		if first, ok := failing[key]; ok && r.Channel != "" {
			held[r.Seq] = first
			continue
		}
		if !r.Parked && r.Attempts > 0 && r.Channel != "" {
			failing[key] = r.Seq
		}
	}
	return held
}

// dropOutbox is `slackpoll outbox --drop --webhook NAME`: changefeed.DropWebhook,
// in the store file or through the daemon's API (POST /v1/outbox/drop).
func dropOutbox(c *cmdCtx, cfg *config.Config) error {
	if c.feed.webhook == "" {
		return usageErr("outbox --drop: --webhook NAME is required: the webhook no longer configured whose rows to drop")
	}
	w, err := openWriter(cfg, "outbox --drop", c.env.Stderr)
	if err != nil {
		return err
	}
	defer func() { _ = w.Close() }() // DropWebhook committed in its own transaction
	var n int
	if w.api != nil {
		var resp httpapi.DropResponse
		err = w.api.post("/v1/outbox/drop", httpapi.DropRequest{Webhook: c.feed.webhook}, &resp)
		n = resp.Dropped
	} else {
		n, err = changefeed.DropWebhook(w.store, c.feed.webhook, webhookNames(cfg))
	}
	if err != nil {
		return fmt.Errorf("outbox --drop: %w", err)
	}
	fmt.Fprintf(c.env.Stdout, "dropped %d outbox row(s) of webhook %s (the changes stay in the feed)\n", n, c.feed.webhook)
	return nil
}

// cmdRequeue is `slackpoll requeue --webhook NAME [SEQ...]`: parked rows back in line
// (all of the webhook's parked rows without SEQ), with a fresh attempt count.
func cmdRequeue(ctx context.Context, c *cmdCtx) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	var names []string
	for _, w := range cfg.Webhooks {
		names = append(names, w.Name)
	}
	switch {
	case len(names) == 0:
		return usageErr("requeue: %s configures no webhook", cfg.File())
	case c.feed.webhook == "":
		return usageErr("requeue: --webhook NAME is required (configured: %s; see `slackpoll outbox --parked`)", strings.Join(names, ", "))
	case !slices.Contains(names, c.feed.webhook):
		return usageErr("requeue: %s configures no webhook %q (configured: %s)", cfg.File(), c.feed.webhook, strings.Join(names, ", "))
	}
	var seqs []uint64
	for _, a := range c.args {
		s, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			return usageErr("requeue: %q is not a seq (a whole number, as `slackpoll outbox --parked` lists)", a)
		}
		seqs = append(seqs, s)
	}
	w, err := openWriter(cfg, "requeue", c.env.Stderr)
	if err != nil {
		return err
	}
	defer func() { _ = w.Close() }() // Requeue committed in its own transaction
	var n int
	if w.api != nil {
		var resp httpapi.RequeueResponse
		err = w.api.post("/v1/outbox/requeue", httpapi.RequeueRequest{Webhook: c.feed.webhook, Seqs: seqs}, &resp)
		n = resp.Requeued
	} else {
		n, err = (&changefeed.Outbox{Store: w.store}).Requeue(c.feed.webhook, seqs)
	}
	if err != nil {
		return err
	}
	switch {
	case len(seqs) > 0 && n < len(seqs):
		return fmt.Errorf("requeue: requeued %d of the %d rows named: the others are not parked rows of webhook %s (see `slackpoll outbox --parked --webhook %s`)",
			n, len(seqs), c.feed.webhook, c.feed.webhook)
	case n == 0:
		fmt.Fprintf(c.env.Stdout, "webhook %s has no parked row to requeue\n", c.feed.webhook)
		return nil
	}
	fmt.Fprintf(c.env.Stdout, "requeued %d parked row(s) of webhook %s\n", n, c.feed.webhook)
	return nil
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return strings.ReplaceAll(s, "\n", " ")
}
