package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/status"
)

// Projections is the SQL projection as the API serves it (projection.Runner):
// search, the targets' status, and rebuilds on request.
type Projections interface {
	Statuses() []projection.Status
	Search(ctx context.Context, q projection.Query, f projection.Freshness) (projection.Page, error)
	RequestRebuild() int
}

// search answers GET /v1/search?q=&channel=&user=&after=&before=&record=&limit=&cursor=
// (channel: one or more conversations, repeated or comma-separated)
// with {"items": [hits], "next_cursor": "…"}, newest first (projection.Hit): 400 for
// a query that cannot be searched or a bad parameter, 503 while no projection is
// open.
func (a *api) search(w http.ResponseWriter, r *http.Request) {
	if a.projections == nil {
		writeError(w, http.StatusServiceUnavailable, "search needs the SQL projection, which this daemon does not run (projection: in the config)")
		return
	}
	v := r.URL.Query()
	q := projection.Query{Q: v.Get("q"), User: v.Get("user"), Record: v.Get("record"), Cursor: v.Get("cursor")}
	// channel is one conversation, or several (repeated, or comma-separated).
	for _, c := range v["channel"] {
		for ch := range strings.SplitSeq(c, ",") {
			if ch = strings.TrimSpace(ch); ch != "" {
				q.Channels = append(q.Channels, ch)
			}
		}
	}
	var err error
	if q.After, err = projection.ParseBound(v.Get("after")); err != nil {
		writeError(w, http.StatusBadRequest, "after: %v", err)
		return
	}
	if q.Before, err = projection.ParseBound(v.Get("before")); err != nil {
		writeError(w, http.StatusBadRequest, "before: %v", err)
		return
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > projection.MaxLimit {
			writeError(w, http.StatusBadRequest, "limit %.20q: want a whole number from 1 to %d", s, projection.MaxLimit)
			return
		}
		q.Limit = n
	}
	var f projection.Freshness
	err = a.store.View(func(tx rm.Tx) error {
		var err error
		f, err = status.Freshness(tx, a.interval, a.now())
		return err
	})
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	page, err := a.projections.Search(r.Context(), q, f)
	switch {
	case errors.Is(err, projection.ErrBadQuery), errors.Is(err, projection.ErrBadCursor):
		writeError(w, http.StatusBadRequest, "%v", err)
	case errors.Is(err, projection.ErrNoProjection), errors.Is(err, projection.ErrNoTeam):
		writeError(w, http.StatusServiceUnavailable, "%v", err)
	case err != nil:
		a.log.Error("http api: search failed", "err", err)
		writeError(w, http.StatusInternalServerError, "search failed (see the daemon's log)")
	default:
		writeJSON(w, http.StatusOK, page)
	}
}

// rebuild answers POST /v1/projection/rebuild: every open projection drops its rows
// and is written again from the store, in one transaction; {"rebuilding": n} (the
// rebuild runs on: its progress is in the status report), or 503 when none is open.
func (a *api) rebuild(w http.ResponseWriter, _ *http.Request) {
	n := 0
	if a.projections != nil {
		n = a.projections.RequestRebuild()
	}
	if n == 0 {
		writeError(w, http.StatusServiceUnavailable, "no SQL projection is open (see slackpoll status)")
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"rebuilding": n})
}
