package readmodel

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"slices"
	"time"
)

// Change kinds: what the writer observed when a read replaced what the store held
// (README, "Change feed").
const (
	// ChangeMessagePosted: a timeline message seen for the first time, newer than
	// its conversation's baseline (see Conversation.FeedFrom).
	ChangeMessagePosted = "message_posted"
	// ChangeMessageEdited: text or the edited marker changed.
	ChangeMessageEdited = "message_edited"
	// ChangeMessageDeleted: Slack answered a tombstone, or thread_not_found for the
	// message's thread.
	ChangeMessageDeleted = "message_deleted"
	// ChangeMessageMissing: a complete read that covered the message did not return it
	// (missing_since set); ChangeMessageReappeared: a later read returned it again.
	ChangeMessageMissing    = "message_missing"
	ChangeMessageReappeared = "message_reappeared"
	// ChangeReactionAdded and ChangeReactionRemoved are one user's reaction, the fact
	// (channel, ts, reaction, user). ChangeReactionCountChanged replaces them when
	// Slack's users list of the reaction is truncated (count > len(users)) before or
	// after: then who changed is not known, only the new count and the users listed.
	ChangeReactionAdded        = "reaction_added"
	ChangeReactionRemoved      = "reaction_removed"
	ChangeReactionCountChanged = "reaction_count_changed"
	// ChangeReplyAdded: a thread reply seen for the first time, newer than the
	// baseline. ChangeReplyRemoved: a whole-thread read no longer returned it; a
	// record-keyed reply is kept, as deleted and missing and out of its thread.
	ChangeReplyAdded   = "reply_added"
	ChangeReplyRemoved = "reply_removed"
	// ChangeConversationStatus: the conversation's status (ok, archived,
	// not_in_channel, …) changed after its first resolution.
	ChangeConversationStatus = "conversation_status_changed"
	// ChangeUserRenamed: a user's label (display_name → real_name) changed.
	ChangeUserRenamed = "user_renamed"
)

// ChangeKinds lists every change kind, for filters and their validation.
func ChangeKinds() []string {
	return []string{
		ChangeMessagePosted, ChangeMessageEdited, ChangeMessageDeleted, ChangeMessageMissing,
		ChangeMessageReappeared, ChangeReactionAdded, ChangeReactionRemoved, ChangeReactionCountChanged,
		ChangeReplyAdded, ChangeReplyRemoved, ChangeConversationStatus, ChangeUserRenamed,
	}
}

// ChangeVersion is the version of the change event's JSON form (Change.Version). It
// stays 1 while fields and kinds are only added: consumers ignore fields and kinds
// they do not know. It goes up when a field is removed or renamed, or its type or
// meaning changes (README, "Change feed and webhooks").
const ChangeVersion = 1

// FeedRestore is one restore of the store (README, "Change feed and webhooks";
// docs/operating.md, "Backup and restore"): the feed was found to end at Seq while
// seqs up to SkippedTo may have been handed out by the store it replaced. The changes
// up to Seq are the ones handed out before, with the same seqs and ids; seqs
// Seq+1..SkippedTo are never assigned again, and new changes start after SkippedTo.
// A cursor in Seq+1..SkippedTo was handed out before the restore, for changes the
// restored store does not hold: it gets 410 Gone with the restore point.
type FeedRestore struct {
	Seq       uint64    `json:"seq"`
	SkippedTo uint64    `json:"skipped_to"`
	At        time.Time `json:"at"`
	// By says how the restore was found: "slackpoll restore", or "open" when the
	// daemon found the store older than the feed mark next to it (a copy of a backup
	// put in place; also after a daemon that stopped without closing the store, when
	// no seq in the gap was handed out).
	By string `json:"by"`
}

// Change is one event of the change feed, as stored, served by GET /v1/changes and
// POSTed to webhooks (README, "Change feed").
type Change struct {
	// Version is the event's JSON version, ChangeVersion when it was recorded (a
	// change stored before the field existed decodes as 1).
	Version int `json:"version"`
	// Seq orders the feed: assigned from the store's sequence when the change is
	// written, strictly increasing, never reused, not always consecutive (a restore
	// skips the seqs the replaced store may have handed out). It is the consumer's
	// cursor.
	Seq uint64 `json:"seq"`
	// ID is the event's receipt key: 32 random hex digits, unique across stores
	// (a change delivered again from a restored store keeps its ID). A receiver
	// dedupes on it: delivery is at least once.
	ID string `json:"id"`
	// TeamID is the workspace the change is of (auth.test's team_id): one webhook
	// receives the changes of every workspace a daemon polls. Not stored with each
	// change: a store is one workspace's, and its reads fill it in.
	TeamID string `json:"team_id,omitempty"`
	Kind   string `json:"kind"`
	// Channel is the conversation; "" for user_renamed.
	Channel  string `json:"channel,omitempty"`
	TS       TS     `json:"ts,omitempty"`
	ThreadTS TS     `json:"thread_ts,omitempty"`
	// Record is the message's own record key. ThreadRecord, on reply_added and
	// reply_removed, is its thread parent's: a filter on a record matches either.
	Record       string `json:"record,omitempty"`
	ThreadRecord string `json:"thread_record,omitempty"`
	// Own is set for the app's own post, or its own reaction.
	Own bool `json:"own"`
	// Reaction and User name the reaction fact (reaction_*); User is also the
	// renamed user (user_renamed).
	Reaction string `json:"reaction,omitempty"`
	User     string `json:"user,omitempty"`
	// ObservedAt is when the read that showed the change started (local clock, UTC).
	ObservedAt time.Time    `json:"observed_at"`
	Before     *ChangeValue `json:"before,omitempty"`
	After      *ChangeValue `json:"after,omitempty"`
}

// UnmarshalJSON decodes a change; one stored before Version existed is version 1.
func (c *Change) UnmarshalJSON(data []byte) error {
	type plain Change // without this method
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	if p.Version == 0 {
		p.Version = 1
	}
	*c = Change(p)
	return nil
}

// ChangeValue is the before or after value of a change, where it is small. Only the
// fields the kind concerns are set.
type ChangeValue struct {
	// Text is the message text, nil when it is longer than MaxChangeText bytes
	// (fetch the message from GET /v1/messages instead).
	Text    *string `json:"text,omitempty"`
	Edited  *Edited `json:"edited,omitempty"`
	User    string  `json:"user,omitempty"`
	BotID   string  `json:"bot_id,omitempty"`
	Subtype string  `json:"subtype,omitempty"`
	// Reactions of a message first seen, when their JSON is at most
	// MaxChangeReactions bytes; else ReactionsOmitted is set (read the message from
	// GET /v1/messages instead).
	Reactions        []Reaction `json:"reactions,omitempty"`
	ReactionsOmitted bool       `json:"reactions_omitted,omitempty"`
	// Count and Users of one reaction (reaction_count_changed); a users list longer
	// than MaxChangeReactions bytes is left out and UsersOmitted set.
	Count        *int     `json:"count,omitempty"`
	Users        []string `json:"users,omitempty"`
	UsersOmitted bool     `json:"users_omitted,omitempty"`
	Deleted      bool     `json:"deleted,omitempty"`
	Status       string   `json:"status,omitempty"`
	Label        string   `json:"label,omitempty"`
}

// MaxChangeText is the longest message text a change carries, in bytes.
const MaxChangeText = 4096

// MaxChangeReactions is about the most bytes of reactions (names and users) a change
// carries: a message can have thousands, and an event of hundreds of kilobytes is
// more than a feed consumer or a webhook receiver should have to take.
const MaxChangeReactions = 4096

// FeedConfig configures the change feed (config changes: and webhooks:).
type FeedConfig struct {
	// Backfill emits message_posted and reply_added for messages older than a
	// conversation's baseline too (changes.backfill; default off: the first sweep
	// of a conversation sets the baseline without a flood).
	Backfill bool
	// Subscriptions get an outbox row for each change they match, in the change's
	// transaction.
	Subscriptions []Subscription
}

// Subscription is one webhook's name and filter, and the bound of its outbox.
type Subscription struct {
	Name   string
	Filter ChangeFilter
	// MaxRows is the most rows its outbox keeps: a transaction that adds rows over
	// it drops the oldest, undelivered (Tx.TrimOutbox). 0 means no bound.
	MaxRows int
}

// ChangeFilter selects changes; an empty field matches everything.
type ChangeFilter struct {
	Kinds    []string
	Channels []string
	Records  []string
	// Own, when set, keeps only changes whose Own equals it.
	Own *bool
}

// Match reports whether c passes f.
func (f *ChangeFilter) Match(c *Change) bool {
	return (len(f.Kinds) == 0 || slices.Contains(f.Kinds, c.Kind)) &&
		(len(f.Channels) == 0 || slices.Contains(f.Channels, c.Channel)) &&
		(len(f.Records) == 0 || c.Record != "" && slices.Contains(f.Records, c.Record) ||
			c.ThreadRecord != "" && slices.Contains(f.Records, c.ThreadRecord)) &&
		(f.Own == nil || *f.Own == c.Own)
}

// OutboxRow is one change waiting for delivery to one webhook: written in the
// change's transaction, claimed with a token and a lease by a deliverer, deleted when
// delivered (README, "Webhooks").
type OutboxRow struct {
	Webhook string `json:"webhook"`
	Seq     uint64 `json:"seq"`
	// Change is the event as delivered: the row does not depend on the feed's
	// retention.
	Change   Change    `json:"change"`
	Enqueued time.Time `json:"enqueued"`
	Attempts int       `json:"attempts"`
	// NextAttempt is when a failed row may be tried again (zero: now).
	NextAttempt time.Time `json:"next_attempt"`
	// ClaimToken and LeaseUntil are the current claim: the row is held until
	// LeaseUntil, and only by that token.
	ClaimToken string    `json:"claim_token,omitempty"`
	LeaseUntil time.Time `json:"lease_until"`
	// Parked rows are not attempted again until re-queued.
	Parked    bool   `json:"parked"`
	LastError string `json:"last_error,omitempty"`
}

// DueAt is when r may be tried next, by the clock that wrote it: the end of its
// claim's lease while it is claimed, else NextAttempt (zero: at once). The store
// indexes pending rows by it.
func (r *OutboxRow) DueAt() time.Time {
	if r.ClaimToken != "" && r.LeaseUntil.After(r.NextAttempt) {
		return r.LeaseUntil
	}
	return r.NextAttempt
}

// NewEventID returns a fresh change ID: 16 random bytes in hex.
func NewEventID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}
