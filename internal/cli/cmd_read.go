package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/slackpoll/slackpoll/internal/httpapi"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// cmdExport is `slackpoll export`: the whole read model as JSON Lines on stdout
// (README, "Commands" (export)), from the store file, or from the daemon's API
// (GET /v1/export) while it holds the store.
func cmdExport(ctx context.Context, c *cmdCtx) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	r, err := openReader(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }() // read-only: nothing to lose on close
	if r.api != nil {
		_, h, err := r.api.stream("/v1/export", c.env.Stdout)
		if err != nil {
			return err
		}
		// Named as the export from the store file names them: everything else is out.
		if bad, err := undecodableOf(h); err != nil || len(bad) > 0 {
			return errors.Join(err, undecodableErr(bad))
		}
		return nil
	}
	return r.store.View(func(tx rm.Tx) error { return rm.Export(tx, c.env.Stdout, cfg.Conversations) })
}

// undecodableErr is the export's error for the records it skipped; nil for none.
func undecodableErr(records []string) error {
	if len(records) == 0 {
		return nil
	}
	return &rm.UndecodableError{Records: records}
}

// cmdTrack is `slackpoll track [--record KEY] CHANNEL TS|LINK`: adds the message to the
// tracked set (created in the store if needed); the next tick reads it. While the
// daemon holds the store, it asks the daemon's API (POST /v1/tracked).
func cmdTrack(ctx context.Context, c *cmdCtx) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	ref, err := parseMessageRef(c.args)
	if err != nil {
		return usageErr("track: %v", err)
	}
	ch, ts := ref.Channel, ref.TS
	w, err := openWriter(cfg, "track", c.env.Stderr)
	if err != nil {
		return err
	}
	defer func() { _ = w.Close() }() // Track committed in its own transaction
	if w.api != nil {
		var line rm.MessageLine
		err = w.api.post("/v1/tracked", httpapi.TrackRequest{Channel: ch, TS: string(ts), Record: c.record}, &line)
	} else {
		err = rm.TrackPolled(w.store, cfg.Conversations, ch, ts, c.record)
	}
	if errors.Is(err, rm.ErrNotPolled) || errors.Is(err, rm.ErrBadRecord) {
		return &exitError{ExitUsage, err}
	}
	if err != nil {
		var ae *apiError
		if errors.Is(err, rm.ErrRecordConflict) || errors.As(err, &ae) {
			return fmt.Errorf("track: %w", err)
		}
		return err
	}
	fmt.Fprintf(c.env.Stdout, "tracking %s %s", ch, ts)
	if c.record != "" {
		fmt.Fprintf(c.env.Stdout, " as %s", c.record)
	}
	fmt.Fprintln(c.env.Stdout)
	return nil
}

// cmdUntrack is `slackpoll untrack CHANNEL TS`: readmodel.Untrack, in the store file
// or, while the daemon holds it, through its API (DELETE /v1/tracked/{channel}/{ts}).
func cmdUntrack(ctx context.Context, c *cmdCtx) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	ch := c.args[0]
	ts, err := rm.ParseTS(c.args[1])
	if err != nil {
		return usageErr("untrack: %v", err)
	}
	if !rm.ValidConversationID(ch) {
		return usageErr("untrack: %q is not a Slack conversation ID (C…, G… or D…)", ch)
	}
	w, err := openWriter(cfg, "untrack", c.env.Stderr)
	if err != nil {
		return err
	}
	defer func() { _ = w.Close() }() // Untrack committed in its own transaction
	if w.api != nil {
		var resp httpapi.UntrackResponse
		err = w.api.do(http.MethodDelete, "/v1/tracked/"+url.PathEscape(ch)+"/"+url.PathEscape(string(ts)), nil, &resp)
	} else {
		err = rm.Untrack(w.store, ch, ts)
	}
	if err != nil {
		return fmt.Errorf("untrack: %w", err)
	}
	fmt.Fprintf(c.env.Stdout, "untracked %s %s\n", ch, ts)
	return nil
}

// cmdRetry is `slackpoll retry [CHANNEL...]`: readmodel.Retry, in the store file or,
// while the daemon holds it, through its API (POST /v1/conversations/retry).
func cmdRetry(ctx context.Context, c *cmdCtx) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	for _, ch := range c.args {
		if !rm.ValidConversationID(ch) {
			return usageErr("retry: %q is not a Slack conversation ID (C…, G… or D…)", ch)
		}
	}
	w, err := openWriter(cfg, "retry", c.env.Stderr)
	if err != nil {
		return err
	}
	defer func() { _ = w.Close() }() // Retry committed in its own transaction
	var due []string
	if w.api != nil {
		var resp httpapi.RetryResponse
		err = w.api.post("/v1/conversations/retry", httpapi.RetryRequest{Channels: c.args}, &resp)
		due = resp.Channels
	} else {
		due, err = rm.Retry(w.store, c.args)
	}
	if err != nil {
		return fmt.Errorf("retry: %w", err)
	}
	if len(due) == 0 {
		fmt.Fprintln(c.env.Stdout, "no conversation waits for a retry")
		return nil
	}
	fmt.Fprintf(c.env.Stdout, "retrying at the next tick: %s\n", strings.Join(due, ", "))
	return nil
}
