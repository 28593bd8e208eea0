// Package export is the export format: the read model as JSON Lines, one object per
// conversation, timeline message (with its thread) and user, every field always
// present (README, "Commands" (export)). slackpoll export, GET /v1/export and the
// message endpoints of the API answer in it; the demo and its convergence check
// compare models in it.
package export

import (
	"slices"
	"time"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Line kinds of the export format (README, "Commands" (export)).
const (
	KindConversation = "conversation"
	KindMessage      = "message"
	KindUser         = "user"
)

// ConversationLine is one conversation in the export format (README, "Commands" (export)).
type ConversationLine struct {
	Kind string `json:"kind"`
	// TeamID is the workspace (auth.test's team_id; "" before the store knows it):
	// the lines of many workspaces' exports can be told apart.
	TeamID      string     `json:"team_id"`
	ID          string     `json:"id"`
	Type        string     `json:"type"`
	Name        string     `json:"name"`
	IsArchived  bool       `json:"is_archived"`
	Status      string     `json:"status"`
	NeededScope string     `json:"needed_scope"`
	LastSweptAt *time.Time `json:"last_swept_at"`
}

// ReplyLine is one thread reply inside a MessageLine's Replies.
type ReplyLine struct {
	TS        rm.TS         `json:"ts"`
	ThreadTS  rm.TS         `json:"thread_ts"`
	User      string        `json:"user"`
	UserLabel string        `json:"user_label"`
	BotID     string        `json:"bot_id"`
	Subtype   string        `json:"subtype"`
	Text      string        `json:"text"`
	Edited    *rm.Edited    `json:"edited"`
	Reactions []rm.Reaction `json:"reactions"`
	OwnPost   bool          `json:"own_post"`
	// LastPolledAt is when the reply was last read (with its thread, or on its own
	// when it is tracked); nil when never.
	LastPolledAt *time.Time `json:"last_polled_at"`
}

// MessageLine is one timeline message in the export format (README, "Commands" (export)): top-level
// messages, thread parents and thread_broadcast replies.
type MessageLine struct {
	Kind           string        `json:"kind"`
	TeamID         string        `json:"team_id"` // as ConversationLine's
	Channel        string        `json:"channel"`
	TS             rm.TS         `json:"ts"`
	ThreadTS       rm.TS         `json:"thread_ts"`
	User           string        `json:"user"`
	UserLabel      string        `json:"user_label"`
	BotID          string        `json:"bot_id"`
	Subtype        string        `json:"subtype"`
	Text           string        `json:"text"`
	Edited         *rm.Edited    `json:"edited"`
	Reactions      []rm.Reaction `json:"reactions"`
	ReplyCount     int           `json:"reply_count"`
	LatestReply    rm.TS         `json:"latest_reply"`
	ReplyWatermark rm.TS         `json:"reply_watermark"`
	Replies        []ReplyLine   `json:"replies"`
	OwnPost        bool          `json:"own_post"`
	Deleted        bool          `json:"deleted"`
	MissingSince   *time.Time    `json:"missing_since"`
	Record         string        `json:"record"`
	LastPolledAt   *time.Time    `json:"last_polled_at"`
	// Tracked is false for a message the tracking policy retired (older than
	// tracking.horizon and not watched): kept, no longer re-read in rotation.
	Tracked bool `json:"tracked"`
}

// UserLine is one looked-up user in the export format (README, "Commands" (export)).
type UserLine struct {
	Kind        string     `json:"kind"`
	TeamID      string     `json:"team_id"` // as ConversationLine's
	ID          string     `json:"id"`
	DisplayName string     `json:"display_name"`
	RealName    string     `json:"real_name"`
	Label       string     `json:"label"`
	Deleted     bool       `json:"deleted"`
	LookupError string     `json:"lookup_error"`
	FetchedAt   *time.Time `json:"fetched_at"`
}

// utcPtr returns t in UTC, whole seconds; t itself when it is already so (a line
// only reads it), saving an export an allocation per message.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	if t.Location() == time.UTC && t.Nanosecond() == 0 {
		return t
	}
	u := t.UTC().Truncate(time.Second)
	return &u
}

// reactionsOrEmpty returns rs with no nil slice (a line's reactions and users are
// always arrays); rs itself when it has none.
func reactionsOrEmpty(rs []rm.Reaction) []rm.Reaction {
	if rs == nil {
		return []rm.Reaction{}
	}
	if !slices.ContainsFunc(rs, func(r rm.Reaction) bool { return r.Users == nil }) {
		return rs
	}
	out := make([]rm.Reaction, len(rs))
	for i, r := range rs {
		if r.Users == nil {
			r.Users = []string{}
		}
		out[i] = r
	}
	return out
}

// NewConversationLine renders c as an export line.
func NewConversationLine(c *rm.Conversation) ConversationLine {
	status := c.Status
	if status == "" {
		status = rm.StatusPending
	}
	return ConversationLine{
		Kind: KindConversation, ID: c.ID, Type: c.Type, Name: c.Name,
		IsArchived: c.IsArchived, Status: status, NeededScope: c.NeededScope,
		LastSweptAt: utcPtr(c.LastSweptAt),
	}
}

// NewReplyLine renders a thread reply as an element of a message line's replies.
func NewReplyLine(r *rm.Message, label rm.Labeler) ReplyLine {
	return ReplyLine{
		TS: r.TS, ThreadTS: r.ThreadTS, User: r.User, UserLabel: rm.UserLabel(r, label),
		BotID: r.BotID, Subtype: r.Subtype, Text: r.Text, Edited: r.Edited,
		Reactions: reactionsOrEmpty(r.Reactions), OwnPost: r.OwnPost,
		LastPolledAt: utcPtr(r.LastPolledAt),
	}
}

// NewMessageLine renders a timeline message and its replies (ascending by ts) as an
// export line.
func NewMessageLine(m *rm.Message, replies []rm.Message, label rm.Labeler) MessageLine {
	rl := make([]ReplyLine, len(replies))
	for i := range replies {
		rl[i] = NewReplyLine(&replies[i], label)
	}
	return MessageLine{
		Kind: KindMessage, Channel: m.Channel, TS: m.TS, ThreadTS: m.ThreadTS,
		User: m.User, UserLabel: rm.UserLabel(m, label), BotID: m.BotID, Subtype: m.Subtype,
		Text: m.Text, Edited: m.Edited, Reactions: reactionsOrEmpty(m.Reactions),
		ReplyCount: m.ReplyCount, LatestReply: m.LatestReply, ReplyWatermark: m.ReplyWatermark,
		Replies: rl, OwnPost: m.OwnPost, Deleted: m.Deleted,
		MissingSince: utcPtr(m.MissingSince), Record: m.Record,
		LastPolledAt: utcPtr(m.LastPolledAt), Tracked: !m.Retired,
	}
}

// NewUserLine renders a cached user as an export line.
func NewUserLine(u *rm.User) UserLine {
	var fetched *time.Time
	if !u.FetchedAt.IsZero() {
		fetched = utcPtr(&u.FetchedAt)
	}
	return UserLine{
		Kind: KindUser, ID: u.ID, DisplayName: u.DisplayName, RealName: u.RealName,
		Label: u.Label(), Deleted: u.Deleted, LookupError: u.LookupError, FetchedAt: fetched,
	}
}
