package projection

import (
	"encoding/binary"
	"hash"
	"hash/fnv"
	"math"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// messageRow is one row of the messages table, as the store says it should be, with
// its reactions and mentions.
type messageRow struct {
	Channel        string
	TS             rm.TS
	PostedAt       time.Time
	ThreadTS       rm.TS
	IsReply        bool
	UserID         string
	UserLabel      string
	BotID          string
	Subtype        string
	Text           string
	SearchText     string
	EditedUser     string
	EditedTS       rm.TS
	Deleted        bool
	MissingSince   *time.Time
	Own            bool
	Record         string
	Watched        bool
	Tracked        bool
	ReplyCount     int
	LatestReply    rm.TS
	ReplyWatermark rm.TS
	LastPolledAt   *time.Time
	ThreadSyncedAt *time.Time

	Reactions []rm.Reaction
	Mentions  []Mention
	// tokens is the search index's input for SearchText.
	tokens []token
	// ContentHash covers every column but the read times (last_polled_at,
	// thread_synced_at), which change on every read; TextHash the search text.
	ContentHash int64
	TextHash    int64
}

// userRow is one row of the users table.
type userRow struct {
	ID          string
	DisplayName string
	RealName    string
	Label       string
	Deleted     bool
	LookupError string
	FetchedAt   *time.Time
}

// conversationRow is one row of the conversations table.
type conversationRow struct {
	ID          string
	Name        string
	Type        string
	Status      string
	NeededScope string
	IsArchived  bool
	Discovered  bool
	LastSweptAt *time.Time
}

// reader builds rows from one read transaction of the store, caching what many
// rows share (users, conversations).
type reader struct {
	tx    rm.Tx
	users map[string]*rm.User // nil value: not stored
	convs map[string]*rm.Conversation
}

func newReader(tx rm.Tx) (*reader, error) {
	r := &reader{tx: tx, users: map[string]*rm.User{}, convs: map[string]*rm.Conversation{}}
	err := tx.Conversations(func(c rm.Conversation) error {
		r.convs[c.ID] = &c
		return nil
	})
	return r, err
}

func (r *reader) user(id string) *rm.User {
	if u, ok := r.users[id]; ok {
		return u
	}
	u, ok, err := r.tx.User(id)
	var p *rm.User
	if err == nil && ok {
		p = &u
	}
	r.users[id] = p
	return p
}

// label is the readmodel's user label of an ID: "" when not looked up yet.
func (r *reader) label(id string) string {
	if u := r.user(id); u != nil {
		return u.Label()
	}
	return ""
}

func (r *reader) convName(id string) string {
	if c := r.convs[id]; c != nil {
		return c.Name
	}
	return ""
}

// message returns the row of ref as the store holds it, or false when the
// projection has no such row: no record, no stored conversation, or a reply whose
// thread parent is not a stored timeline message (the export leaves it out too).
func (r *reader) message(ref rm.Ref) (messageRow, bool, error) {
	if r.convs[ref.Channel] == nil {
		return messageRow{}, false, nil
	}
	m, ok, err := r.tx.Message(ref.Channel, ref.TS)
	if err != nil || !ok {
		return messageRow{}, false, err
	}
	if !m.InTimeline() {
		p, ok, err := r.tx.Message(m.Channel, m.ThreadTS)
		if err != nil || !ok || !p.InTimeline() || p.IsReply() {
			return messageRow{}, false, err
		}
	}
	return r.row(&m)
}

// row renders a stored message as its row.
func (r *reader) row(m *rm.Message) (messageRow, bool, error) {
	watched, err := r.tx.IsWatched(rm.Ref{Channel: m.Channel, TS: m.TS})
	if err != nil {
		return messageRow{}, false, err
	}
	row := messageRow{
		Channel: m.Channel, TS: m.TS, PostedAt: tsTime(m.TS), ThreadTS: m.ThreadTS, IsReply: m.IsReply(),
		UserID: m.User, UserLabel: rm.UserLabel(m, r.label), BotID: m.BotID, Subtype: m.Subtype,
		Text: m.Text, Deleted: m.Deleted, MissingSince: micros(m.MissingSince), Own: m.OwnPost,
		Record: m.Record, Watched: watched, Tracked: !m.Retired && !m.IsReply(),
		ReplyCount: m.ReplyCount, LatestReply: m.LatestReply, ReplyWatermark: m.ReplyWatermark,
		LastPolledAt: micros(m.LastPolledAt), ThreadSyncedAt: micros(m.ThreadSyncedAt),
		Reactions: m.Reactions,
	}
	if m.Edited != nil {
		row.EditedUser, row.EditedTS = m.Edited.User, m.Edited.TS
	}
	row.SearchText, row.Mentions = Render(m.Text, Names{User: r.label, Conversation: r.convName})
	row.tokens = tokenize(row.SearchText)
	row.hash()
	return row, true, nil
}

// hash sets ContentHash and TextHash.
func (row *messageRow) hash() {
	h := fnv.New64a()
	str := func(s string) {
		var n [binary.MaxVarintLen64]byte
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	num := func(v int64) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(v))
		h.Write(n[:])
	}
	str(row.SearchText)
	row.TextHash = int64(h.Sum64() & math.MaxInt64)
	for _, s := range []string{row.Channel, string(row.TS), string(row.ThreadTS), row.UserID, row.UserLabel, row.BotID,
		row.Subtype, row.Text, row.EditedUser, string(row.EditedTS), row.Record, string(row.LatestReply), string(row.ReplyWatermark)} {
		str(s)
	}
	for _, b := range []bool{row.IsReply, row.Deleted, row.Own, row.Watched, row.Tracked} {
		num(boolInt(b))
	}
	num(int64(row.ReplyCount))
	timeHash(h, row.MissingSince)
	num(int64(len(row.Reactions)))
	for _, re := range row.Reactions {
		str(re.Name)
		num(int64(re.Count))
		num(int64(len(re.Users)))
		for _, u := range re.Users {
			str(u)
		}
	}
	for _, m := range row.Mentions {
		str(m.Kind)
		str(m.Target)
	}
	row.ContentHash = int64(h.Sum64() & math.MaxInt64)
}

func timeHash(h hash.Hash64, t *time.Time) {
	var n [8]byte
	if t != nil {
		binary.BigEndian.PutUint64(n[:], uint64(t.UnixMicro()))
	}
	h.Write(n[:])
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// reactionUsers lists the (reaction, user) facts of a row: one per user Slack listed
// (it truncates long lists; reaction_counts keeps the count).
func (row *messageRow) reactionUsers() [][2]string {
	var out [][2]string
	seen := map[[2]string]bool{}
	for _, re := range row.Reactions {
		for _, u := range re.Users {
			k := [2]string{re.Name, u}
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// reactionCounts lists each reaction with its count, once per name.
func (row *messageRow) reactionCounts() []rm.Reaction {
	var out []rm.Reaction
	seen := map[string]bool{}
	for _, re := range row.Reactions {
		if !seen[re.Name] {
			seen[re.Name] = true
			out = append(out, rm.Reaction{Name: re.Name, Count: re.Count})
		}
	}
	return out
}

func userRowOf(u *rm.User) userRow {
	var fetched *time.Time
	if !u.FetchedAt.IsZero() {
		fetched = micros(&u.FetchedAt)
	}
	return userRow{ID: u.ID, DisplayName: u.DisplayName, RealName: u.RealName, Label: u.Label(),
		Deleted: u.Deleted, LookupError: u.LookupError, FetchedAt: fetched}
}

func conversationRowOf(c *rm.Conversation) conversationRow {
	status := c.Status
	if status == "" {
		status = rm.StatusPending
	}
	return conversationRow{ID: c.ID, Name: c.Name, Type: c.Type, Status: status, NeededScope: c.NeededScope,
		IsArchived: c.IsArchived, Discovered: c.Discovered, LastSweptAt: micros(c.LastSweptAt)}
}

// micros is t in UTC at the microsecond, the precision both databases keep.
func micros(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC().Truncate(time.Microsecond)
	return &u
}

// tsTime is the time a Slack ts stands for, UTC.
func tsTime(ts rm.TS) time.Time {
	sec, us, ok := ts.Parts()
	if !ok || sec > math.MaxInt64/2 {
		return time.Unix(0, 0).UTC()
	}
	return time.Unix(int64(sec), int64(us)*1000).UTC()
}

// messageID is the row's preferred id: its ts in microseconds times idSlots, plus a
// slot picked by its conversation, so that ids order messages by ts and a search can
// walk the index newest first and stop at a page. Two messages of one ts in
// conversations that pick the same slot take the next free one (idFor).
func messageID(team, channel string, ts rm.TS) int64 {
	sec, us, ok := ts.Parts()
	if !ok || sec > maxIDSeconds {
		sec, us = 0, 0
	}
	h := fnv.New32a()
	h.Write([]byte(team))
	h.Write([]byte{0})
	h.Write([]byte(channel))
	return (int64(sec)*1_000_000+int64(us))*idSlots + int64(h.Sum32()%idSlots)
}

// idSlots is the number of ids one microsecond of ts has; maxIDSeconds keeps ids
// within int64 (a ts until the year 2255).
const (
	idSlots      = 1024
	maxIDSeconds = math.MaxInt64/idSlots/1_000_000 - 1
)

// walkChannel calls fn for the messages of ch the projection holds, as the export
// lists them: each timeline message with ts after after ("" for all), ascending,
// each followed by the replies of its thread that are not in the timeline
// (thread_broadcast replies are, in their own place). fn's ErrStopIteration ends
// the walk.
func walkChannel(tx rm.Tx, ch string, after rm.TS, fn func(m *rm.Message, timeline bool) error) error {
	return tx.Timeline(ch, after, "", func(m rm.Message) error {
		if m.TS == after {
			return nil
		}
		if err := fn(&m, true); err != nil || m.IsReply() {
			return err
		}
		replies, err := tx.Replies(ch, m.TS)
		if err != nil {
			return err
		}
		for i := range replies {
			if !replies[i].InTimeline() {
				if err := fn(&replies[i], false); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
