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

// encodeCursor returns the cursor of the page after the message ts.
func encodeCursor(ts rm.TS) string {
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

// pageQuery is a parsed messages query.
type pageQuery struct {
	oldest, latest rm.TS // inclusive bounds, "" open
	after          rm.TS // from the cursor: only ts strictly after it
	limit          int
}

func parsePageQuery(r *http.Request) (pageQuery, error) {
	q := r.URL.Query()
	var p pageQuery
	var err error
	for _, b := range []struct {
		name string
		dst  *rm.TS
	}{{"oldest", &p.oldest}, {"latest", &p.latest}} {
		if v := q.Get(b.name); v != "" {
			if *b.dst, err = rm.ParseTS(v); err != nil {
				return p, fmt.Errorf("%s: %w", b.name, err)
			}
		}
	}
	p.limit = DefaultLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, fmt.Errorf("limit %q: want a whole number from 1 to %d", v, MaxLimit)
		}
		p.limit = min(n, MaxLimit)
	}
	if v := q.Get("cursor"); v != "" {
		if p.after, err = decodeCursor(v); err != nil {
			return p, err
		}
	}
	return p, nil
}

// messages answers GET /v1/conversations/{id}/messages: the conversation's timeline
// (top-level messages, thread parents with their replies, thread_broadcast replies) as
// message lines, ascending by ts, oldest ≤ ts ≤ latest, at most limit (default 100,
// max 1000) per page. next_cursor is "" on the last page; otherwise pass it back as
// cursor (with the same oldest and latest) for the next page.
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
	from := p.oldest
	if p.after != "" && (from == "" || from.Before(p.after)) {
		from = p.after
	}
	page := list[export.MessageLine]{Items: []export.MessageLine{}}
	err = a.store.View(func(tx rm.Tx) error {
		if ok, err := a.knownConversation(tx, channel); err != nil || !ok {
			if err == nil {
				err = errUnknownConversation
			}
			return err
		}
		return tx.Timeline(channel, from, p.latest, func(m rm.Message) error {
			if p.after != "" && m.TS.Compare(p.after) <= 0 {
				return nil // the cursor's own message ended the previous page
			}
			if len(page.Items) == p.limit {
				// One more message exists: the page is full and not the last.
				page.NextCursor = encodeCursor(page.Items[len(page.Items)-1].TS)
				return rm.ErrStopIteration
			}
			line, err := export.MessageLineOf(tx, &m)
			if err != nil {
				return err
			}
			page.Items = append(page.Items, line)
			return nil
		})
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
