package projection

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// VerifyReport is the outcome of Verify.
type VerifyReport struct {
	Team string
	// Messages, Reactions (one per (message, reaction, user)), Users and
	// Conversations count the store's, as compared.
	Messages, Reactions, Users, Conversations int
	// Differences lists each row that differs, one line each (at most maxDiffs).
	Differences []string
	// More counts the differences left out of Differences.
	More int
}

// Equal reports whether no difference was found.
func (r VerifyReport) Equal() bool { return len(r.Differences) == 0 }

func (r VerifyReport) String() string {
	return fmt.Sprintf("%d messages, %d reactions, %d differences", r.Messages, r.Reactions, len(r.Differences)+r.More)
}

const maxDiffs = 200

func (r *VerifyReport) add(format string, args ...any) {
	if len(r.Differences) == maxDiffs {
		r.More++
		return
	}
	r.Differences = append(r.Differences, fmt.Sprintf(format, args...))
}

// Verify compares the target's rows of the store's team with the store, row for row:
// conversations, users, messages (every column but changed_seq and changed_at, which
// the store does not know), reactions and their counts, and the search index (one
// entry per message, made of the message's tokens). It reads the store in one read
// transaction, so the store must not change meanwhile for the answer to mean
// anything: run it on a store no daemon writes, or once the projector is idle. The
// expected rows are made here from the store's records, apart from the projector's
// code, as the export makes its lines.
func Verify(ctx context.Context, store rm.Store, t *Target) (VerifyReport, error) {
	var rep VerifyReport
	err := store.View(func(tx rm.Tx) error {
		id, ok, err := tx.Identity()
		if err != nil {
			return err
		}
		if !ok || id.TeamID == "" {
			return ErrNoTeam
		}
		rep.Team = id.TeamID
		label := rm.TxLabeler(tx)
		var channels []string
		convs := map[string]string{}
		var wantConvs []conversationRow
		err = tx.Conversations(func(c rm.Conversation) error {
			channels = append(channels, c.ID)
			convs[c.ID] = c.Name
			wantConvs = append(wantConvs, conversationRowOf(&c))
			return nil
		})
		if err != nil {
			return err
		}
		if err := verifyConversations(ctx, t, &rep, wantConvs); err != nil {
			return err
		}
		var wantUsers []userRow
		err = tx.Users(func(u rm.User) error {
			if !rm.IsBotID(u.ID) {
				wantUsers = append(wantUsers, userRowOf(&u))
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := verifyUsers(ctx, t, &rep, wantUsers); err != nil {
			return err
		}
		n := Names{User: label, Conversation: func(id string) string { return convs[id] }}
		for _, ch := range channels {
			if err := verifyChannel(ctx, tx, t, &rep, ch, n); err != nil {
				return err
			}
		}
		held, err := distinct(ctx, t, "SELECT DISTINCT channel FROM messages WHERE team_id = ?", rep.Team)
		if err != nil {
			return err
		}
		for _, ch := range held {
			if _, ok := convs[ch]; !ok {
				rep.add("conversation %s: the projection holds messages of it, the store does not hold it", ch)
			}
		}
		return verifyIndex(ctx, t, &rep)
	})
	return rep, err
}

func distinct(ctx context.Context, t *Target, q string, args ...any) ([]string, error) {
	rs, err := t.db.QueryContext(ctx, t.q(q), args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rs.Close() }()
	var out []string
	for rs.Next() {
		var s string
		if err := rs.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rs.Err()
}

func verifyConversations(ctx context.Context, t *Target, rep *VerifyReport, want []conversationRow) error {
	rs, err := t.db.QueryContext(ctx, t.q("SELECT "+conversationCols+" FROM conversations WHERE team_id = ?"), rep.Team)
	if err != nil {
		return err
	}
	got, err := scanConversations(rs)
	if err != nil {
		return err
	}
	rep.Conversations = len(want)
	for _, w := range want {
		g, ok := got[w.ID]
		delete(got, w.ID)
		if !ok {
			rep.add("conversation %s: missing from the projection", w.ID)
			continue
		}
		if fmt.Sprint(g.Name, g.Type, g.Status, g.NeededScope, g.IsArchived, g.Discovered, fmtTime(g.LastSweptAt)) !=
			fmt.Sprint(w.Name, w.Type, w.Status, w.NeededScope, w.IsArchived, w.Discovered, fmtTime(w.LastSweptAt)) {
			rep.add("conversation %s: projection %+v, store %+v", w.ID, g, w)
		}
	}
	for id := range got {
		rep.add("conversation %s: in the projection, not in the store", id)
	}
	return nil
}

func verifyUsers(ctx context.Context, t *Target, rep *VerifyReport, want []userRow) error {
	rs, err := t.db.QueryContext(ctx, t.q("SELECT "+userCols+" FROM users WHERE team_id = ?"), rep.Team)
	if err != nil {
		return err
	}
	got, err := scanUsers(rs)
	if err != nil {
		return err
	}
	rep.Users = len(want)
	for _, w := range want {
		g, ok := got[w.ID]
		delete(got, w.ID)
		if !ok {
			rep.add("user %s: missing from the projection", w.ID)
			continue
		}
		if fmt.Sprint(g.DisplayName, g.RealName, g.Label, g.Deleted, g.LookupError, fmtTime(g.FetchedAt)) !=
			fmt.Sprint(w.DisplayName, w.RealName, w.Label, w.Deleted, w.LookupError, fmtTime(w.FetchedAt)) {
			rep.add("user %s: projection %+v, store %+v", w.ID, g, w)
		}
	}
	for id := range got {
		rep.add("user %s: in the projection, not in the store", id)
	}
	return nil
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "null"
	}
	return t.UTC().Truncate(time.Microsecond).Format(timeFormat)
}

// wantMessage is a message as the projection must hold it, made from the store's
// record by the export's rules.
func wantMessage(tx rm.Tx, m *rm.Message, n Names) ([]string, error) {
	watched, err := tx.IsWatched(rm.Ref{Channel: m.Channel, TS: m.TS})
	if err != nil {
		return nil, err
	}
	ts := func(t rm.TS) string {
		if t == "" {
			return "null"
		}
		return string(t)
	}
	str := func(s string) string {
		if s == "" {
			return "null"
		}
		return s
	}
	eu, ets := "null", "null"
	if m.Edited != nil {
		eu, ets = str(m.Edited.User), ts(m.Edited.TS)
	}
	search, _ := Render(m.Text, n)
	sec, us, _ := m.TS.Parts()
	posted := time.Unix(int64(sec), int64(us)*1000)
	return []string{
		"thread_ts=" + ts(m.ThreadTS), fmt.Sprint("is_reply=", m.IsReply()), "user_id=" + str(m.User),
		"user_label=" + rm.UserLabel(m, n.User), "bot_id=" + str(m.BotID), "subtype=" + str(m.Subtype),
		"text=" + m.Text, "search_text=" + search, "edited_user=" + eu, "edited_ts=" + ets,
		fmt.Sprint("deleted=", m.Deleted), "missing_since=" + fmtTime(m.MissingSince), fmt.Sprint("own=", m.OwnPost),
		"record=" + str(m.Record), fmt.Sprint("watched=", watched), fmt.Sprint("tracked=", !m.Retired && !m.IsReply()),
		fmt.Sprint("reply_count=", m.ReplyCount), "latest_reply=" + ts(m.LatestReply), "reply_watermark=" + ts(m.ReplyWatermark),
		"last_polled_at=" + fmtTime(m.LastPolledAt), "thread_synced_at=" + fmtTime(m.ThreadSyncedAt), "posted_at=" + fmtTime(&posted),
	}, nil
}

func verifyChannel(ctx context.Context, tx rm.Tx, t *Target, rep *VerifyReport, ch string, n Names) error {
	want := map[rm.TS][]string{}
	wantReacts := map[string]bool{}
	wantCounts := map[string]bool{}
	add := func(m *rm.Message) error {
		cols, err := wantMessage(tx, m, n)
		if err != nil {
			return err
		}
		want[m.TS] = cols
		for _, r := range m.Reactions {
			wantCounts[fmt.Sprintf("%s %s %d", m.TS, r.Name, r.Count)] = true
			for _, u := range r.Users {
				wantReacts[fmt.Sprintf("%s %s %s", m.TS, r.Name, u)] = true
			}
		}
		return nil
	}
	err := walkChannel(tx, ch, "", func(m *rm.Message, _ bool) error { return add(m) })
	if err != nil {
		return err
	}
	rep.Messages += len(want)
	rep.Reactions += len(wantReacts)

	rs, err := t.db.QueryContext(ctx, t.q(`SELECT ts, thread_ts, is_reply, user_id, user_label, bot_id, subtype, text, search_text,
		edited_user, edited_ts, deleted, missing_since, own, record, watched, tracked, reply_count, latest_reply, reply_watermark,
		last_polled_at, thread_synced_at, posted_at FROM messages WHERE team_id = ? AND channel = ?`), rep.Team, ch)
	if err != nil {
		return err
	}
	got := map[rm.TS][]string{}
	for rs.Next() {
		var (
			tsv                                                     string
			thread, user, bot, sub, eu, ets, rec, latest, watermark sqlString
			label, text, search                                     string
			isReply, deleted, own, watched, tracked                 bool
			replyCount                                              int
			missing, polled, synced, posted                         sqlTime
		)
		if err := rs.Scan(&tsv, &thread, &isReply, &user, &label, &bot, &sub, &text, &search, &eu, &ets, &deleted, &missing,
			&own, &rec, &watched, &tracked, &replyCount, &latest, &watermark, &polled, &synced, &posted); err != nil {
			_ = rs.Close()
			return err
		}
		null := func(s sqlString) string {
			if s.s == "" {
				return "null"
			}
			return s.s
		}
		got[rm.TS(tsv)] = []string{
			"thread_ts=" + null(thread), fmt.Sprint("is_reply=", isReply), "user_id=" + null(user),
			"user_label=" + label, "bot_id=" + null(bot), "subtype=" + null(sub),
			"text=" + text, "search_text=" + search, "edited_user=" + null(eu), "edited_ts=" + null(ets),
			fmt.Sprint("deleted=", deleted), "missing_since=" + fmtTime(missing.t), fmt.Sprint("own=", own),
			"record=" + null(rec), fmt.Sprint("watched=", watched), fmt.Sprint("tracked=", tracked),
			fmt.Sprint("reply_count=", replyCount), "latest_reply=" + null(latest), "reply_watermark=" + null(watermark),
			"last_polled_at=" + fmtTime(polled.t), "thread_synced_at=" + fmtTime(synced.t), "posted_at=" + fmtTime(posted.t),
		}
	}
	_ = rs.Close()
	if err := rs.Err(); err != nil {
		return err
	}
	tss := make([]rm.TS, 0, len(want))
	for ts := range want {
		tss = append(tss, ts)
	}
	slices.SortFunc(tss, func(a, b rm.TS) int { return a.Compare(b) })
	for _, ts := range tss {
		g, ok := got[ts]
		delete(got, ts)
		if !ok {
			rep.add("message %s/%s: missing from the projection", ch, ts)
			continue
		}
		var diffs []string
		for i, w := range want[ts] {
			if g[i] != w {
				diffs = append(diffs, fmt.Sprintf("%s (store) vs %s (projection)", w, g[i]))
			}
		}
		if len(diffs) > 0 {
			rep.add("message %s/%s: %s", ch, ts, strings.Join(diffs, "; "))
		}
	}
	for ts := range got {
		rep.add("message %s/%s: in the projection, not in the store", ch, ts)
	}
	if err := compareSet(ctx, t, rep, ch, "reactions", "SELECT ts, reaction, user_id FROM reactions WHERE team_id = ? AND channel = ?", wantReacts); err != nil {
		return err
	}
	return compareSet(ctx, t, rep, ch, "reaction count", "SELECT ts, reaction, count FROM reaction_counts WHERE team_id = ? AND channel = ?", wantCounts)
}

// compareSet compares the rows (three columns, joined by spaces) of one channel
// with want.
func compareSet(ctx context.Context, t *Target, rep *VerifyReport, ch, what, q string, want map[string]bool) error {
	rs, err := t.db.QueryContext(ctx, t.q(q), rep.Team, ch)
	if err != nil {
		return err
	}
	got := map[string]bool{}
	for rs.Next() {
		var a, b, c string
		if err := rs.Scan(&a, &b, &c); err != nil {
			_ = rs.Close()
			return err
		}
		got[a+" "+b+" "+c] = true
	}
	_ = rs.Close()
	if err := rs.Err(); err != nil {
		return err
	}
	var lines []string
	for k := range want {
		if !got[k] {
			lines = append(lines, fmt.Sprintf("%s %s/%s: missing from the projection", what, ch, k))
		}
	}
	for k := range got {
		if !want[k] {
			lines = append(lines, fmt.Sprintf("%s %s/%s: in the projection, not in the store", what, ch, k))
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		rep.add("%s", l)
	}
	return nil
}

// verifyIndex checks that the search index holds one entry per message, made of its
// search text's tokens.
func verifyIndex(ctx context.Context, t *Target, rep *VerifyReport) error {
	var q string
	if t.kind == KindSQLite {
		// The index is contentless: its entries' ids are what can be read back.
		q = `SELECT (SELECT count(*) FROM messages WHERE team_id = ? AND id NOT IN (SELECT rowid FROM messages_fts)),
		            (SELECT count(*) FROM messages_fts WHERE rowid NOT IN (SELECT id FROM messages))`
		var missing, extra int
		if err := t.db.QueryRowContext(ctx, t.q(q), rep.Team).Scan(&missing, &extra); err != nil {
			return err
		}
		if missing > 0 || extra > 0 {
			rep.add("search index: %d messages without an entry, %d entries without a message", missing, extra)
		}
		return nil
	}
	rs, err := t.db.QueryContext(ctx, t.q("SELECT channel, ts, search_text, search::text FROM messages WHERE team_id = ?"), rep.Team)
	if err != nil {
		return err
	}
	defer func() { _ = rs.Close() }()
	for rs.Next() {
		var ch, ts, text, vec string
		if err := rs.Scan(&ch, &ts, &text, &vec); err != nil {
			return err
		}
		if want := normalTSVector(tokenize(text)); vec != want {
			rep.add("search index %s/%s: %q, want %q", ch, ts, vec, want)
		}
	}
	return rs.Err()
}

// normalTSVector is the text Postgres prints for tsvector(toks): lexemes sorted
// (bytes, then length), each once with its positions ascending.
func normalTSVector(toks []token) string {
	pos := map[string][]int{}
	for i, t := range toks {
		pos[t.text] = append(pos[t.text], min(i+1, 16383))
	}
	lex := make([]string, 0, len(pos))
	for l := range pos {
		lex = append(lex, l)
	}
	slices.SortFunc(lex, func(a, b string) int {
		if len(a) != len(b) {
			n := min(len(a), len(b))
			if c := strings.Compare(a[:n], b[:n]); c != 0 {
				return c
			}
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	for i, l := range lex {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(lexeme(l))
		b.WriteByte(':')
		ps := slices.Compact(pos[l])
		for j, p := range ps {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprint(&b, p)
		}
	}
	return b.String()
}
