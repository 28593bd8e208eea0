package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Search bounds: the projection's own (projection.DefaultLimit, MaxLimit).
const (
	defaultSearchLimit = projection.DefaultLimit
	maxSearchLimit     = projection.MaxLimit
)

// ErrNoSearch is returned by a Reader that has no SQL projection to search.
var ErrNoSearch = errors.New("search_messages needs the SQL projection (projection: in the config; the daemon keeps it current), and none is open")

// SearchInput is search_messages' input.
type SearchInput struct {
	TeamID  string `json:"team_id,omitempty" jsonschema:"the Slack workspace (team) ID; optional while slackpoll serves one workspace"`
	Query   string `json:"query" jsonschema:"the text to find: words (each matches the start of a word; case and accents do not matter), \"a phrase\" in quotes, or Chinese/Japanese/Korean text (any substring); every part must match"`
	Channel string `json:"channel,omitempty" jsonschema:"only this conversation's messages"`
	User    string `json:"user,omitempty" jsonschema:"only this author's messages: a user ID, or the name shown"`
	After   string `json:"after,omitempty" jsonschema:"only messages after this: a Slack ts, an RFC 3339 time or a date (2026-12-01)"`
	Before  string `json:"before,omitempty" jsonschema:"only messages before this: a Slack ts, an RFC 3339 time or a date"`
	Limit   int    `json:"limit,omitempty" jsonschema:"hits per page (default 20)"`
	Cursor  string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page (with the same other arguments)"`
}

// Hit is one message found.
type Hit struct {
	Channel   string    `json:"channel"`
	TS        rm.TS     `json:"ts"`
	ThreadTS  rm.TS     `json:"thread_ts" jsonschema:"the thread's parent ts for a reply or a parent; empty without a thread"`
	PostedAt  time.Time `json:"posted_at"`
	User      string    `json:"user"`
	UserLabel string    `json:"user_label"`
	// Text is rendered: mentions and links as names.
	Text         string     `json:"text" jsonschema:"the text with mentions and links rendered as names"`
	Snippet      string     `json:"snippet" jsonschema:"the part of the text around the match, each match between « and »"`
	Record       string     `json:"record"`
	Deleted      bool       `json:"deleted"`
	MissingSince *time.Time `json:"missing_since"`
	URI          string     `json:"uri" jsonschema:"its MCP resource"`
	Freshness
}

// SearchOutput is search_messages' answer.
type SearchOutput struct {
	TeamID     string          `json:"team_id"`
	Hits       []Hit           `json:"hits" jsonschema:"newest first"`
	NextCursor string          `json:"next_cursor" jsonschema:"pass it back as cursor for older hits; empty on the last page"`
	Freshness  AnswerFreshness `json:"freshness"`
}

func (s *Server) addSearch() {
	sch := inputSchema[SearchInput](map[string]int{"limit": maxSearchLimit})
	sch.Properties["query"].MinLength = jsonschema.Ptr(1)
	sdk.AddTool(s.sdk, &sdk.Tool{
		Name:        "search_messages",
		Description: "Search message text in the conversations agents may read, newest first, optionally in one conversation, by one author, between two times. Each hit has a snippet and says how fresh it is.",
		InputSchema: sch,
		Annotations: readOnly("Search messages"),
	}, s.searchMessages)
}

func (s *Server) searchMessages(ctx context.Context, _ *sdk.CallToolRequest, in SearchInput) (*sdk.CallToolResult, SearchOutput, error) {
	var out SearchOutput
	q := projection.Query{Q: in.Query, User: in.User, Limit: orDefault(in.Limit, defaultSearchLimit), Cursor: in.Cursor}
	var err error
	if q.After, err = projection.ParseBound(in.After); err != nil {
		return nil, out, fmt.Errorf("after: %w", err)
	}
	if q.Before, err = projection.ParseBound(in.Before); err != nil {
		return nil, out, fmt.Errorf("before: %w", err)
	}
	v, release, err := s.open(ctx, in.TeamID)
	if err != nil {
		return nil, out, err
	}
	defer release()
	out = SearchOutput{TeamID: v.team, Hits: []Hit{}, Freshness: v.cls.answer}
	if in.Channel != "" && !v.exp.has(in.Channel) {
		return nil, out, errNotExposed(in.Channel)
	}
	q.Channel, q.Channels = in.Channel, v.exp.ids()
	if len(q.Channels) == 0 {
		return nil, out, nil // nothing is exposed: no hit, and no query to make
	}
	page, err := v.r.Search(ctx, q, projection.Freshness{Tracked: v.cls.tracked, Watched: v.cls.watched})
	if err != nil {
		return nil, out, err
	}
	for _, h := range page.Items {
		// The query asked for exposed conversations only; this keeps it so whatever
		// a Reader does with it.
		if !v.exp.has(h.Channel) {
			continue
		}
		out.Hits = append(out.Hits, Hit{
			Channel: h.Channel, TS: h.TS, ThreadTS: h.ThreadTS, PostedAt: h.PostedAt, User: h.User, UserLabel: h.UserLabel,
			Text: h.Text, Snippet: h.Snippet, Record: h.Record, Deleted: h.Deleted, MissingSince: h.MissingSince,
			URI:       messageURI(h.Channel, h.TS),
			Freshness: Freshness{LastPolledAt: h.LastPolledAt, Class: h.Class, StalenessSeconds: h.StalenessSeconds},
		})
	}
	out.NextCursor = page.NextCursor
	return nil, out, nil
}
