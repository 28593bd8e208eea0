package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/slackpoll/slackpoll/config"
	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/status"
)

// searchFlags are the flags of search.
type searchFlags struct {
	channel, user, after, before, record, cursor string
	limit                                        int
}

func searchFlagSet(fs *pflag.FlagSet, c *cmdCtx) {
	fs.StringVar(&c.search.channel, "channel", "", "only this conversation's messages")
	fs.StringVar(&c.search.user, "user", "", "only this user's messages (ID, or the name shown)")
	fs.StringVar(&c.search.after, "after", "", "only messages after this ts, RFC 3339 time or date (2026-12-01)")
	fs.StringVar(&c.search.before, "before", "", "only messages before this ts, RFC 3339 time or date")
	fs.StringVar(&c.search.record, "record", "", "only the message of this record key and its thread's replies")
	fs.IntVar(&c.search.limit, "limit", projection.DefaultLimit, fmt.Sprintf("hits per page (at most %d)", projection.MaxLimit))
	fs.StringVar(&c.search.cursor, "cursor", "", "the next page: the cursor the previous page printed")
	fs.BoolVar(&c.jsonOut, "json", false, "print the page as JSON ({\"items\": […], \"next_cursor\": \"…\"})")
}

// cmdSearch is `slackpoll search QUERY…`: full-text search of the SQL projection,
// newest first, through the running daemon's API or, with no daemon, from the
// projection's file (or Postgres) directly.
func cmdSearch(ctx context.Context, c *cmdCtx) error {
	cfg, err := c.loadConfig()
	if err != nil {
		return err
	}
	f := c.search
	if f.limit < 1 || f.limit > projection.MaxLimit {
		return usageErr("search: --limit %d: want 1 to %d", f.limit, projection.MaxLimit)
	}
	q := projection.Query{Q: strings.Join(c.args, " "), Channel: f.channel, User: f.user, Record: f.record, Limit: f.limit, Cursor: f.cursor}
	if q.After, err = projection.ParseBound(f.after); err != nil {
		return usageErr("search: --after: %v", err)
	}
	if q.Before, err = projection.ParseBound(f.before); err != nil {
		return usageErr("search: --before: %v", err)
	}
	r, err := openReader(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }() // read-only
	var page projection.Page
	if r.api != nil {
		err = r.api.get("/v1/search?"+searchValues(q).Encode(), &page)
	} else {
		page, err = searchOffline(ctx, c, cfg, r.store, q)
	}
	if errors.Is(err, projection.ErrBadQuery) || errors.Is(err, projection.ErrBadCursor) {
		return usageErr("search: %v", err)
	}
	if err != nil {
		return err
	}
	if c.jsonOut {
		enc := json.NewEncoder(c.env.Stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(page)
	}
	return writeHits(c, page)
}

// searchValues is the query string of GET /v1/search for q. Channel, when set, is
// sent alone (callers that set Channels too keep Channel within them), else each of
// Channels.
func searchValues(q projection.Query) url.Values {
	v := url.Values{"q": {q.Q}, "limit": {strconv.Itoa(q.Limit)}}
	for k, s := range map[string]string{"user": q.User, "record": q.Record, "cursor": q.Cursor, "after": string(q.After), "before": string(q.Before)} {
		if s != "" {
			v.Set(k, s)
		}
	}
	channels := q.Channels
	if q.Channel != "" {
		channels = []string{q.Channel}
	}
	for _, ch := range channels {
		v.Add("channel", ch)
	}
	return v
}

// searchOffline searches the projection's database directly: SQLite when it is on,
// else Postgres. A note about its lag goes to stderr.
func searchOffline(ctx context.Context, c *cmdCtx, cfg *config.Config, store rm.Store, q projection.Query) (projection.Page, error) {
	var fr projection.Freshness
	err := store.View(func(tx rm.Tx) error {
		var err error
		fr, err = status.Freshness(tx, cfg.Tick.Interval.D(), time.Now())
		return err
	})
	if err != nil {
		return projection.Page{}, err
	}
	page, lag, err := searchProjection(ctx, cfg, store, q, fr)
	if lag > 0 {
		fmt.Fprintf(c.env.Stderr, "slackpoll: note: the projection is %d changes behind the store; the daemon brings it up to date when it starts\n", lag)
	}
	return page, err
}

// searchProjection searches the projection's database, opened read-only for the
// search, with the freshness fr; lag is how many changes of store's feed it has not
// applied (the daemon applies them when it starts). slackpoll search and, with no
// daemon, slackpoll mcp search this way.
func searchProjection(ctx context.Context, cfg *config.Config, store rm.Store, q projection.Query, fr projection.Freshness) (page projection.Page, lag uint64, err error) {
	t, err := openProjectionReader(ctx, cfg)
	if err != nil {
		return projection.Page{}, 0, err
	}
	defer func() { _ = t.Close() }()
	st, err := projection.Offline(ctx, store, t)
	if err != nil {
		return projection.Page{}, 0, err
	}
	if st.TeamID == "" {
		return projection.Page{}, 0, projection.ErrNoTeam
	}
	page, err = t.Search(ctx, st.TeamID, q, fr)
	return page, st.LagSeq, err
}

// openProjectionReader opens the configured projection read-only: SQLite when it
// is on, else Postgres.
func openProjectionReader(ctx context.Context, cfg *config.Config) (*projection.Target, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	switch {
	case cfg.Projection.SQLite.Enabled:
		return projection.OpenSQLiteReader(ctx, cfg.SQLitePath())
	case cfg.Projection.Postgres.DSN.IsSet():
		return projection.OpenPostgresReader(ctx, cfg.Projection.Postgres.DSN.Reveal(), cfg.Projection.Postgres.Schema)
	}
	return nil, projection.ErrNoProjection
}

// writeHits prints hits for a reader: where and when, who, the snippet, and how
// fresh it is.
func writeHits(c *cmdCtx, page projection.Page) error {
	now := time.Now()
	for _, h := range page.Items {
		flags := ""
		if h.Deleted {
			flags += " [deleted]"
		}
		if h.MissingSince != nil {
			flags += " [missing]"
		}
		fmt.Fprintf(c.env.Stdout, "%s %s  %s  %s: %s%s\n", h.Channel, h.TS, h.PostedAt.Format(time.RFC3339), h.UserLabel, h.Snippet, flags)
		polled := "never read"
		if h.LastPolledAt != nil {
			polled = fmt.Sprintf("read %s (%s ago)", h.LastPolledAt.Format(time.RFC3339), now.Sub(*h.LastPolledAt).Round(time.Second))
		}
		fresh := h.Class + ", not re-read"
		if h.Class != projection.ClassUntracked {
			fresh = h.Class + ", staleness unknown yet"
			if h.StalenessSeconds != nil {
				fresh = fmt.Sprintf("%s: stale by at most %s", h.Class, time.Duration(*h.StalenessSeconds*float64(time.Second)).Round(time.Second))
			}
		}
		fmt.Fprintf(c.env.Stdout, "    %s; %s\n", polled, fresh)
	}
	if len(page.Items) == 0 {
		fmt.Fprintln(c.env.Stdout, "no message found")
	}
	if page.NextCursor != "" {
		fmt.Fprintf(c.env.Stdout, "more: add --cursor %s\n", page.NextCursor)
	}
	return nil
}
