package projection

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// chunkRows bounds the rows of one multi-row statement: far below both databases'
// limits on parameters (SQLite 32766, Postgres 65535) at 31 columns.
const chunkRows = 300

// batch is one SQL transaction of the projector: the rows it writes and the cursor
// it moves commit together or not at all.
type batch struct {
	t    *Target
	tx   *sql.Tx
	team string
	// seq is the feed seq the projection reaches with this transaction; a row whose
	// content changes in it gets changed_seq = seq and changed_at = now.
	seq   int64
	now   time.Time
	stats Counts
}

// Counts say what a batch or a sync wrote.
type Counts struct {
	Inserted int `json:"inserted"`
	Updated  int `json:"updated"`
	// Touched rows had their read times alone updated.
	Touched int `json:"touched"`
	Deleted int `json:"deleted"`
}

func (c *Counts) add(o Counts) {
	c.Inserted += o.Inserted
	c.Updated += o.Updated
	c.Touched += o.Touched
	c.Deleted += o.Deleted
}

// Changed is the number of rows written.
func (c Counts) Changed() int { return c.Inserted + c.Updated + c.Touched + c.Deleted }

func (t *Target) begin(ctx context.Context, team string, seq int64, now time.Time) (*batch, error) {
	tx, err := t.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("projection: %s: begin: %w", t.name, err)
	}
	return &batch{t: t, tx: tx, team: team, seq: seq, now: now.UTC().Truncate(time.Microsecond)}, nil
}

func (b *batch) rollback() { _ = b.tx.Rollback() }

func (b *batch) commit() error {
	if err := b.tx.Commit(); err != nil {
		return fmt.Errorf("projection: %s: commit: %w", b.t.name, err)
	}
	return nil
}

func (b *batch) exec(ctx context.Context, query string, args ...any) error {
	if _, err := b.tx.ExecContext(ctx, b.t.q(query), args...); err != nil {
		return fmt.Errorf("projection: %s: %w (in %.80s)", b.t.name, err, strings.Join(strings.Fields(query), " "))
	}
	return nil
}

func (b *batch) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	rows, err := b.tx.QueryContext(ctx, b.t.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("projection: %s: %w (in %.80s)", b.t.name, err, strings.Join(strings.Fields(query), " "))
	}
	return rows, nil
}

// values is "(?, ?, …), (…)" for n rows of cols columns.
func values(n, cols int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(one+", ", n), ", ")
}

// insertRows inserts rows (each of len(cols) values) into table, chunkRows a
// statement.
func (b *batch) insertRows(ctx context.Context, table string, cols []string, rows [][]any) error {
	for len(rows) > 0 {
		n := min(len(rows), chunkRows)
		args := make([]any, 0, n*len(cols))
		for _, r := range rows[:n] {
			args = append(args, r...)
		}
		q := "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES " + values(n, len(cols))
		if err := b.exec(ctx, q, args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// deleteKeys deletes the rows of the messages keyed by refs from a table keyed by
// (team_id, channel, ts, …).
func (b *batch) deleteKeys(ctx context.Context, table string, refs []rm.Ref) error {
	for len(refs) > 0 {
		n := min(len(refs), chunkRows)
		args := []any{b.team}
		for _, r := range refs[:n] {
			args = append(args, r.Channel, string(r.TS))
		}
		if err := b.exec(ctx, "DELETE FROM "+table+" WHERE team_id = ? AND (channel, ts) IN (VALUES "+values(n, 2)+")", args...); err != nil {
			return err
		}
		refs = refs[n:]
	}
	return nil
}

// deleteIDs deletes rows by id (messages.id, or the SQLite index's rowid).
func (b *batch) deleteIDs(ctx context.Context, table, col string, ids []int64) error {
	for len(ids) > 0 {
		n := min(len(ids), chunkRows)
		args := make([]any, n)
		for i, id := range ids[:n] {
			args[i] = id
		}
		if err := b.exec(ctx, "DELETE FROM "+table+" WHERE "+col+" IN ("+strings.TrimSuffix(strings.Repeat("?, ", n), ", ")+")", args...); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// stored is what the projection holds of a message: enough to tell whether the
// store's row differs.
type stored struct {
	id                       int64
	content, text            int64
	lastPolled, threadSynced *time.Time
}

const storedCols = "id, channel, ts, content_hash, text_hash, last_polled_at, thread_synced_at"

func scanStored(rows *sql.Rows, into map[rm.Ref]stored) error {
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var s stored
		var ch, ts string
		var lp, tsy sqlTime
		if err := rows.Scan(&s.id, &ch, &ts, &s.content, &s.text, &lp, &tsy); err != nil {
			return err
		}
		s.lastPolled, s.threadSynced = lp.t, tsy.t
		into[rm.Ref{Channel: ch, TS: rm.TS(ts)}] = s
	}
	return rows.Err()
}

// storedByRefs reads what the projection holds of refs.
func (b *batch) storedByRefs(ctx context.Context, refs []rm.Ref) (map[rm.Ref]stored, error) {
	out := map[rm.Ref]stored{}
	for len(refs) > 0 {
		n := min(len(refs), chunkRows)
		args := []any{b.team}
		for _, r := range refs[:n] {
			args = append(args, r.Channel, string(r.TS))
		}
		rows, err := b.query(ctx, "SELECT "+storedCols+" FROM messages WHERE team_id = ? AND (channel, ts) IN (VALUES "+values(n, 2)+")", args...)
		if err != nil {
			return nil, err
		}
		if err := scanStored(rows, out); err != nil {
			return nil, err
		}
		refs = refs[n:]
	}
	return out, nil
}

// storedChannels lists the conversations the projection holds messages of.
func (b *batch) storedChannels(ctx context.Context) ([]string, error) {
	rows, err := b.query(ctx, "SELECT DISTINCT channel FROM messages WHERE team_id = ?", b.team)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []string
	for rows.Next() {
		var ch string
		if err := rows.Scan(&ch); err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	return out, rows.Err()
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

var messageCols = []string{
	"id", "team_id", "channel", "ts", "posted_at", "thread_ts", "is_reply", "user_id", "user_label", "bot_id", "subtype",
	"text", "search_text", "edited_user", "edited_ts", "deleted", "missing_since", "own", "record", "watched", "tracked",
	"reply_count", "latest_reply", "reply_watermark", "last_polled_at", "thread_synced_at", "changed_seq", "changed_at",
	"content_hash", "text_hash",
}

// applyMessages makes the projection's rows of the messages keys say what rows
// holds: rows of keys absent from rows are deleted, new ones inserted, changed ones
// replaced (changed_seq moves), and those whose read times alone moved get the new
// read times. have is what the projection holds of keys (storedByRefs or
// storedByChannel); it may hold more keys than keys, which are left alone.
func (b *batch) applyMessages(ctx context.Context, keys []rm.Ref, rows map[rm.Ref]*messageRow, have map[rm.Ref]stored) error {
	var (
		gone     []rm.Ref // rows to delete: absent from the store, or replaced
		goneIDs  []int64
		ftsGone  []int64 // index entries to delete
		write    []*messageRow
		writeIDs []int64
		ftsWrite []int
		touch    [][]any
		newRows  []*messageRow
		replaced = 0
	)
	for _, k := range keys {
		row, present := rows[k]
		s, had := have[k]
		switch {
		case !present && had:
			gone, goneIDs, ftsGone = append(gone, k), append(goneIDs, s.id), append(ftsGone, s.id)
			b.stats.Deleted++
		case !present:
		case !had:
			newRows = append(newRows, row)
		case s.content != row.ContentHash:
			gone, goneIDs = append(gone, k), append(goneIDs, s.id)
			if s.text != row.TextHash {
				ftsGone = append(ftsGone, s.id)
				ftsWrite = append(ftsWrite, len(write))
			}
			write, writeIDs = append(write, row), append(writeIDs, s.id)
			replaced++
		case !sameTime(s.lastPolled, row.LastPolledAt) || !sameTime(s.threadSynced, row.ThreadSyncedAt):
			touch = append(touch, []any{s.id, b.t.timeArg(row.LastPolledAt), b.t.timeArg(row.ThreadSyncedAt)})
		}
	}
	b.stats.Updated += replaced
	b.stats.Touched += len(touch)
	b.stats.Inserted += len(newRows)

	for _, table := range []string{"reactions", "reaction_counts", "mentions"} {
		if err := b.deleteKeys(ctx, table, gone); err != nil {
			return err
		}
	}
	if err := b.deleteIDs(ctx, "messages", "id", goneIDs); err != nil {
		return err
	}
	if b.t.kind == KindSQLite {
		if err := b.deleteIDs(ctx, "messages_fts", "rowid", ftsGone); err != nil {
			return err
		}
	}
	if err := b.writeMessages(ctx, write, writeIDs); err != nil {
		return err
	}
	ids, err := b.insertNew(ctx, newRows)
	if err != nil {
		return err
	}
	for i, row := range newRows {
		ftsWrite = append(ftsWrite, len(write))
		write, writeIDs = append(write, row), append(writeIDs, ids[i])
	}
	if b.t.kind == KindSQLite && len(ftsWrite) > 0 {
		fts := make([][]any, len(ftsWrite))
		for i, w := range ftsWrite {
			fts[i] = []any{writeIDs[w], tokensText(write[w].tokens)}
		}
		if err := b.insertRows(ctx, "messages_fts", []string{"rowid", "tokens"}, fts); err != nil {
			return err
		}
	}
	return b.touchMessages(ctx, touch)
}

// messageValues is a row's values for messageCols (and search, for Postgres).
func (b *batch) messageValues(r *messageRow, id int64) []any {
	v := []any{
		id, b.team, r.Channel, string(r.TS), b.t.timeArg(&r.PostedAt), nullString(string(r.ThreadTS)), r.IsReply,
		nullString(r.UserID), r.UserLabel, nullString(r.BotID), nullString(r.Subtype), r.Text, r.SearchText,
		nullString(r.EditedUser), nullString(string(r.EditedTS)), r.Deleted, b.t.timeArg(r.MissingSince), r.Own,
		nullString(r.Record), r.Watched, r.Tracked, r.ReplyCount, nullString(string(r.LatestReply)),
		nullString(string(r.ReplyWatermark)), b.t.timeArg(r.LastPolledAt), b.t.timeArg(r.ThreadSyncedAt),
		b.seq, b.t.timeArg(&b.now), r.ContentHash, r.TextHash,
	}
	if b.t.kind == KindPostgres {
		v = append(v, tsvector(r.tokens))
	}
	return v
}

func (b *batch) messageColumns() []string {
	if b.t.kind == KindPostgres {
		return append(append([]string(nil), messageCols...), "search")
	}
	return messageCols
}

// writeMessages inserts rows with the ids they had (replaced rows), and the
// dependents of every row.
func (b *batch) writeMessages(ctx context.Context, rows []*messageRow, ids []int64) error {
	msgs := make([][]any, len(rows))
	for i, r := range rows {
		msgs[i] = b.messageValues(r, ids[i])
	}
	if err := b.insertRows(ctx, "messages", b.messageColumns(), msgs); err != nil {
		return err
	}
	return b.writeDependents(ctx, rows)
}

// writeDependents inserts the reactions, reaction counts and mentions of rows.
func (b *batch) writeDependents(ctx context.Context, rows []*messageRow) error {
	var reacts, counts, ments [][]any
	for _, r := range rows {
		for _, ru := range r.reactionUsers() {
			reacts = append(reacts, []any{b.team, r.Channel, string(r.TS), ru[0], ru[1]})
		}
		for _, rc := range r.reactionCounts() {
			counts = append(counts, []any{b.team, r.Channel, string(r.TS), rc.Name, rc.Count})
		}
		for _, m := range r.Mentions {
			ments = append(ments, []any{b.team, r.Channel, string(r.TS), m.Kind, m.Target})
		}
	}
	if err := b.insertRows(ctx, "reactions", []string{"team_id", "channel", "ts", "reaction", "user_id"}, reacts); err != nil {
		return err
	}
	if err := b.insertRows(ctx, "reaction_counts", []string{"team_id", "channel", "ts", "reaction", "count"}, counts); err != nil {
		return err
	}
	return b.insertRows(ctx, "mentions", []string{"team_id", "channel", "ts", "kind", "target"}, ments)
}

// insertNew inserts rows new to the projection and their dependents, and returns
// their ids: messageID, or — when another row holds it (two messages of one
// microsecond in conversations that pick the same slot) — the next free slot of the
// same microsecond. The database's primary key says which are free: an insert that
// conflicts on id inserts nothing and is tried again one slot on.
func (b *batch) insertNew(ctx context.Context, rows []*messageRow) ([]int64, error) {
	ids := make([]int64, len(rows))
	todo := make([]int, len(rows))
	for i, r := range rows {
		ids[i] = messageID(b.team, r.Channel, r.TS)
		todo[i] = i
	}
	cols := b.messageColumns()
	for attempt := 0; len(todo) > 0; attempt++ {
		if attempt == idSlots {
			return nil, fmt.Errorf("projection: more than %d messages with ts %s", idSlots, rows[todo[0]].TS)
		}
		var next []int
		for len(todo) > 0 {
			n := min(len(todo), chunkRows)
			args := make([]any, 0, n*len(cols))
			for _, i := range todo[:n] {
				args = append(args, b.messageValues(rows[i], ids[i])...)
			}
			rs, err := b.query(ctx, "INSERT INTO messages ("+strings.Join(cols, ", ")+") VALUES "+values(n, len(cols))+
				" ON CONFLICT (id) DO NOTHING RETURNING id", args...)
			if err != nil {
				return nil, err
			}
			inserted := map[int64]bool{}
			for rs.Next() {
				var id int64
				if err := rs.Scan(&id); err != nil {
					_ = rs.Close()
					return nil, err
				}
				inserted[id] = true
			}
			_ = rs.Close()
			if err := rs.Err(); err != nil {
				return nil, err
			}
			for _, i := range todo[:n] {
				if !inserted[ids[i]] {
					base := ids[i] - ids[i]%idSlots
					ids[i] = base + (ids[i]+1-base)%idSlots
					next = append(next, i)
				} else {
					delete(inserted, ids[i]) // two new rows of one id: the second moves on
				}
			}
			todo = todo[n:]
		}
		todo = next
	}
	return ids, b.writeDependents(ctx, rows)
}

// touchMessages sets the read times of rows whose content did not change, one
// statement per chunk: (id, last_polled_at, thread_synced_at) triples.
func (b *batch) touchMessages(ctx context.Context, touch [][]any) error {
	for len(touch) > 0 {
		n := min(len(touch), chunkRows)
		args := make([]any, 0, 3*n)
		var vals []string
		for _, v := range touch[:n] {
			args = append(args, v...)
			vals = append(vals, "(CAST(? AS BIGINT), CAST(? AS {time}), CAST(? AS {time}))")
		}
		q := "UPDATE messages SET last_polled_at = v.column2, thread_synced_at = v.column3 FROM (VALUES " +
			strings.Join(vals, ", ") + ") AS v WHERE messages.id = v.column1"
		if err := b.exec(ctx, q, args...); err != nil {
			return err
		}
		touch = touch[n:]
	}
	return nil
}
