package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackpoll/slackpoll/internal/changefeed"
	"github.com/slackpoll/slackpoll/internal/export"
	"github.com/slackpoll/slackpoll/internal/msglink"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Resource URIs: a conversation (its newest messages) and a message (with its
// thread). Their templates are listed by resources/templates/list; list_conversations
// and every message give the URIs.
const (
	uriScheme                   = "slackpoll"
	conversationURITemplate     = "slackpoll://conversations/{channel}"
	messageURITemplate          = "slackpoll://conversations/{channel}/messages/{ts}"
	resourceMessages            = 50  // newest messages in a conversation resource
	resourceReplies             = 200 // replies in a message resource
	resourceMIME                = "application/json"
	followBatch                 = 500
	followRetry                 = 5 * time.Second
	maxSubscriptionsPerResource = 1 << 20
)

func conversationURI(channel string) string {
	return "slackpoll://conversations/" + channel
}

func messageURI(channel string, ts rm.TS) string {
	return "slackpoll://conversations/" + channel + "/messages/" + string(ts)
}

// parseURI reads a resource URI: the conversation, and the message's ts ("" for a
// conversation).
func parseURI(uri string) (channel string, ts rm.TS, err error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != uriScheme || u.Host != "conversations" {
		return "", "", fmt.Errorf("%q is not a slackpoll resource (%s or %s)", uri, conversationURITemplate, messageURITemplate)
	}
	parts := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	switch {
	case len(parts) == 1 && rm.ValidConversationID(parts[0]):
		return parts[0], "", nil
	case len(parts) == 3 && rm.ValidConversationID(parts[0]) && parts[1] == "messages":
		ref, err := msglink.ParseMessageRef(parts[0], parts[2])
		return ref.Channel, ref.TS, err
	}
	return "", "", fmt.Errorf("%q is not a slackpoll resource (%s or %s)", uri, conversationURITemplate, messageURITemplate)
}

// ConversationResource is the body of a conversation resource.
type ConversationResource struct {
	TeamID       string          `json:"team_id"`
	Conversation Conversation    `json:"conversation"`
	Messages     []Message       `json:"messages"`
	Freshness    AnswerFreshness `json:"freshness"`
}

// MessageResource is the body of a message resource.
type MessageResource struct {
	TeamID    string          `json:"team_id"`
	Message   Message         `json:"message"`
	Replies   []Message       `json:"replies"`
	Truncated bool            `json:"truncated"`
	Freshness AnswerFreshness `json:"freshness"`
}

func (s *Server) addResources() {
	s.sdk.AddResourceTemplate(&sdk.ResourceTemplate{
		Name:        "conversation",
		Title:       "A Slack conversation",
		Description: fmt.Sprintf("A conversation and its %d newest messages (newest first), with how fresh each is.", resourceMessages),
		MIMEType:    resourceMIME,
		URITemplate: conversationURITemplate,
	}, s.readResource)
	s.sdk.AddResourceTemplate(&sdk.ResourceTemplate{
		Name:        "message",
		Title:       "A Slack message",
		Description: fmt.Sprintf("A message and, for a thread parent, up to %d of its replies (oldest first), with how fresh each is.", resourceReplies),
		MIMEType:    resourceMIME,
		URITemplate: messageURITemplate,
	}, s.readResource)
}

func (s *Server) readResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	channel, ts, err := parseURI(uri)
	if err != nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	v, release, err := s.open(ctx, "")
	if err != nil {
		return nil, err
	}
	defer release()
	c, ok := v.exp[channel]
	if !ok {
		return nil, sdk.ResourceNotFoundError(uri) // as absent: the policy hides it
	}
	var body any
	if ts == "" {
		lines, _, err := v.r.Timeline(ctx, channel, export.TimelineQuery{Limit: resourceMessages, NewestFirst: true})
		if err != nil && err != ErrNotFound {
			return nil, err
		}
		res := ConversationResource{TeamID: v.team, Conversation: conversationOf(&c), Messages: []Message{}, Freshness: v.cls.answer}
		for i := range lines {
			res.Messages = append(res.Messages, v.cls.messageOf(&lines[i]))
		}
		body = res
	} else {
		line, ok, err := v.r.Message(ctx, rm.Ref{Channel: channel, TS: ts})
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, sdk.ResourceNotFoundError(uri)
		}
		res := MessageResource{TeamID: v.team, Message: v.cls.messageOf(&line), Replies: []Message{}, Freshness: v.cls.answer}
		for i := range line.Replies {
			if i == resourceReplies {
				res.Truncated = true
				break
			}
			res.Replies = append(res.Replies, v.cls.replyOf(&line, &line.Replies[i]))
		}
		body = res
	}
	text, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: resourceMIME, Text: string(text)}}}, nil
}

// subscribe accepts a subscription to a resource agents may read, and wakes the
// follower.
func (s *Server) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	channel, _, err := parseURI(req.Params.URI)
	if err != nil {
		return err
	}
	v, release, err := s.open(ctx, "")
	if err != nil {
		return err
	}
	release()
	if !v.exp.has(channel) {
		return errNotExposed(channel)
	}
	s.mu.Lock()
	s.subs[req.Params.URI] = min(s.subs[req.Params.URI]+1, maxSubscriptionsPerResource)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

func (s *Server) unsubscribe(_ context.Context, req *sdk.UnsubscribeRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs[req.Params.URI] <= 1 {
		delete(s.subs, req.Params.URI)
	} else {
		s.subs[req.Params.URI]--
	}
	return nil
}

// subscribed returns the subscribed URIs among uris.
func (s *Server) subscribed(uris map[string]bool) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for u := range uris {
		if s.subs[u] > 0 {
			out = append(out, u)
		}
	}
	return out
}

func (s *Server) anySubscribed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subs) > 0
}

// followPoll is how often the follower reads the change feed while subscriptions are
// held and nothing changed (Options.FollowEvery). It reads per poll rather than
// waiting on the feed: in `slackpoll mcp` a read holds the store's lock (when no
// daemon runs), which must never be held for long (it would keep `slackpoll run`
// from starting).
const followPoll = 2 * time.Second

// follow reads the change feed while any resource is subscribed and sends
// notifications/resources/updated for each subscribed resource a change touches: the
// conversation, the message, and for a reply its thread parent. It starts at the
// feed's end when the first subscription arrives (a subscriber reads the resource
// then: what changed before is in it), and stops with ctx.
func (s *Server) follow(ctx context.Context) {
	var after uint64
	started := false
	for ctx.Err() == nil {
		if !s.anySubscribed() {
			started = false
			select {
			case <-ctx.Done():
				return
			case <-s.wake:
			}
			continue
		}
		p, err := s.changes(ctx, after)
		if err != nil {
			s.log.Warn("mcp: following the change feed for subscriptions", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(followRetry):
			}
			started = false
			continue
		}
		if !started {
			after, started = p.Last, true
			continue
		}
		if len(p.Changes) == 0 && p.Next >= p.Last {
			select {
			case <-ctx.Done():
				return
			case <-time.After(cmp.Or(s.opts.FollowEvery, followPoll)):
			}
		}
		after = p.Next
		touched := map[string]bool{}
		for _, c := range p.Changes {
			touched[conversationURI(c.Channel)] = true
			if c.TS != "" {
				touched[messageURI(c.Channel, c.TS)] = true
			}
			if c.ThreadTS != "" {
				touched[messageURI(c.Channel, c.ThreadTS)] = true
			}
		}
		for _, uri := range s.subscribed(touched) {
			if err := s.sdk.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
				s.log.Warn("mcp: notifying a subscriber", "uri", uri, "err", err)
			}
		}
	}
}

// changes reads the changes after after of the exposed conversations.
func (s *Server) changes(ctx context.Context, after uint64) (changefeed.Page, error) {
	v, release, err := s.open(ctx, "")
	if err != nil {
		return changefeed.Page{}, err
	}
	defer release()
	ids := v.exp.ids()
	if len(ids) == 0 {
		ids = []string{"-"}
	}
	p, err := v.r.Changes(ctx, after, followBatch, rm.ChangeFilter{Channels: ids})
	if _, gone := err.(*changefeed.GoneError); gone {
		// Behind the retention (a long sleep): go on from the oldest held.
		return changefeed.Page{Next: p.Oldest - 1, Last: p.Last, Oldest: p.Oldest}, nil
	}
	return p, err
}
