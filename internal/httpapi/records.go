package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/slackpoll/slackpoll/internal/export"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// record answers GET /v1/records/{key}: the message line the record key is attached
// to (by POST /v1/tracked or `slackpoll track --record`).
func (a *api) record(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	if len(key) > rm.MaxRecordKeyLen {
		writeError(w, http.StatusNotFound, "no message is tracked as record %.20q…: record keys are at most %d bytes", key, rm.MaxRecordKeyLen)
		return
	}
	var ref rm.Ref
	var found bool
	err := a.store.View(func(tx rm.Tx) error {
		var err error
		ref, found, err = tx.Record(key)
		return err
	})
	switch {
	case err != nil:
		a.internalError(w, r, err)
	case !found:
		writeError(w, http.StatusNotFound, "no message is tracked as record %q", key)
	default:
		a.serveMessage(w, r, ref)
	}
}

// user answers GET /v1/users/{id}: the user line of a looked-up user, for clients
// that show reaction users by name (message lines carry their IDs).
func (a *api) user(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if len(id) > maxUserIDLen {
		writeError(w, http.StatusNotFound, "user %.20q… has not been looked up", id)
		return
	}
	var u rm.User
	var found bool
	err := a.store.View(func(tx rm.Tx) error {
		var err error
		u, found, err = tx.User(id)
		return err
	})
	switch {
	case err != nil:
		a.internalError(w, r, err)
	case !found:
		writeError(w, http.StatusNotFound, "user %s has not been looked up", id)
	default:
		writeJSON(w, http.StatusOK, export.NewUserLine(&u))
	}
}

// maxUserIDLen bounds what can be a Slack user ID (U0123456789).
const maxUserIDLen = 64

// TrackRequest is the body of POST /v1/tracked.
type TrackRequest struct {
	Channel string `json:"channel"`
	TS      string `json:"ts"`
	// Record is an optional key of the caller's (e.g. "ticket-42").
	Record string `json:"record"`
}

// maxBody bounds request bodies; a track request is a few dozen bytes.
const maxBody = 64 << 10

// track answers POST /v1/tracked: readmodel.Track (the record key and the tracking
// entry in one transaction), then the message line — a placeholder with
// last_polled_at null when the message has not been read yet. 400 for a bad body,
// 409 when the message carries another record or the record another message.
func (a *api) track(w http.ResponseWriter, r *http.Request) {
	var req TrackRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "body: want {\"channel\": \"C…\", \"ts\": \"1754467200.123456\", \"record\": \"optional\"}: %v", err)
		return
	}
	if req.Channel == "" {
		writeError(w, http.StatusBadRequest, "channel is empty")
		return
	}
	ts, err := rm.ParseTS(req.TS)
	if err != nil {
		writeError(w, http.StatusBadRequest, "ts: %v", err)
		return
	}
	err = rm.TrackPolled(a.store, a.configuredNow(), req.Channel, ts, req.Record)
	switch {
	case errors.Is(err, rm.ErrNotPolled), errors.Is(err, rm.ErrBadRecord), !rm.ValidConversationID(req.Channel):
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	case errors.Is(err, rm.ErrRecordConflict), errors.Is(err, rm.ErrTooManyTracked):
		writeError(w, http.StatusConflict, "%v", err)
		return
	case err != nil:
		a.internalError(w, r, err)
		return
	}
	line, ok, err := a.messageLine(rm.Ref{Channel: req.Channel, TS: ts})
	if err == nil && !ok {
		// Tracking stored it (a placeholder at least) in the same transaction.
		err = fmt.Errorf("message %s %s is not in the store right after it was tracked", req.Channel, ts)
	}
	if err != nil {
		a.internalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, line)
}

// UntrackResponse is the answer of DELETE /v1/tracked/{channel}/{ts}.
type UntrackResponse struct {
	Channel string `json:"channel"`
	TS      string `json:"ts"`
}

// untrack answers DELETE /v1/tracked/{channel}/{ts}: readmodel.Untrack. 400 for a bad
// ts, 404 when the message is not tracked.
func (a *api) untrack(w http.ResponseWriter, r *http.Request) {
	channel := r.PathValue("channel")
	ts, err := rm.ParseTS(r.PathValue("ts"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if !rm.ValidConversationID(channel) {
		writeError(w, http.StatusNotFound, "%.80q is not a Slack conversation ID (C…, G… or D…)", channel)
		return
	}
	err = rm.Untrack(a.store, channel, ts)
	switch {
	case errors.Is(err, rm.ErrNotTracked):
		writeError(w, http.StatusNotFound, "%v", err)
	case err != nil:
		a.internalError(w, r, err)
	default:
		writeJSON(w, http.StatusOK, UntrackResponse{Channel: channel, TS: string(ts)})
	}
}

// RetryRequest is the body of POST /v1/conversations/retry; RetryResponse its answer.
type RetryRequest struct {
	// Channels are the conversations to retry; empty retries every one waiting.
	Channels []string `json:"channels"`
}

// RetryResponse lists the conversations made due at the next tick.
type RetryResponse struct {
	Channels []string `json:"channels"`
}

// retry answers POST /v1/conversations/retry: readmodel.Retry. 404 when a named
// conversation waits for no retry.
func (a *api) retry(w http.ResponseWriter, r *http.Request) {
	var req RetryRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "body: want {\"channels\": [\"C…\"]} (empty for all): %v", err)
		return
	}
	due, err := rm.Retry(a.store, req.Channels)
	switch {
	case errors.Is(err, rm.ErrNotWaiting):
		writeError(w, http.StatusNotFound, "%v", err)
	case err != nil:
		a.internalError(w, r, err)
	default:
		if due == nil {
			due = []string{}
		}
		writeJSON(w, http.StatusOK, RetryResponse{Channels: due})
	}
}
