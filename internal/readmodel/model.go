package readmodel

import (
	"strings"
	"time"
)

// Conversation types, as slackpoll names them (README, "How it works"). They are derived from
// conversations.info flags by TypeFromFlags, never from the ID prefix.
const (
	TypePublicChannel  = "public_channel"
	TypePrivateChannel = "private_channel"
	TypeMPIM           = "mpim"
	TypeIM             = "im"
)

// Conversation statuses (README, "Commands" (export)).
const (
	StatusPending         = "pending"
	StatusOK              = "ok"
	StatusNotInChannel    = "not_in_channel"
	StatusMissingScope    = "missing_scope"
	StatusChannelNotFound = "channel_not_found"
	StatusArchived        = "archived"
	StatusError           = "error"
)

// Subtypes with a meaning for the read model.
const (
	SubtypeTombstone       = "tombstone"
	SubtypeThreadBroadcast = "thread_broadcast"
	SubtypeBotMessage      = "bot_message"
)

// TypeFromFlags maps conversations.info flags to a conversation type: is_im → im,
// else is_mpim → mpim, else is_private → private_channel, else public_channel.
func TypeFromFlags(isIM, isMPIM, isPrivate bool) string {
	switch {
	case isIM:
		return TypeIM
	case isMPIM:
		return TypeMPIM
	case isPrivate:
		return TypePrivateChannel
	}
	return TypePublicChannel
}

// HistoryScope returns the OAuth scope conversations.history and .replies need for a
// conversation type: channels:history, groups:history, im:history or mpim:history.
func HistoryScope(convType string) string {
	switch convType {
	case TypeIM:
		return "im:history"
	case TypeMPIM:
		return "mpim:history"
	case TypePrivateChannel:
		return "groups:history"
	}
	return "channels:history"
}

// Reaction is one emoji on a message. Count is authoritative; Users may be truncated by
// Slack. Skin-tone variants ("thumbsup::skin-tone-2") are separate reactions.
type Reaction struct {
	Name  string   `json:"name"`
	Count int      `json:"count"`
	Users []string `json:"users"`
}

// Edited is a message's edited marker: who edited it and the ts of the edit.
type Edited struct {
	User string `json:"user"`
	TS   TS     `json:"ts"`
}

// Message is one stored message, keyed by (Channel, TS): a top-level message, a thread
// parent, a thread reply, or a thread_broadcast reply (one record, both in the timeline
// and in its thread). Its Slack fields are replaced whole on every read of it.
type Message struct {
	Channel  string `json:"channel"`
	TS       TS     `json:"ts"`
	ThreadTS TS     `json:"thread_ts"`
	User     string `json:"user"`
	BotID    string `json:"bot_id"`
	// BotName is a bot message's label: username, else bot_profile.name (README, "How it works").
	BotName     string     `json:"bot_name"`
	Subtype     string     `json:"subtype"`
	Text        string     `json:"text"`
	Edited      *Edited    `json:"edited"`
	Reactions   []Reaction `json:"reactions"`
	ReplyCount  int        `json:"reply_count"`
	LatestReply TS         `json:"latest_reply"`

	// Fields only polling knows.

	// ReplyWatermark is the LatestReply at which the reply set was last fully read.
	ReplyWatermark TS         `json:"reply_watermark"`
	OwnPost        bool       `json:"own_post"`
	Deleted        bool       `json:"deleted"`
	MissingSince   *time.Time `json:"missing_since"`
	Record         string     `json:"record"`
	// LastPolledAt is when the message itself was last read; nil for a message added
	// by track and never read.
	LastPolledAt *time.Time `json:"last_polled_at"`
	// ThreadSyncedAt is when a thread parent's whole reply set was last read.
	ThreadSyncedAt *time.Time `json:"thread_synced_at"`
	// ThreadGone is set when conversations.replies answered thread_not_found: Slack's
	// final word that the thread is gone; only the parent's own reads continue.
	ThreadGone bool `json:"thread_gone"`
	// Retired is set on a top-level message that the tracking policy no longer
	// rotates: older than tracking.horizon and not watched. It stays in the store and
	// the export; a bulk window or range read still refreshes it when it covers it.
	Retired bool `json:"retired"`
}

// RotatedAt is the tail rotation's clock for m: when m was last read and, for a thread
// parent whose thread still exists, when its whole thread was last read — the older
// of the two, since the tail re-reads both together. nil (never) sorts first. A parent
// inside the bulk window is re-read by every head read, but an edit or deletion of an
// older reply, or a reaction on a reply, shows only in a thread read: so its thread
// ages in the rotation like any message.
func (m *Message) RotatedAt() *time.Time {
	if m.LastPolledAt == nil || !m.IsParent() || m.ThreadGone {
		return m.LastPolledAt
	}
	if m.ThreadSyncedAt == nil || m.ThreadSyncedAt.Before(*m.LastPolledAt) {
		return m.ThreadSyncedAt
	}
	return m.LastPolledAt
}

// IsReply reports whether m is a thread reply (thread_ts set and different from ts).
func (m *Message) IsReply() bool { return m.ThreadTS != "" && m.ThreadTS != m.TS }

// IsParent reports whether m is (or was) a thread parent.
func (m *Message) IsParent() bool {
	return m.ThreadTS == m.TS || m.ReplyCount > 0 || m.LatestReply != "" || m.ReplyWatermark != ""
}

// InTimeline reports whether m shows in the channel timeline: every non-reply, and
// thread_broadcast replies.
func (m *Message) InTimeline() bool { return !m.IsReply() || m.Subtype == SubtypeThreadBroadcast }

// IsTracked reports whether m belongs to the tail rotation: every top-level message
// the tracking policy has not retired (replies are refreshed through their parent's
// thread read).
func (m *Message) IsTracked() bool { return !m.IsReply() && !m.Retired }

// Ref names one message: the join key (channel, ts).
type Ref struct {
	Channel string `json:"channel"`
	TS      TS     `json:"ts"`
}

// Compare orders refs by channel, then by ts (TS.Compare): -1, 0 or +1.
func (r Ref) Compare(o Ref) int {
	if c := strings.Compare(r.Channel, o.Channel); c != 0 {
		return c
	}
	return r.TS.Compare(o.TS)
}

// User is a cached users.info answer. Label is display_name → real_name → the ID.
type User struct {
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	RealName    string `json:"real_name"`
	Deleted     bool   `json:"deleted"`
	// LookupError is Slack's refusal (user_not_found, user_not_visible); "" on success.
	LookupError string    `json:"lookup_error"`
	FetchedAt   time.Time `json:"fetched_at"`
}

// Label returns the name to show for u: profile.display_name, else profile.real_name,
// else the raw ID; never "".
func (u *User) Label() string {
	if u.DisplayName != "" {
		return u.DisplayName
	}
	if u.RealName != "" {
		return u.RealName
	}
	return u.ID
}

// Conversation is the stored state of one conversation.
type Conversation struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Name       string `json:"name"`
	IsArchived bool   `json:"is_archived"`
	Status     string `json:"status"`
	// NeededScope is the scope missing_scope asked for; "" otherwise.
	NeededScope string `json:"needed_scope"`
	// ErrorDetail is the last per-conversation error code or message, for status.
	ErrorDetail string     `json:"error_detail"`
	LastSweptAt *time.Time `json:"last_swept_at"`
	// InfoReadAt is when conversations.info was last read successfully or not; info is
	// re-read at most hourly and after a per-conversation error.
	InfoReadAt *time.Time `json:"info_read_at"`
	// RetryAt is the earliest time a conversation in an error status is read again.
	RetryAt *time.Time `json:"retry_at"`
	// Discovered is set for conversations found by discover: member rather than listed.
	Discovered bool `json:"discovered"`

	// Bulk window walks (head reads). CoveredTo is the top of the last walk that reached
	// its empty cursor: every message of the window up to it has been read at least
	// once, and is tracked since. WalkTop and WalkBottom are a walk cut short (budget,
	// deadline, error): it read (WalkBottom, WalkTop] newest first, and the next sweep
	// resumes below WalkBottom, down to CoveredTo, rather than from the newest message
	// again. "" when unknown or none.
	CoveredTo  TS `json:"covered_to"`
	WalkTop    TS `json:"walk_top"`
	WalkBottom TS `json:"walk_bottom"`
	// HeadReadAt is when the conversation's bulk window (its head: new messages) was
	// last read, a page of a walk or a whole one; nil before the first. The history
	// scheduler spends a head read when this is older than the head bound, or when
	// the new messages it expects fix more staleness than a tail range would.
	HeadReadAt *time.Time `json:"head_read_at"`
	// RetiredTo is the newest ts the tracking policy retired, "" when none: a longer
	// horizon brings back what lies between it and the new horizon.
	RetiredTo TS `json:"retired_to"`
	// Baselined is set by the conversation's first complete bulk window walk, and
	// FeedFrom is its baseline ts: the later of the newest ts that walk read and
	// baselineMargin before the walk's start. A message first seen later is news for
	// the change feed (message_posted, reply_added) only if its ts is after FeedFrom;
	// older ones are history being filled in (a reply can be newer than every
	// timeline message, hence the clock, which is Slack's once a Date header told
	// the skew; the margin absorbs a skew too small to be corrected (under 30 s),
	// at the price of reporting the last minute of history as news).
	Baselined bool `json:"baselined"`
	FeedFrom  TS   `json:"feed_from"`
}

// baselineMargin is how far before a conversation's first complete walk its change
// feed baseline is set.
const baselineMargin = time.Minute

// Cover records a complete bulk window read through top ("" when it read nothing),
// by a walk that started at started (zero when not known: a walk resumed over
// several ticks): the window is covered up to top, no walk is pending, and the first
// one sets the change feed's baseline.
func (c *Conversation) Cover(top TS, started time.Time) {
	if top != "" {
		c.CoveredTo = top
	}
	c.WalkTop, c.WalkBottom = "", ""
	if !c.Baselined {
		c.Baselined, c.FeedFrom = true, ""
		if !started.IsZero() {
			c.FeedFrom = TSFromUnix(started.Add(-baselineMargin).Unix())
		}
		if c.FeedFrom.Before(c.CoveredTo) {
			c.FeedFrom = c.CoveredTo
		}
	}
}

// ApplyInfo copies conversations.info flags into c, read at now. An archived conversation is
// read-only in Slack: it keeps its data and is skipped until unarchived.
func (c *Conversation) ApplyInfo(info ConversationInfo, now time.Time) {
	c.Type = info.Type()
	if info.Name != "" {
		c.Name = info.Name
	}
	c.IsArchived = info.IsArchived
	c.InfoReadAt = &now
	switch {
	case info.IsArchived:
		c.Status = StatusArchived
	case c.Status == StatusArchived:
		c.Status = StatusPending
	}
}

// Identity is what auth.test says about the token: the bot user and bot IDs used to
// recognise own posts and reactions, and the granted scopes (X-OAuth-Scopes).
type Identity struct {
	TeamID  string    `json:"team_id"`
	UserID  string    `json:"user_id"`
	BotID   string    `json:"bot_id"`
	Scopes  []string  `json:"scopes"`
	CheckAt time.Time `json:"checked_at"`
}

// MethodState is the persisted pacing state of one Slack method, so a restarted daemon
// neither fires early nor ignores a Retry-After.
type MethodState struct {
	LastCall  time.Time `json:"last_call"`
	NotBefore time.Time `json:"not_before"`
	// SlackLastCall is LastCall by Slack's clock (the Date of its answers); zero when
	// no answer had told it yet. A restart compares it with Slack's clock, which a
	// local clock moved between runs does not change.
	SlackLastCall time.Time `json:"slack_last_call,omitzero"`
}

// Stop reasons of a tick (TickSummary.StopReason).
const (
	StopComplete = "complete"
	StopDeadline = "deadline"
	StopShutdown = "shutdown"
	StopError    = "error"
)

// TickSummary describes one finished tick, for logs, status and metrics.
type TickSummary struct {
	Started  time.Time      `json:"started"`
	Finished time.Time      `json:"finished"`
	Calls    map[string]int `json:"calls"`
	// StopReason is "complete", "budget:<cap>", "deadline", "shutdown" or "error".
	StopReason string `json:"stop_reason"`
	// MessagesWritten counts the message records whose stored content the tick
	// wrote (new or changed); a read that found a message as stored updates only its
	// read times and is not counted.
	MessagesWritten int      `json:"messages_written"`
	ThreadsWritten  int      `json:"threads_written"`
	TailRead        int      `json:"tail_read"`
	UsersResolved   int      `json:"users_resolved"`
	Errors          []string `json:"errors"`
	Staleness
}

// TickRunning is the tick under way: its number in this process, when it started,
// its soft deadline and the calls it made so far per method.
type TickRunning struct {
	Tick         int
	Started      time.Time
	SoftDeadline time.Time
	Calls        map[string]int
}

// Staleness is what a tick reports about how stale the read model can be. Durations
// are estimates from the throughput of the last ticks (0: not known yet).
type Staleness struct {
	// RotationPeriod is the time to re-read every tracked message and thread: the
	// worst-case staleness of a change no watermark shows (an edit, a reaction, an
	// older reply changed), for the tracked class.
	RotationPeriod time.Duration `json:"rotation_period"`
	// WatchedRotation is the same for the watched class (record-keyed and tracked on
	// request), which has a guaranteed share of every method's calls.
	WatchedRotation time.Duration `json:"watched_rotation"`
	Tracked         int           `json:"tracked"`
	Watched         int           `json:"watched"`
	// Threads is the number of tracked thread parents whose thread rotates.
	Threads int `json:"threads"`
	// PhysicalLimit is the least time in which the configured rates could re-read
	// every tracked message and thread: max(⌈messages ÷ page⌉ history calls,
	// Σ⌈(replies + 1) ÷ page⌉ replies calls), each at its method's rate.
	PhysicalLimit time.Duration `json:"physical_limit"`
	// PageCap is the number of messages per page the server was seen to return at
	// most (15 for non-Marketplace apps), 0 while unknown.
	PageCap int `json:"page_cap"`
	// HeadAges is, per polled conversation, the time since its bulk window was last
	// read: how late a new message may be to appear.
	HeadAges map[string]time.Duration `json:"head_ages"`
}
