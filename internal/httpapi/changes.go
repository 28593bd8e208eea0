package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slackpoll/slackpoll/internal/changefeed"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Limits of GET /v1/changes.
const (
	defaultChangesLimit = 100
	maxChangesLimit     = 1000
	// maxChangesWait stays under the server's WriteTimeout (NewServer).
	maxChangesWait = 50 * time.Second
)

// goneBody is the body of a 410: the consumer is behind the feed's retention, or
// its cursor was handed out before a restore (Restore set: the restore point).
type goneBody struct {
	Error   string          `json:"error"`
	Oldest  uint64          `json:"oldest"`
	Restore *rm.FeedRestore `json:"restore,omitempty"`
}

// aheadBody is the body of a 409: the consumer's cursor is past the feed's last seq.
type aheadBody struct {
	Error string `json:"error"`
	Last  uint64 `json:"last"`
}

// changes answers GET /v1/changes?after=SEQ&cursor=&limit=N&wait=30s&kind=&channel=&record=&own=:
// a changefeed.Page ({"items", "next_cursor", "oldest", "last"}) of the changes after
// SEQ in seq order. With wait, an empty
// answer is held until a change arrives or wait passes (a long poll). 410 when the
// changes after SEQ were pruned, or SEQ was handed out before a restore (with the
// restore point), 409 when SEQ is past the last seq.
func (a *api) changes(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	after, err := uintParam(q.Get("after"), 0)
	if err != nil {
		writeError(w, http.StatusBadRequest, "after=%q: want a seq, a whole number >= 0", q.Get("after"))
		return
	}
	// cursor is next_cursor of a previous answer: the seq it goes on after, as
	// after is (the later of the two counts, as oldest and cursor do for messages).
	if c := q.Get("cursor"); c != "" {
		seq, err := strconv.ParseUint(c, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "cursor=%.40q: pass next_cursor of the previous answer unchanged", c)
			return
		}
		after = max(after, seq)
	}
	limit, err := uintParam(q.Get("limit"), defaultChangesLimit)
	if err != nil || limit < 1 || limit > maxChangesLimit {
		writeError(w, http.StatusBadRequest, "limit=%q: want a whole number from 1 to %d", q.Get("limit"), maxChangesLimit)
		return
	}
	var wait time.Duration
	if s := q.Get("wait"); s != "" {
		if wait, err = time.ParseDuration(s); err != nil || wait < 0 || wait > maxChangesWait {
			writeError(w, http.StatusBadRequest, "wait=%q: want a duration from 0s to %s, e.g. 30s", s, maxChangesWait)
			return
		}
	}
	f, err := changefeed.ParseFilter(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	for {
		var p changefeed.Page
		err := a.store.View(func(tx rm.Tx) error {
			var err error
			p, err = changefeed.Read(tx, after, int(limit), f)
			return err
		})
		var gone *changefeed.GoneError
		var ahead *changefeed.AheadError
		var restored *changefeed.RestoredError
		switch {
		case errors.As(err, &restored):
			writeJSON(w, http.StatusGone, goneBody{Error: restored.Error(), Oldest: p.Oldest, Restore: &restored.Restore})
			return
		case errors.As(err, &gone):
			writeJSON(w, http.StatusGone, goneBody{Error: gone.Error(), Oldest: gone.Oldest})
			return
		case errors.As(err, &ahead):
			writeJSON(w, http.StatusConflict, aheadBody{Error: ahead.Error(), Last: ahead.Last})
			return
		case err != nil:
			a.internalError(w, r, err)
			return
		case len(p.Changes) > 0 || wait == 0 || a.notifier == nil:
			writeJSON(w, http.StatusOK, p)
			return
		}
		// Nothing yet: filters may skip what arrives, so the wait goes on from the
		// last seq examined — at once, in a fresh transaction, when the read stopped
		// at its scan bound short of the last seq.
		after = p.Next
		if p.Next < p.Last && ctx.Err() == nil {
			continue
		}
		a.metrics.longPolls.Inc()
		err = a.notifier.Wait(ctx, p.Last)
		a.metrics.longPolls.Dec()
		if err != nil {
			p.Next = after
			writeJSON(w, http.StatusOK, p)
			return
		}
	}
}

func uintParam(s string, def uint64) (uint64, error) {
	if s == "" {
		return def, nil
	}
	return strconv.ParseUint(s, 10, 64)
}

// outbox answers GET /v1/outbox?webhook=&parked=true: the outbox rows by webhook and
// seq, at most 1000.
func (a *api) outbox(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var items []changefeed.RowSummary
	err := a.store.View(func(tx rm.Tx) error {
		var err error
		items, err = changefeed.ListOutbox(tx, q.Get("webhook"), q.Get("parked") == "true", a.now(), changefeed.MaxListed)
		return err
	})
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list[changefeed.RowSummary]{Items: items})
}

// RequeueRequest is the body of POST /v1/outbox/requeue: the parked rows of Webhook
// to put back in line, Seqs or all of them when empty.
type RequeueRequest struct {
	Webhook string   `json:"webhook"`
	Seqs    []uint64 `json:"seqs"`
}

// RequeueResponse is its answer.
type RequeueResponse struct {
	Requeued int `json:"requeued"`
}

func (a *api) requeue(w http.ResponseWriter, r *http.Request) {
	var req RequeueRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "body: want JSON {\"webhook\": \"name\", \"seqs\": [seq, …]}: %v", err)
		return
	}
	switch {
	case req.Webhook == "":
		writeError(w, http.StatusBadRequest, "webhook: want the name of a configured webhook (configured: %s)", strings.Join(a.webhooks, ", "))
		return
	case a.webhooks != nil && !slices.Contains(a.webhooks, req.Webhook):
		// Rows of a webhook no longer configured have no deliverer to go to.
		writeError(w, http.StatusNotFound, "no webhook %q is configured (configured: %s)", req.Webhook, strings.Join(a.webhooks, ", "))
		return
	}
	n, err := (&changefeed.Outbox{Store: a.store}).Requeue(req.Webhook, req.Seqs)
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	if n > 0 && a.onRequeue != nil {
		a.onRequeue()
	}
	writeJSON(w, http.StatusOK, RequeueResponse{Requeued: n})
}

// DropRequest is the body of POST /v1/outbox/drop; DropResponse its answer.
type DropRequest struct {
	Webhook string `json:"webhook"`
}

// DropResponse says how many outbox rows were dropped.
type DropResponse struct {
	Dropped int `json:"dropped"`
}

// drop answers POST /v1/outbox/drop: changefeed.DropWebhook, for a webhook removed
// from the config. 409 for a configured one.
func (a *api) drop(w http.ResponseWriter, r *http.Request) {
	var req DropRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Webhook == "" {
		writeError(w, http.StatusBadRequest, "body: want JSON {\"webhook\": \"name of a webhook no longer configured\"}")
		return
	}
	n, err := changefeed.DropWebhook(a.store, req.Webhook, a.webhooks)
	switch {
	case errors.Is(err, changefeed.ErrWebhookConfigured):
		writeError(w, http.StatusConflict, "%v", err)
	case err != nil:
		a.internalError(w, r, err)
	default:
		writeJSON(w, http.StatusOK, DropResponse{Dropped: n})
	}
}
