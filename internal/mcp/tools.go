package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackpoll/slackpoll/internal/changefeed"
	"github.com/slackpoll/slackpoll/internal/export"
	"github.com/slackpoll/slackpoll/internal/msglink"
	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/status"
)

// Bounds of the answers: items per page (default, most) and bytes. A page that
// reaches maxAnswerBytes ends there, with a cursor, whatever its limit.
const (
	defaultConversationsLimit = 100
	maxConversationsLimit     = 1000
	defaultMessagesLimit      = 20
	maxMessagesLimit          = 100
	defaultRepliesLimit       = 50
	maxRepliesLimit           = 200
	defaultChangesLimit       = 50
	maxChangesLimit           = 500
	maxAnswerBytes            = 256 << 10
)

// ListConversationsInput is list_conversations' input.
type ListConversationsInput struct {
	TeamID string `json:"team_id,omitempty" jsonschema:"the Slack workspace (team) ID; optional while slackpoll serves one workspace"`
	Limit  int    `json:"limit,omitempty" jsonschema:"conversations per page (default 100)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
}

// Conversation is one conversation as list_conversations answers it.
type Conversation struct {
	ID   string `json:"id"`
	Name string `json:"name" jsonschema:"the channel name (empty for a DM)"`
	Type string `json:"type" jsonschema:"public_channel, private_channel, mpim or im; empty until read"`
	// Status is pending, ok, not_in_channel, missing_scope, channel_not_found,
	// archived or error: whether slackpoll can read it.
	Status      string     `json:"status" jsonschema:"pending, ok, not_in_channel, missing_scope, channel_not_found, archived or error: whether slackpoll can read it"`
	LastSweptAt *time.Time `json:"last_swept_at" jsonschema:"when its new messages were last read"`
	// HeadAgeSeconds is how late a new message of it may be to appear.
	HeadAgeSeconds *float64 `json:"head_age_seconds" jsonschema:"how many seconds late a new message may be to appear (the time since its new messages were last read, at the last tick)"`
	Messages       int      `json:"messages" jsonschema:"messages stored, replies included"`
	Threads        int      `json:"threads"`
	URI            string   `json:"uri" jsonschema:"its MCP resource"`
}

// ListConversationsOutput is list_conversations' answer.
type ListConversationsOutput struct {
	TeamID        string          `json:"team_id"`
	Conversations []Conversation  `json:"conversations"`
	NextCursor    string          `json:"next_cursor" jsonschema:"pass it back as cursor for the next page; empty on the last"`
	Freshness     AnswerFreshness `json:"freshness"`
}

// ReadConversationInput is read_conversation's input.
type ReadConversationInput struct {
	TeamID  string `json:"team_id,omitempty" jsonschema:"the Slack workspace (team) ID; optional while slackpoll serves one workspace"`
	Channel string `json:"channel" jsonschema:"the conversation ID (C…, G… or D…), as list_conversations gives it"`
	Oldest  string `json:"oldest,omitempty" jsonschema:"only messages at or after this: a Slack ts, an RFC 3339 time or a date (2026-12-01)"`
	Latest  string `json:"latest,omitempty" jsonschema:"only messages at or before this: a Slack ts, an RFC 3339 time or a date"`
	Limit   int    `json:"limit,omitempty" jsonschema:"messages per page (default 20)"`
	Cursor  string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page (with the same channel, oldest and latest)"`
}

// ReadConversationOutput is read_conversation's answer.
type ReadConversationOutput struct {
	TeamID       string       `json:"team_id"`
	Conversation Conversation `json:"conversation"`
	// Messages are newest first, without their threads' replies.
	Messages   []Message       `json:"messages" jsonschema:"newest first; a thread parent shows reply_count, read_thread reads its replies"`
	NextCursor string          `json:"next_cursor" jsonschema:"pass it back as cursor for older messages; empty when there are none"`
	Freshness  AnswerFreshness `json:"freshness"`
}

// MessageRef names one message: channel and ts, a Slack message link, or a record
// key; exactly one of the three.
type MessageRef struct {
	TeamID  string `json:"team_id,omitempty" jsonschema:"the Slack workspace (team) ID; optional while slackpoll serves one workspace"`
	Channel string `json:"channel,omitempty" jsonschema:"the conversation ID, with ts"`
	TS      string `json:"ts,omitempty" jsonschema:"the message's ts (1754467200.123456), with channel"`
	Link    string `json:"link,omitempty" jsonschema:"instead of channel and ts: a Slack message link (Copy link), e.g. https://acme.slack.com/archives/C0123456789/p1754467200123456"`
	Record  string `json:"record,omitempty" jsonschema:"instead of channel and ts: the record key an app attached to the message"`
}

// GetMessageOutput is get_message's answer.
type GetMessageOutput struct {
	TeamID    string          `json:"team_id"`
	Message   Message         `json:"message"`
	Freshness AnswerFreshness `json:"freshness"`
}

// ReadThreadInput is read_thread's input: any message of the thread, and a page.
type ReadThreadInput struct {
	MessageRef
	Limit  int    `json:"limit,omitempty" jsonschema:"replies per page (default 50)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
}

// ReadThreadOutput is read_thread's answer.
type ReadThreadOutput struct {
	TeamID   string  `json:"team_id"`
	Channel  string  `json:"channel"`
	ThreadTS rm.TS   `json:"thread_ts"`
	Parent   Message `json:"parent"`
	// Replies are oldest first.
	Replies []Message `json:"replies" jsonschema:"oldest first"`
	// StoredReplies is how many replies the model holds for the thread.
	StoredReplies int             `json:"stored_replies"`
	NextCursor    string          `json:"next_cursor" jsonschema:"pass it back as cursor for the next replies; empty on the last page"`
	Freshness     AnswerFreshness `json:"freshness"`
}

// ChangesSinceInput is changes_since's input.
type ChangesSinceInput struct {
	TeamID  string   `json:"team_id,omitempty" jsonschema:"the Slack workspace (team) ID; optional while slackpoll serves one workspace"`
	Seq     uint64   `json:"seq,omitempty" jsonschema:"the changes after this seq (0: from the oldest held); pass next_seq of the previous answer"`
	Kinds   []string `json:"kinds,omitempty" jsonschema:"only these kinds of change"`
	Channel string   `json:"channel,omitempty" jsonschema:"only this conversation's changes"`
	Record  string   `json:"record,omitempty" jsonschema:"only the changes of the message with this record key, and of its thread"`
	Limit   int      `json:"limit,omitempty" jsonschema:"changes per answer (default 50)"`
}

// ChangesSinceOutput is changes_since's answer.
type ChangesSinceOutput struct {
	TeamID  string      `json:"team_id"`
	Changes []rm.Change `json:"changes" jsonschema:"in seq order"`
	// NextSeq is where the next call goes on: never behind seq, even when filters
	// (and the exposure policy) skipped every change examined.
	NextSeq   uint64          `json:"next_seq" jsonschema:"pass it back as seq to go on (the feed never ends: it grows as the model changes)"`
	LastSeq   uint64          `json:"last_seq" jsonschema:"the last seq of the feed"`
	OldestSeq uint64          `json:"oldest_seq" jsonschema:"the oldest seq still held"`
	Freshness AnswerFreshness `json:"freshness"`
}

// FreshnessInput is freshness' input.
type FreshnessInput struct {
	TeamID string `json:"team_id,omitempty" jsonschema:"the Slack workspace (team) ID; optional while slackpoll serves one workspace"`
}

// ClassFreshness is one class of messages and how stale it may be.
type ClassFreshness struct {
	Class    string `json:"class"`
	Meaning  string `json:"meaning"`
	Messages *int   `json:"messages" jsonschema:"how many messages are in the class (null when not counted)"`
	// RotationSeconds is the time the class's rotation takes to re-read them all.
	RotationSeconds *float64 `json:"rotation_seconds"`
	// WorstCaseStalenessSeconds is the rotation plus one interval.
	WorstCaseStalenessSeconds *float64 `json:"worst_case_staleness_seconds" jsonschema:"a change to one of its messages is in the model within this many seconds; null when not known or never"`
}

// FreshnessOutput is freshness' answer.
type FreshnessOutput struct {
	TeamID          string     `json:"team_id"`
	GeneratedAt     time.Time  `json:"generated_at"`
	DaemonRunning   bool       `json:"daemon_running" jsonschema:"false when no slackpoll daemon is polling: then nothing gets fresher"`
	IntervalSeconds float64    `json:"interval_seconds" jsonschema:"the time between two ticks (polling passes)"`
	LastTickAt      *time.Time `json:"last_tick_at" jsonschema:"when the last tick ended"`
	NextTickAt      *time.Time `json:"next_tick_at"`
	// Classes are watched, tracked and untracked.
	Classes []ClassFreshness `json:"classes"`
	// Conversations are the exposed ones, with how late their new messages may be.
	Conversations []Conversation `json:"conversations"`
}

// inputSchema infers T's schema and bounds its integer properties (property → the
// most allowed; the least is 1). Defaults are said in the descriptions, not as
// "default" keywords: the SDK (v1.8.0) applies those to the arguments and panics on
// a call that sends none.
func inputSchema[T any](most map[string]int) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err) // the types above: a programming error
	}
	for name, n := range most {
		p := s.Properties[name]
		p.Minimum, p.Maximum = jsonschema.Ptr(1.0), jsonschema.Ptr(float64(n))
	}
	return s
}

// readOnly are the annotations of every tool: reads of a local model.
func readOnly(title string) *sdk.ToolAnnotations {
	return &sdk.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)}
}

func (s *Server) addTools() {
	sdk.AddTool(s.sdk, &sdk.Tool{
		Name:        "list_conversations",
		Description: "List the Slack conversations agents may read here: id, name, type, whether slackpoll can read it (status), how many messages it holds, and how late its new messages may be.",
		InputSchema: inputSchema[ListConversationsInput](map[string]int{"limit": maxConversationsLimit}),
		Annotations: readOnly("List conversations"),
	}, s.listConversations)
	sdk.AddTool(s.sdk, &sdk.Tool{
		Name:        "read_conversation",
		Description: "Read a conversation's messages, newest first, optionally between oldest and latest. Thread parents show reply_count; read_thread reads the replies. Each message says when it was last read from Slack and how stale it may be.",
		InputSchema: inputSchema[ReadConversationInput](map[string]int{"limit": maxMessagesLimit}),
		Annotations: readOnly("Read a conversation"),
	}, s.readConversation)
	sdk.AddTool(s.sdk, &sdk.Tool{
		Name:        "read_thread",
		Description: "Read a thread: its parent and its replies, oldest first. Name any message of the thread by channel and ts, by Slack message link, or by record key.",
		InputSchema: inputSchema[ReadThreadInput](map[string]int{"limit": maxRepliesLimit}),
		Annotations: readOnly("Read a thread"),
	}, s.readThread)
	sdk.AddTool(s.sdk, &sdk.Tool{
		Name:        "get_message",
		Description: "Get one message by channel and ts, by Slack message link (Copy link), or by record key: its text, author, reactions, edits, thread counts, and how fresh it is.",
		InputSchema: inputSchema[MessageRef](nil),
		Annotations: readOnly("Get a message"),
	}, s.getMessage)
	sdk.AddTool(s.sdk, &sdk.Tool{
		Name:        "changes_since",
		Description: "What changed in the model after a seq: messages posted, edited, deleted, reactions, replies, conversation status; in seq order. Pass next_seq back to follow.",
		InputSchema: changesSchema(),
		Annotations: readOnly("Changes since"),
	}, s.changesSince)
	sdk.AddTool(s.sdk, &sdk.Tool{
		Name:        "freshness",
		Description: "How fresh the model is: per class of message (watched, tracked, untracked) the time to re-read them all and the worst-case staleness of a change; per conversation how late a new message may be; whether the daemon is polling.",
		InputSchema: inputSchema[FreshnessInput](nil),
		Annotations: readOnly("Freshness"),
	}, s.freshness)
	s.addSearch()
}

func changesSchema() *jsonschema.Schema {
	sch := inputSchema[ChangesSinceInput](map[string]int{"limit": maxChangesLimit})
	kinds := make([]any, 0, len(rm.ChangeKinds()))
	for _, k := range rm.ChangeKinds() {
		kinds = append(kinds, k)
	}
	sch.Properties["kinds"].Items.Enum = kinds
	return sch
}

// conversationOf renders a conversation of the report.
func conversationOf(c *status.Conversation) Conversation {
	return Conversation{
		ID: c.ID, Name: c.Name, Type: c.Type, Status: c.Status, LastSweptAt: c.LastSweptAt,
		HeadAgeSeconds: c.HeadAgeSeconds, Messages: c.Messages, Threads: c.Threads, URI: conversationURI(c.ID),
	}
}

func (s *Server) listConversations(ctx context.Context, _ *sdk.CallToolRequest, in ListConversationsInput) (*sdk.CallToolResult, ListConversationsOutput, error) {
	var out ListConversationsOutput
	after, err := decodeCursor("conversations", in.Cursor)
	if err != nil {
		return nil, out, err
	}
	v, release, err := s.open(ctx, in.TeamID)
	if err != nil {
		return nil, out, err
	}
	defer release()
	limit := orDefault(in.Limit, defaultConversationsLimit)
	out = ListConversationsOutput{TeamID: v.team, Conversations: []Conversation{}, Freshness: v.cls.answer}
	for _, id := range v.exp.ids() {
		if id <= after {
			continue
		}
		if len(out.Conversations) == limit {
			out.NextCursor = encodeCursor("conversations", out.Conversations[limit-1].ID)
			break
		}
		c := v.exp[id]
		out.Conversations = append(out.Conversations, conversationOf(&c))
	}
	return nil, out, nil
}

func (s *Server) readConversation(ctx context.Context, _ *sdk.CallToolRequest, in ReadConversationInput) (*sdk.CallToolResult, ReadConversationOutput, error) {
	var out ReadConversationOutput
	q := export.TimelineQuery{Limit: orDefault(in.Limit, defaultMessagesLimit), NewestFirst: true}
	var err error
	if q.Oldest, err = projection.ParseBound(in.Oldest); err != nil {
		return nil, out, fmt.Errorf("oldest: %w", err)
	}
	if q.Latest, err = projection.ParseBound(in.Latest); err != nil {
		return nil, out, fmt.Errorf("latest: %w", err)
	}
	before, err := decodeCursor("timeline", in.Cursor)
	if err != nil {
		return nil, out, err
	}
	q.Before = rm.TS(before)
	if q.Before != "" && !q.Before.Valid() {
		return nil, out, errBadCursor
	}
	v, release, err := s.open(ctx, in.TeamID)
	if err != nil {
		return nil, out, err
	}
	defer release()
	c, ok := v.exp[in.Channel]
	if !ok {
		return nil, out, errNotExposed(in.Channel)
	}
	lines, more, err := v.r.Timeline(ctx, in.Channel, q)
	if errors.Is(err, ErrNotFound) {
		lines, more, err = nil, false, nil // listed, never read: nothing yet
	}
	if err != nil {
		return nil, out, err
	}
	out = ReadConversationOutput{TeamID: v.team, Conversation: conversationOf(&c), Messages: []Message{}, Freshness: v.cls.answer}
	size := 0
	for i := range lines {
		m := v.cls.messageOf(&lines[i])
		if size += m.size(); size > maxAnswerBytes && len(out.Messages) > 0 {
			more = true
			break
		}
		out.Messages = append(out.Messages, m)
	}
	if more {
		out.NextCursor = encodeCursor("timeline", string(out.Messages[len(out.Messages)-1].TS))
	}
	return nil, out, nil
}

// resolve reads the message a MessageRef names and checks it is exposed.
func (s *Server) resolve(ctx context.Context, v *view, in *MessageRef) (export.MessageLine, error) {
	var ref rm.Ref
	var err error
	switch {
	case in.Link != "" && (in.Channel != "" || in.TS != "" || in.Record != ""),
		in.Record != "" && (in.Channel != "" || in.TS != ""):
		return export.MessageLine{}, errors.New("name the message one way only: channel and ts, or link, or record")
	case in.Link != "":
		ref, err = msglink.ParseMessageLink(in.Link)
	case in.Record != "":
		var ok bool
		ref, ok, err = v.r.Record(ctx, in.Record)
		if err == nil && !ok {
			err = fmt.Errorf("no message is tracked as record %q", in.Record)
		}
	case in.Channel != "" && in.TS != "":
		ref, err = msglink.ParseMessageRef(in.Channel, in.TS)
	default:
		return export.MessageLine{}, errors.New("name the message: channel and ts, or link (a Slack message link), or record (a record key)")
	}
	if err != nil {
		return export.MessageLine{}, err
	}
	if !v.exp.has(ref.Channel) {
		return export.MessageLine{}, errNotExposed(ref.Channel)
	}
	line, ok, err := v.r.Message(ctx, ref)
	if err == nil && !ok {
		err = fmt.Errorf("message %s %s is not in the model (slackpoll has not read it; an app can track it)", ref.Channel, ref.TS)
	}
	return line, err
}

// isReply reports whether a message line is a thread reply.
func isReply(l *export.MessageLine) bool { return l.ThreadTS != "" && l.ThreadTS != l.TS }

// parentOf returns the thread parent of a reply line; ok is false when the model
// does not hold it.
func parentOf(ctx context.Context, v *view, l *export.MessageLine) (export.MessageLine, bool, error) {
	return v.r.Message(ctx, rm.Ref{Channel: l.Channel, TS: l.ThreadTS})
}

func (s *Server) getMessage(ctx context.Context, _ *sdk.CallToolRequest, in MessageRef) (*sdk.CallToolResult, GetMessageOutput, error) {
	var out GetMessageOutput
	v, release, err := s.open(ctx, in.TeamID)
	if err != nil {
		return nil, out, err
	}
	defer release()
	line, err := s.resolve(ctx, v, &in)
	if err != nil {
		return nil, out, err
	}
	m := v.cls.messageOf(&line)
	if isReply(&line) {
		// A reply is re-read with its thread: its class is its parent's.
		p, ok, err := parentOf(ctx, v, &line)
		if err != nil {
			return nil, out, err
		}
		if ok {
			m.Freshness = v.cls.of(line.LastPolledAt, p.Record, p.Tracked)
			if line.Record != "" {
				m.Class, m.StalenessSeconds = ClassWatched, v.cls.watched
			}
		}
	}
	return nil, GetMessageOutput{TeamID: v.team, Message: m, Freshness: v.cls.answer}, nil
}

func (s *Server) readThread(ctx context.Context, _ *sdk.CallToolRequest, in ReadThreadInput) (*sdk.CallToolResult, ReadThreadOutput, error) {
	var out ReadThreadOutput
	after, err := decodeCursor("thread", in.Cursor)
	if err != nil {
		return nil, out, err
	}
	v, release, err := s.open(ctx, in.TeamID)
	if err != nil {
		return nil, out, err
	}
	defer release()
	line, err := s.resolve(ctx, v, &in.MessageRef)
	if err != nil {
		return nil, out, err
	}
	if isReply(&line) {
		p, ok, err := parentOf(ctx, v, &line)
		if err != nil {
			return nil, out, err
		}
		if !ok {
			return nil, out, fmt.Errorf("message %s %s is a reply in thread %s, whose parent is not in the model", line.Channel, line.TS, line.ThreadTS)
		}
		line = p
	}
	threadTS := line.ThreadTS
	if threadTS == "" {
		threadTS = line.TS
	}
	out = ReadThreadOutput{
		TeamID: v.team, Channel: line.Channel, ThreadTS: threadTS, Parent: v.cls.messageOf(&line),
		Replies: []Message{}, StoredReplies: len(line.Replies), Freshness: v.cls.answer,
	}
	limit := orDefault(in.Limit, defaultRepliesLimit)
	size := out.Parent.size()
	for i := range line.Replies {
		r := &line.Replies[i]
		if after != "" && r.TS.Compare(rm.TS(after)) <= 0 {
			continue
		}
		m := v.cls.replyOf(&line, r)
		size += m.size()
		if len(out.Replies) == limit || size > maxAnswerBytes && len(out.Replies) > 0 {
			out.NextCursor = encodeCursor("thread", string(out.Replies[len(out.Replies)-1].TS))
			break
		}
		out.Replies = append(out.Replies, m)
	}
	return nil, out, nil
}

func (s *Server) changesSince(ctx context.Context, _ *sdk.CallToolRequest, in ChangesSinceInput) (*sdk.CallToolResult, ChangesSinceOutput, error) {
	var out ChangesSinceOutput
	v, release, err := s.open(ctx, in.TeamID)
	if err != nil {
		return nil, out, err
	}
	defer release()
	f := rm.ChangeFilter{Kinds: in.Kinds}
	if in.Record != "" {
		f.Records = []string{in.Record}
	}
	switch {
	case in.Channel != "":
		if !v.exp.has(in.Channel) {
			return nil, out, errNotExposed(in.Channel)
		}
		f.Channels = []string{in.Channel}
	default:
		f.Channels = v.exp.ids()
	}
	out = ChangesSinceOutput{TeamID: v.team, Changes: []rm.Change{}, NextSeq: in.Seq, Freshness: v.cls.answer}
	if len(f.Channels) == 0 {
		// Nothing is exposed; an empty filter would match every conversation.
		f.Channels = []string{"-"}
	}
	p, err := v.r.Changes(ctx, in.Seq, orDefault(in.Limit, defaultChangesLimit), f)
	var gone *changefeed.GoneError
	var ahead *changefeed.AheadError
	switch {
	case errors.As(err, &gone):
		return nil, out, fmt.Errorf("the changes after seq %d are no longer held (the oldest kept is %d): read what you need again (read_conversation), then follow from seq %d", in.Seq, gone.Oldest, gone.Oldest-1)
	case errors.As(err, &ahead):
		return nil, out, fmt.Errorf("seq %d is past the last seq of this feed, %d: it is not a seq of this store; follow from seq %d", in.Seq, ahead.Last, ahead.Last)
	case err != nil:
		return nil, out, err
	}
	for _, c := range p.Changes {
		// The filter asked the feed for exposed conversations only; this keeps it
		// so whatever a Reader does with the filter.
		if v.exp.has(c.Channel) {
			out.Changes = append(out.Changes, c)
		}
	}
	out.NextSeq, out.LastSeq, out.OldestSeq = max(p.Next, in.Seq), p.Last, p.Oldest
	return nil, out, nil
}

func (s *Server) freshness(ctx context.Context, _ *sdk.CallToolRequest, in FreshnessInput) (*sdk.CallToolResult, FreshnessOutput, error) {
	var out FreshnessOutput
	v, release, err := s.open(ctx, in.TeamID)
	if err != nil {
		return nil, out, err
	}
	defer release()
	rep := &v.rep
	out = FreshnessOutput{
		TeamID: v.team, GeneratedAt: rep.GeneratedAt, DaemonRunning: rep.DaemonRunning,
		IntervalSeconds: rep.IntervalSeconds, NextTickAt: rep.NextTickAt, Conversations: []Conversation{},
	}
	if rep.LastTick != nil {
		out.LastTickAt = &rep.LastTick.Finished
	}
	watched, tracked := rep.Coverage.Watched, rep.Coverage.Tracked
	out.Classes = []ClassFreshness{
		{Class: ClassWatched, Meaning: "messages an app tracks (record-keyed or tracked on request): they have a guaranteed share of the calls",
			Messages: &watched, RotationSeconds: rep.Coverage.WatchedRotationSeconds, WorstCaseStalenessSeconds: v.cls.watched},
		{Class: ClassTracked, Meaning: "every stored message within tracking.horizon: re-read in rotation",
			Messages: &tracked, RotationSeconds: rep.Coverage.RotationPeriodSeconds, WorstCaseStalenessSeconds: v.cls.tracked},
		{Class: ClassUntracked, Meaning: "messages older than tracking.horizon: kept, no longer re-read (a change to them may never be seen)"},
	}
	for _, id := range v.exp.ids() {
		c := v.exp[id]
		out.Conversations = append(out.Conversations, conversationOf(&c))
	}
	return nil, out, nil
}

func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}
