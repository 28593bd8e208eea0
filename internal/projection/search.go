package projection

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Query is a search (GET /v1/search, slackpoll search).
type Query struct {
	// Q is the text to find (see the package's search rules, docs/sql.md).
	Q string
	// Channel, if set, keeps the hits of one conversation; User those written by a
	// user (ID, or label as shown); Record those of a record key's message and of
	// its thread's replies.
	Channel, User, Record string
	// Channels, if not empty, keeps the hits of these conversations only (the MCP
	// server's exposure policy), with Channel if both are set.
	Channels []string
	// After and Before, if set, keep the hits with After < ts < Before.
	After, Before rm.TS
	// Limit is the page size (DefaultLimit when 0, at most MaxLimit); Cursor is a
	// page's NextCursor, to get the next page.
	Limit  int
	Cursor string
}

// Page sizes of a search.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// Classes of freshness (Hit.Class): the rotation a message belongs to, which bounds
// how stale it may be (README, "How stale it can be").
const (
	ClassWatched   = "watched"
	ClassTracked   = "tracked"
	ClassUntracked = "untracked"
)

// Freshness is the worst-case staleness of each class, in seconds, from the status
// report (rotation period plus one interval); nil when not known yet.
type Freshness struct {
	Tracked, Watched *float64
}

// Hit is one message found, newest first.
type Hit struct {
	Channel  string `json:"channel"`
	TS       rm.TS  `json:"ts"`
	ThreadTS rm.TS  `json:"thread_ts"`
	// PostedAt is the time of ts (UTC).
	PostedAt  time.Time `json:"posted_at"`
	User      string    `json:"user"`
	UserLabel string    `json:"user_label"`
	// Text is the message text rendered (mentions and links as names); Snippet the
	// part of it around the match, each match between « and ».
	Text         string     `json:"text"`
	Snippet      string     `json:"snippet"`
	Record       string     `json:"record"`
	Deleted      bool       `json:"deleted"`
	MissingSince *time.Time `json:"missing_since"`
	// LastPolledAt is when slackpoll last read the message (null: never);
	// Class and StalenessSeconds say how stale it may be: the worst-case staleness
	// of its class (watched, tracked; null for untracked, which is not re-read,
	// and while not known).
	LastPolledAt     *time.Time `json:"last_polled_at"`
	Class            string     `json:"class"`
	StalenessSeconds *float64   `json:"staleness_seconds"`
}

// Page is one page of hits, in the shape of the API's lists.
type Page struct {
	Items      []Hit  `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// ErrBadCursor is matched by the error of a search whose cursor this version did not
// make.
var ErrBadCursor = errors.New("bad cursor")

func encodeCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("id:" + strconv.FormatInt(id, 10)))
}

func decodeCursor(s string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		if v, ok := strings.CutPrefix(string(b), "id:"); ok {
			if id, err := strconv.ParseInt(v, 10, 64); err == nil && id > 0 {
				return id, nil
			}
		}
	}
	return 0, fmt.Errorf("%w: %q (pass a next_cursor back unchanged)", ErrBadCursor, s)
}

// tsID is the first message id of a ts (with after set: the first id after it).
func tsID(ts rm.TS, after bool) (int64, error) {
	sec, us, ok := ts.Parts()
	if !ok || sec > maxIDSeconds {
		return 0, fmt.Errorf("%w: %q is not a Slack ts", ErrBadQuery, ts)
	}
	v := int64(sec)*1_000_000 + int64(us)
	if after {
		v++
	}
	return v * idSlots, nil
}

// Search finds the messages of team matching q, newest first. A query that cannot
// be searched fails with an error matching ErrBadQuery; a bad cursor with
// ErrBadCursor.
func (t *Target) Search(ctx context.Context, team string, q Query, f Freshness) (Page, error) {
	c, err := compile(q.Q)
	if err != nil {
		return Page{}, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	var where []string
	var args []any
	idCol := "m.id"
	var sqlText string
	if t.kind == KindSQLite {
		idCol = "messages_fts.rowid"
		sqlText = "FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
		where = append(where, "messages_fts MATCH ?")
		args = append(args, c.fts5())
	} else {
		sqlText = "FROM messages m "
		where = append(where, "m.search @@ CAST(? AS tsquery)")
		args = append(args, c.tsquery())
	}
	if q.Cursor != "" {
		id, err := decodeCursor(q.Cursor)
		if err != nil {
			return Page{}, err
		}
		where, args = append(where, idCol+" < ?"), append(args, id)
	}
	if q.After != "" {
		id, err := tsID(q.After, true)
		if err != nil {
			return Page{}, err
		}
		where, args = append(where, idCol+" >= ?"), append(args, id)
	}
	if q.Before != "" {
		id, err := tsID(q.Before, false)
		if err != nil {
			return Page{}, err
		}
		where, args = append(where, idCol+" < ?"), append(args, id)
	}
	where, args = append(where, "m.team_id = ?"), append(args, team)
	if q.Channel != "" {
		where, args = append(where, "m.channel = ?"), append(args, q.Channel)
	}
	if len(q.Channels) > 0 {
		where = append(where, "m.channel IN (?"+strings.Repeat(", ?", len(q.Channels)-1)+")")
		for _, ch := range q.Channels {
			args = append(args, ch)
		}
	}
	if q.User != "" {
		where, args = append(where, "(m.user_id = ? OR lower(m.user_label) = lower(?))"), append(args, q.User, q.User)
	}
	if q.Record != "" {
		where, args = append(where, "(m.record = ? OR p.record = ?)"), append(args, q.Record, q.Record)
	}
	args = append(args, limit+1)
	query := `SELECT m.id, m.channel, m.ts, m.thread_ts, m.posted_at, m.user_id, m.user_label, m.search_text, m.record,
		m.deleted, m.missing_since, m.last_polled_at, m.watched, m.tracked, m.is_reply, p.watched, p.tracked ` + sqlText +
		`LEFT JOIN messages p ON m.is_reply = {true} AND p.team_id = m.team_id AND p.channel = m.channel AND p.ts = m.thread_ts
		WHERE ` + strings.Join(where, " AND ") + " ORDER BY " + idCol + " DESC LIMIT ?"
	rs, err := t.db.QueryContext(ctx, t.q(query), args...)
	if err != nil {
		return Page{}, fmt.Errorf("projection: %s: search: %w", t.name, err)
	}
	defer func() { _ = rs.Close() }()
	page := Page{Items: []Hit{}}
	var lastID int64
	for rs.Next() {
		var (
			h                            Hit
			id                           int64
			ts                           string
			thread, user, record         sqlString
			posted, missing, polled      sqlTime
			watched, tracked, isReply    bool
			parentWatched, parentTracked sql.NullBool
		)
		if err := rs.Scan(&id, &h.Channel, &ts, &thread, &posted, &user, &h.UserLabel, &h.Text, &record, &h.Deleted,
			&missing, &polled, &watched, &tracked, &isReply, &parentWatched, &parentTracked); err != nil {
			return Page{}, fmt.Errorf("projection: %s: search: %w", t.name, err)
		}
		if len(page.Items) == limit {
			page.NextCursor = encodeCursor(lastID)
			break
		}
		lastID = id
		h.TS, h.ThreadTS, h.User, h.Record = rm.TS(ts), rm.TS(thread.s), user.s, record.s
		if posted.t != nil {
			h.PostedAt = *posted.t
		}
		h.MissingSince, h.LastPolledAt = missing.t, polled.t
		h.Snippet = snippet(h.Text, c)
		switch {
		case watched || parentWatched.Bool:
			h.Class, h.StalenessSeconds = ClassWatched, f.Watched
		case !isReply && tracked || isReply && parentTracked.Bool:
			h.Class, h.StalenessSeconds = ClassTracked, f.Tracked
		default:
			h.Class = ClassUntracked
		}
		page.Items = append(page.Items, h)
	}
	if err := rs.Err(); err != nil {
		return Page{}, fmt.Errorf("projection: %s: search: %w", t.name, err)
	}
	return page, nil
}

// ParseBound reads a search bound (after, before): a Slack ts
// ("1754467200.123456"), an RFC 3339 time ("2026-12-01T10:00:00Z") or a UTC date
// ("2026-12-01", its midnight).
func ParseBound(s string) (rm.TS, error) {
	if s == "" {
		return "", nil
	}
	if ts, err := rm.ParseTS(s); err == nil {
		return ts, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			if t.Unix() < 0 {
				break
			}
			return rm.TS(fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000)), nil
		}
	}
	return "", fmt.Errorf("%w: %q is not a Slack ts (1754467200.123456), an RFC 3339 time (2026-12-01T10:00:00Z) or a date (2026-12-01)", ErrBadQuery, s)
}
