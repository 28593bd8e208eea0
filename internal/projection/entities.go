package projection

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// applyUsers upserts user rows and deletes the users of ids absent from rows (when
// all is set: every user the projection holds that rows lacks). It returns the IDs
// whose label changed (or that were new): their messages show the label.
func (b *batch) applyUsers(ctx context.Context, rows []userRow, absent []string, all bool) ([]string, error) {
	var have map[string]userRow
	q := "SELECT " + userCols + " FROM users WHERE team_id = ?"
	args := []any{b.team}
	if !all {
		ids := append([]string(nil), absent...)
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		if len(ids) == 0 {
			return nil, nil
		}
		q += " AND user_id IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ") + ")"
		for _, id := range ids {
			args = append(args, id)
		}
	}
	rs, err := b.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	if have, err = scanUsers(rs); err != nil {
		return nil, err
	}
	var relabeled []string
	var write [][]any
	var drop []string
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.ID] = true
		old, had := have[r.ID]
		if had && old.Label == r.Label && old.DisplayName == r.DisplayName && old.RealName == r.RealName &&
			old.Deleted == r.Deleted && old.LookupError == r.LookupError && sameTime(old.FetchedAt, r.FetchedAt) {
			continue
		}
		if !had || old.Label != r.Label {
			relabeled = append(relabeled, r.ID)
		}
		if had {
			drop = append(drop, r.ID)
			b.stats.Updated++
		} else {
			b.stats.Inserted++
		}
		write = append(write, []any{b.team, r.ID, r.DisplayName, r.RealName, r.Label, r.Deleted, nullString(r.LookupError), b.t.timeArg(r.FetchedAt)})
	}
	gone := absent
	if all {
		gone = nil
		for id := range have {
			if !seen[id] {
				gone = append(gone, id)
			}
		}
	}
	for _, id := range gone {
		if _, had := have[id]; had && !seen[id] {
			drop = append(drop, id)
			relabeled = append(relabeled, id)
			b.stats.Deleted++
		}
	}
	if err := b.deleteByID(ctx, "users", "user_id", drop); err != nil {
		return nil, err
	}
	err = b.insertRows(ctx, "users", []string{"team_id", "user_id", "display_name", "real_name", "label", "deleted", "lookup_error", "fetched_at"}, write)
	return relabeled, err
}

// deleteByID deletes a team's rows of table whose col is one of ids.
func (b *batch) deleteByID(ctx context.Context, table, col string, ids []string) error {
	for len(ids) > 0 {
		n := min(len(ids), chunkRows)
		args := []any{b.team}
		for _, id := range ids[:n] {
			args = append(args, id)
		}
		if err := b.exec(ctx, "DELETE FROM "+table+" WHERE team_id = ? AND "+col+" IN ("+strings.TrimSuffix(strings.Repeat("?, ", n), ", ")+")", args...); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// applyConversations makes the conversations table hold rows, and returns the IDs
// whose name changed (their mentions render it) and those new to the projection
// (their messages were left out while it lacked them: reader.message).
func (b *batch) applyConversations(ctx context.Context, rows []conversationRow) (renamed, added []string, err error) {
	rs, err := b.query(ctx, "SELECT "+conversationCols+" FROM conversations WHERE team_id = ?", b.team)
	if err != nil {
		return nil, nil, err
	}
	have, err := scanConversations(rs)
	if err != nil {
		return nil, nil, err
	}
	var drop []string
	var write [][]any
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.ID] = true
		old, had := have[r.ID]
		if had && old.Name == r.Name && old.Type == r.Type && old.Status == r.Status && old.NeededScope == r.NeededScope &&
			old.IsArchived == r.IsArchived && old.Discovered == r.Discovered && sameTime(old.LastSweptAt, r.LastSweptAt) {
			continue
		}
		if had && old.Name != r.Name {
			renamed = append(renamed, r.ID)
		}
		if had {
			drop = append(drop, r.ID)
			b.stats.Updated++
		} else {
			added = append(added, r.ID)
			b.stats.Inserted++
		}
		write = append(write, []any{b.team, r.ID, r.Name, r.Type, r.Status, nullString(r.NeededScope), r.IsArchived, r.Discovered, b.t.timeArg(r.LastSweptAt)})
	}
	for id := range have {
		if !seen[id] {
			drop = append(drop, id)
			b.stats.Deleted++
		}
	}
	if err := b.deleteByID(ctx, "conversations", "channel", drop); err != nil {
		return nil, nil, err
	}
	err = b.insertRows(ctx, "conversations", []string{"team_id", "channel", "name", "type", "status", "needed_scope", "is_archived", "discovered", "last_swept_at"}, write)
	return renamed, added, err
}

// showing lists the messages that show the users or conversations of ids: written by
// a user, or mentioning one (kind MentionUser or MentionChannel).
func (b *batch) showing(ctx context.Context, kind string, ids []string) ([]rm.Ref, error) {
	var out []rm.Ref
	for len(ids) > 0 {
		n := min(len(ids), chunkRows)
		in := "(" + strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + ")"
		q := "SELECT channel, ts FROM mentions WHERE team_id = ? AND kind = ? AND target IN " + in
		args := []any{b.team, kind}
		for _, id := range ids[:n] {
			args = append(args, id)
		}
		if kind == MentionUser {
			q += " UNION SELECT channel, ts FROM messages WHERE team_id = ? AND user_id IN " + in
			args = append(args, b.team)
			for _, id := range ids[:n] {
				args = append(args, id)
			}
		}
		rs, err := b.query(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		for rs.Next() {
			var ch, ts string
			if err := rs.Scan(&ch, &ts); err != nil {
				_ = rs.Close()
				return nil, err
			}
			out = append(out, rm.Ref{Channel: ch, TS: rm.TS(ts)})
		}
		_ = rs.Close()
		if err := rs.Err(); err != nil {
			return nil, err
		}
		ids = ids[n:]
	}
	return out, nil
}

// state is the projection's progress for one team.
type state struct {
	CursorSeq int64
	CursorAt  *time.Time
	SyncedAt  *time.Time
}

// loadState reads the team's progress; ok is false for a projection that never
// synced this team (new, or dropped).
func (t *Target) loadState(ctx context.Context, team string) (st state, ok bool, err error) {
	var at, synced sqlTime
	err = t.db.QueryRowContext(ctx, t.q("SELECT cursor_seq, cursor_at, synced_at FROM projection_state WHERE team_id = ?"), team).
		Scan(&st.CursorSeq, &at, &synced)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return st, false, nil
		}
		return st, false, err
	}
	st.CursorAt, st.SyncedAt = at.t, synced.t
	return st, synced.t != nil, nil
}

// saveState sets the team's cursor (and, for a sync, when it finished).
func (b *batch) saveState(ctx context.Context, cursorAt *time.Time, synced bool) error {
	var syncedAt any
	if synced {
		syncedAt = b.t.timeArg(&b.now)
	}
	return b.exec(ctx, `INSERT INTO projection_state (team_id, cursor_seq, cursor_at, synced_at, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (team_id) DO UPDATE SET cursor_seq = excluded.cursor_seq, cursor_at = excluded.cursor_at,
		synced_at = coalesce(excluded.synced_at, projection_state.synced_at), updated_at = excluded.updated_at`,
		b.team, b.seq, b.t.timeArg(cursorAt), syncedAt, b.t.timeArg(&b.now))
}

// replies lists the replies the projection holds of the thread of parent.
func (b *batch) replies(ctx context.Context, parent rm.Ref) ([]rm.Ref, error) {
	rs, err := b.query(ctx, "SELECT ts FROM messages WHERE team_id = ? AND channel = ? AND thread_ts = ? AND is_reply = {true}",
		b.team, parent.Channel, string(parent.TS))
	if err != nil {
		return nil, err
	}
	defer func() { _ = rs.Close() }()
	var out []rm.Ref
	for rs.Next() {
		var ts string
		if err := rs.Scan(&ts); err != nil {
			return nil, err
		}
		out = append(out, rm.Ref{Channel: parent.Channel, TS: rm.TS(ts)})
	}
	return out, rs.Err()
}

const (
	userCols         = "user_id, display_name, real_name, label, deleted, lookup_error, fetched_at"
	conversationCols = "channel, name, type, status, needed_scope, is_archived, discovered, last_swept_at"
)

// scanUsers reads rows of userCols, by ID, and closes rs.
func scanUsers(rs *sql.Rows) (map[string]userRow, error) {
	defer func() { _ = rs.Close() }()
	out := map[string]userRow{}
	for rs.Next() {
		var u userRow
		var le sqlString
		var fetched sqlTime
		if err := rs.Scan(&u.ID, &u.DisplayName, &u.RealName, &u.Label, &u.Deleted, &le, &fetched); err != nil {
			return nil, err
		}
		u.LookupError, u.FetchedAt = le.s, fetched.t
		out[u.ID] = u
	}
	return out, rs.Err()
}

// scanConversations reads rows of conversationCols, by ID, and closes rs.
func scanConversations(rs *sql.Rows) (map[string]conversationRow, error) {
	defer func() { _ = rs.Close() }()
	out := map[string]conversationRow{}
	for rs.Next() {
		var c conversationRow
		var scope sqlString
		var swept sqlTime
		if err := rs.Scan(&c.ID, &c.Name, &c.Type, &c.Status, &scope, &c.IsArchived, &c.Discovered, &swept); err != nil {
			return nil, err
		}
		c.NeededScope, c.LastSweptAt = scope.s, swept.t
		out[c.ID] = c
	}
	return out, rs.Err()
}
