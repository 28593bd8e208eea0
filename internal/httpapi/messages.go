package httpapi

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/slackpoll/slackpoll/internal/export"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Page sizes of GET /v1/conversations/{id}/messages.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// cursorPrefix versions the opaque cursor, so its encoding can change without a
// client mistaking an old cursor for a new one.
const cursorPrefix = "ts1:"

// MessagesCursor returns the cursor of GET /v1/conversations/{id}/messages that goes
// on after the message ts (before it, with order=desc), as next_cursor does.
func MessagesCursor(ts rm.TS) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + string(ts)))
}

// decodeCursor returns the ts a cursor continues after.
func decodeCursor(c string) (rm.TS, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(raw), cursorPrefix) {
		return "", errors.New("invalid cursor: pass next_cursor of the previous page unchanged")
	}
	ts, err := rm.ParseTS(strings.TrimPrefix(string(raw), cursorPrefix))
	if err != nil {
		return "", errors.New("invalid cursor: pass next_cursor of the previous page unchanged")
	}
	return ts, nil
}

// parsePageQuery reads oldest, latest, limit, order and cursor.
func parsePageQuery(r *http.Request) (export.TimelineQuery, error) {
	q := r.URL.Query()
	var p export.TimelineQuery
	var err error
	for _, b := range []struct {
		name string
		dst  *rm.TS
	}{{"oldest", &p.Oldest}, {"latest", &p.Latest}} {
		if v := q.Get(b.name); v != "" {
			if *b.dst, err = rm.ParseTS(v); err != nil {
				return p, fmt.Errorf("%s: %w", b.name, err)
			}
		}
	}
	p.Limit = DefaultLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, fmt.Errorf("limit %q: want a whole number from 1 to %d", v, MaxLimit)
		}
		p.Limit = min(n, MaxLimit)
	}
	switch o := q.Get("order"); o {
	case "", "asc":
	case "desc":
		p.NewestFirst = true
	default:
		return p, fmt.Errorf("order %.20q: want asc (oldest first, the default) or desc (newest first)", o)
	}
	if v := q.Get("cursor"); v != "" {
		ts, err := decodeCursor(v)
		if err != nil {
			return p, err
		}
		if p.NewestFirst {
			p.Before = ts
		} else {
			p.After = ts
		}
	}
	return p, nil
}

// messages answers GET /v1/conversations/{id}/messages: the conversation's timeline
// (top-level messages, thread parents with their replies, thread_broadcast replies) as
// message lines, ascending by ts (order=desc: newest first), oldest ≤ ts ≤ latest, at
// most limit (default 100, max 1000) per page. next_cursor is "" on the last page;
// otherwise pass it back as cursor (with the same oldest, latest and order) for the
// next page.
func (a *api) messages(w http.ResponseWriter, r *http.Request) {
	channel := r.PathValue("id")
	if !rm.ValidConversationID(channel) {
		writeError(w, http.StatusNotFound, "%.80q is not a Slack conversation ID (C…, G… or D…)", channel)
		return
	}
	p, err := parsePageQuery(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	page := list[export.MessageLine]{}
	err = a.store.View(func(tx rm.Tx) error {
		if ok, err := export.KnownConversation(tx, a.configuredNow(), channel); err != nil || !ok {
			if err == nil {
				err = errUnknownConversation
			}
			return err
		}
		lines, more, err := export.TimelineLines(tx, channel, p)
		page.Items = lines
		if more {
			page.NextCursor = MessagesCursor(lines[len(lines)-1].TS)
		}
		return err
	})
	switch {
	case errors.Is(err, errUnknownConversation):
		writeError(w, http.StatusNotFound, "conversation %s is neither configured nor in the read model", channel)
	case err != nil:
		a.internalError(w, r, err)
	default:
		writeJSON(w, http.StatusOK, page)
	}
}
