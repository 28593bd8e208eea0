package readmodel

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Slack Web API method names, as used for budgets, pacing and metrics.
const (
	MethodAuthTest           = "auth.test"
	MethodHistory            = "conversations.history"
	MethodReplies            = "conversations.replies"
	MethodConversationInfo   = "conversations.info"
	MethodUsersInfo          = "users.info"
	MethodUsersConversations = "users.conversations"
	MethodReactionsGet       = "reactions.get"
)

// ScopeReactionsRead is the scope reactions.get needs; the poller uses the method only
// when auth.test's X-OAuth-Scopes lists it.
const ScopeReactionsRead = "reactions:read"

// ClockSkewTolerance is how far the local clock may differ from Slack's (as measured
// from the one-second Date header of its answers, latency included) before the
// difference is warned about and the bulk window is placed by Slack's time.
const ClockSkewTolerance = 30 * time.Second

// SlackTime is Slack's time by the local clock local and skew, Slack's clock minus
// ours as last measured: local corrected by skew when skew is beyond
// ClockSkewTolerance, else local (a skew within it is the Date header's resolution
// and the latency, not a wrong clock).
func SlackTime(local time.Time, skew time.Duration) time.Time {
	if skew > ClockSkewTolerance || skew < -ClockSkewTolerance {
		return local.Add(skew)
	}
	return local
}

// Page sizes requested (README, "How it works"). Slack may return fewer (15 for non-Marketplace
// apps); only the cursor decides the end.
const (
	HistoryPageLimit = 999  // conversations.history `limit` max 999
	RepliesPageLimit = 1000 // conversations.replies `limit` max 1000
)

// Source is the Slack Web API as the poller sees it. Every call paces itself (one rate
// limiter per method), waits out HTTP 429 Retry-After and repeats the same request, and
// retries transient failures (5xx, resets, timeouts) up to 3 times with backoff; the
// error it finally returns is an *APIError with a Class, or the ctx error on shutdown.
// A call blocks for as long as pacing requires: the caller's soft deadline is checked
// between calls, never inside one. Implementation: internal/slackapi.
type Source interface {
	// AuthTest calls auth.test: the token's bot user and bot IDs and granted scopes.
	AuthTest(ctx context.Context) (Identity, error)
	// ConversationInfo calls conversations.info for one conversation.
	ConversationInfo(ctx context.Context, channel string) (ConversationInfo, error)
	// History calls conversations.history for one page. Messages that could not be
	// decoded are reported in Page.Skipped; the rest of the page is kept.
	History(ctx context.Context, req HistoryRequest) (Page, error)
	// Replies calls conversations.replies for one page of the thread req.TS. The
	// parent may be included on any page; identify it by ts == thread_ts.
	Replies(ctx context.Context, req RepliesRequest) (Page, error)
	// UserInfo calls users.info. A refusal (user_not_found, user_not_visible) is not an
	// error: it returns a User with LookupError set.
	UserInfo(ctx context.Context, id string) (User, error)
	// ReactionsGet calls reactions.get with full=true for one message, top-level or
	// reply: its text, edited, complete reactions and, for a parent, its thread
	// fields. A deleted message fails with code message_not_found (ClassItem).
	ReactionsGet(ctx context.Context, ref Ref) (Message, error)
	// MemberConversations calls users.conversations for one page of the conversations
	// the token's user is a member of, limited to types (slackpoll names, e.g. "im").
	MemberConversations(ctx context.Context, types []string, cursor string) ([]ConversationInfo, string, error)
}

// HistoryRequest is one conversations.history page request. Oldest and Latest are
// exclusive unless Inclusive is set; "" leaves them unset.
type HistoryRequest struct {
	Channel   string
	Oldest    TS
	Latest    TS
	Inclusive bool
	Limit     int
	Cursor    string
}

// RepliesRequest is one conversations.replies page request for the thread TS.
type RepliesRequest struct {
	Channel string
	TS      TS
	Limit   int
	Cursor  string
}

// Page is one decoded page of messages. NextCursor "" means the last page (Slack sends
// the key with "" on the last page; only the cursor decides the end).
type Page struct {
	// Messages have Channel set and only the Slack fields filled (no polling fields).
	Messages []Message
	Skipped  []ItemError
	// Notes are messages kept, with a field the Source read in one deterministic way
	// because Slack sent it in a shape it does not document (e.g. "reactions": {},
	// read as none): reported with the tick's errors, not skipped.
	Notes      []ItemError
	NextCursor string
	// SentAt is when the request that this page answers went out, after pacing and
	// any Retry-After wait, by the source's clock; zero when unknown.
	SentAt time.Time
}

// ItemError is one message of a page that could not be decoded (README, "Replace on read").
// TS is the message's ts when it could be read from the raw JSON, else "".
type ItemError struct {
	TS  TS
	Err string
}

// ConversationInfo is the part of conversations.info slackpoll uses.
type ConversationInfo struct {
	ID         string
	Name       string
	IsIM       bool
	IsMPIM     bool
	IsPrivate  bool
	IsArchived bool
	IsMember   bool
}

// Type returns the conversation type derived from the flags (TypeFromFlags).
func (c ConversationInfo) Type() string { return TypeFromFlags(c.IsIM, c.IsMPIM, c.IsPrivate) }

// ErrorClass says how far a failed call's consequences reach (README, "Replace on read").
type ErrorClass int

const (
	// ClassTransient: 5xx, timeouts, resets, malformed bodies, invalid_cursor, after
	// retries. The fetch is cut short; nothing changes; the next tick tries again.
	ClassTransient ErrorClass = iota
	// ClassItem: one item is gone or unreadable (thread_not_found).
	ClassItem
	// ClassConversation: one conversation cannot be read (not_in_channel,
	// missing_scope, channel_not_found, is_archived); the sweep goes on.
	ClassConversation
	// ClassToken: the token is rejected (invalid_auth, not_authed, token_revoked,
	// token_expired, account_inactive); the tick stops.
	ClassToken
)

func (c ErrorClass) String() string {
	switch c {
	case ClassItem:
		return "item"
	case ClassConversation:
		return "conversation"
	case ClassToken:
		return "token"
	}
	return "transient"
}

// APIError is a failed Slack call, classified. Code is Slack's error code
// ("not_in_channel") or a short description of a transport failure; Needed is the scope
// missing_scope asked for. Error never contains the token.
type APIError struct {
	Method string
	Code   string
	Class  ErrorClass
	Needed string
	Err    error
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("%s: %s", e.Method, e.Code)
	if e.Needed != "" {
		msg += " (needed scope: " + e.Needed + ")"
	}
	// A transport failure's code is ours ("connection_error"): the cause (refused,
	// DNS, TLS, the URL) is what an operator needs. Slack's own codes are the cause.
	if e.Err != nil {
		if d := e.Err.Error(); d != e.Code {
			msg += ": " + d
		}
	}
	return msg
}

func (e *APIError) Unwrap() error { return e.Err }

// ClassOf returns the class of err: the APIError's class, or ClassTransient for any
// other error.
func ClassOf(err error) ErrorClass {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Class
	}
	return ClassTransient
}

// CodeOf returns Slack's error code of err, or "" when err is not an APIError.
func CodeOf(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}
