package mcp

import (
	"time"

	"github.com/slackpoll/slackpoll/internal/export"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/status"
)

// Freshness classes of a message (Message.Class): the rotation that re-reads it,
// which bounds how stale it may be (README, "How stale it can be").
const (
	// ClassWatched: a record-keyed message (or a reply in its thread).
	ClassWatched = "watched"
	// ClassTracked: a message in the tail rotation (or a reply in its thread).
	ClassTracked = "tracked"
	// ClassUntracked: retired by tracking.horizon; nothing re-reads it.
	ClassUntracked = "untracked"
)

// Message is a message as every tool and resource answers it.
type Message struct {
	Channel string `json:"channel" jsonschema:"the conversation ID"`
	TS      rm.TS  `json:"ts" jsonschema:"the message's Slack ts, its ID within the conversation"`
	// ThreadTS is the thread parent's ts for a reply (and for a parent, its own);
	// "" for a message without a thread.
	ThreadTS  rm.TS      `json:"thread_ts" jsonschema:"the thread's parent ts: for a reply its parent, for a parent its own ts; empty without a thread"`
	PostedAt  time.Time  `json:"posted_at" jsonschema:"when it was posted (the time of ts), RFC 3339 UTC"`
	User      string     `json:"user" jsonschema:"the author's user ID (empty for a bot message)"`
	UserLabel string     `json:"user_label" jsonschema:"the author's name as shown: display name, real name, bot name or ID"`
	BotID     string     `json:"bot_id"`
	Subtype   string     `json:"subtype" jsonschema:"Slack's subtype, e.g. thread_broadcast; empty for a plain message"`
	Text      string     `json:"text" jsonschema:"the text as Slack stores it (mrkdwn, mentions as <@U…>)"`
	Edited    *rm.Edited `json:"edited" jsonschema:"who edited it and when (a ts), null when never"`
	Reactions []Reaction `json:"reactions"`
	// ReplyCount and LatestReply describe a parent's thread; read_thread reads it.
	ReplyCount   int        `json:"reply_count" jsonschema:"replies in its thread (read them with read_thread)"`
	LatestReply  rm.TS      `json:"latest_reply"`
	OwnPost      bool       `json:"own_post" jsonschema:"posted by the app whose token slackpoll polls with"`
	Deleted      bool       `json:"deleted" jsonschema:"Slack replaced it with a tombstone (or its thread is gone): text is the last known"`
	MissingSince *time.Time `json:"missing_since" jsonschema:"since when a complete read no longer finds it; null while it is found"`
	Record       string     `json:"record" jsonschema:"the record key an app attached to it, if any"`
	URI          string     `json:"uri" jsonschema:"its MCP resource"`
	Freshness
}

// Freshness says how fresh one message is: when it was last read from Slack, and
// the most a change to it may wait to be seen.
type Freshness struct {
	LastPolledAt *time.Time `json:"last_polled_at" jsonschema:"when slackpoll last read it from Slack, RFC 3339 UTC; null: never yet"`
	Class        string     `json:"class" jsonschema:"watched, tracked or untracked: the rotation that re-reads it"`
	// StalenessSeconds is the worst-case staleness of its class: an edit or a
	// reaction made now is in the model within that many seconds.
	StalenessSeconds *float64 `json:"staleness_seconds" jsonschema:"the worst-case staleness of its class in seconds (a change made now is seen within it); null for untracked, or while not known"`
}

// Reaction is one emoji on a message.
type Reaction struct {
	Name  string   `json:"name"`
	Count int      `json:"count"`
	Users []string `json:"users" jsonschema:"user IDs (Slack may truncate the list; count is exact)"`
}

// AnswerFreshness is what every answer says of the model as a whole.
type AnswerFreshness struct {
	GeneratedAt time.Time `json:"generated_at" jsonschema:"when this answer was read from the model"`
	// DaemonRunning is false when no daemon polls the store: nothing is refreshed.
	DaemonRunning bool `json:"daemon_running" jsonschema:"false when no slackpoll daemon is polling: then nothing gets fresher"`
	// TrackedStalenessSeconds and WatchedStalenessSeconds are the worst-case
	// staleness of the two classes (Freshness.StalenessSeconds).
	TrackedStalenessSeconds *float64 `json:"tracked_staleness_seconds"`
	WatchedStalenessSeconds *float64 `json:"watched_staleness_seconds"`
}

// classes holds what a message's freshness is computed from.
type classes struct {
	tracked, watched *float64
	answer           AnswerFreshness
}

func newClasses(rep *status.Report) classes {
	tracked, watched := rep.ClassStaleness()
	return classes{tracked: tracked, watched: watched, answer: AnswerFreshness{
		GeneratedAt: rep.GeneratedAt, DaemonRunning: rep.DaemonRunning,
		TrackedStalenessSeconds: tracked, WatchedStalenessSeconds: watched,
	}}
}

// of returns the freshness of a message read at polled, whose class is decided by
// its own (or, for a reply, its thread parent's) record key and tracking.
func (c classes) of(polled *time.Time, record string, tracked bool) Freshness {
	f := Freshness{LastPolledAt: polled}
	switch {
	case record != "":
		f.Class, f.StalenessSeconds = ClassWatched, c.watched
	case tracked:
		f.Class, f.StalenessSeconds = ClassTracked, c.tracked
	default:
		f.Class = ClassUntracked
	}
	return f
}

// messageOf renders a timeline line (without its replies).
func (c classes) messageOf(l *export.MessageLine) Message {
	m := Message{
		Channel: l.Channel, TS: l.TS, ThreadTS: l.ThreadTS, PostedAt: postedAt(l.TS),
		User: l.User, UserLabel: l.UserLabel, BotID: l.BotID, Subtype: l.Subtype, Text: l.Text,
		Edited: l.Edited, Reactions: reactions(l.Reactions), ReplyCount: l.ReplyCount, LatestReply: l.LatestReply,
		OwnPost: l.OwnPost, Deleted: l.Deleted, MissingSince: l.MissingSince, Record: l.Record,
		URI:       messageURI(l.Channel, l.TS),
		Freshness: c.of(l.LastPolledAt, l.Record, l.Tracked),
	}
	return m
}

// replyOf renders a reply of the thread parent p: it is refreshed with its thread,
// so its class is p's, and its last read is the thread's (a reply line carries no
// read time of its own). A reply the parent's line lists was read whole with the
// thread when p's reply watermark was set; its last_polled_at is then p's.
func (c classes) replyOf(p *export.MessageLine, r *export.ReplyLine) Message {
	return Message{
		Channel: p.Channel, TS: r.TS, ThreadTS: r.ThreadTS, PostedAt: postedAt(r.TS),
		User: r.User, UserLabel: r.UserLabel, BotID: r.BotID, Subtype: r.Subtype, Text: r.Text,
		Edited: r.Edited, Reactions: reactions(r.Reactions), OwnPost: r.OwnPost,
		URI:       messageURI(p.Channel, r.TS),
		Freshness: c.of(p.LastPolledAt, p.Record, p.Tracked),
	}
}

func reactions(rs []rm.Reaction) []Reaction {
	out := make([]Reaction, len(rs))
	for i, r := range rs {
		users := r.Users
		if users == nil {
			users = []string{}
		}
		out[i] = Reaction{Name: r.Name, Count: r.Count, Users: users}
	}
	return out
}

// postedAt is the time of a ts, in UTC.
func postedAt(ts rm.TS) time.Time {
	sec, micros, _ := ts.Parts()
	return time.Unix(int64(sec), int64(micros)*1000).UTC()
}

// size estimates the bytes a message takes in an answer (its text and reactions,
// plus the fixed fields), to bound answers in bytes as well as in items.
func (m *Message) size() int {
	n := 600 + len(m.Text)
	for _, r := range m.Reactions {
		n += len(r.Name) + 16*len(r.Users) + 40
	}
	return n
}
