package slackapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// memberListLimit is the users.conversations page size ("limit": max 1000, Slack
// recommends ≤ 200).
const memberListLimit = 200

// AuthTest calls auth.test and returns the token's team, bot user ID (UserID), bot ID
// (BotID, "" for non-bot tokens) and granted scopes, read from the X-OAuth-Scopes
// response header ("channels:history,groups:history") split on commas and trimmed.
// CheckAt is the time of the answer (UTC).
func (c *Client) AuthTest(ctx context.Context) (readmodel.Identity, error) {
	var id readmodel.Identity
	err := c.call(ctx, readmodel.MethodAuthTest, func(ctx context.Context, api *slack.Client, _ *capture) error {
		resp, err := api.AuthTestContext(ctx)
		if err != nil {
			return err
		}
		if resp.UserID == "" {
			return fmt.Errorf("%w: auth.test answer has no user_id", errMalformed)
		}
		id = readmodel.Identity{
			TeamID:  resp.TeamID,
			UserID:  resp.UserID,
			BotID:   resp.BotID,
			Scopes:  splitScopes(resp.Header.Get("X-OAuth-Scopes")),
			CheckAt: time.Now().UTC(),
		}
		return nil
	})
	return id, err
}

// splitScopes splits an X-OAuth-Scopes header value; "" gives nil.
func splitScopes(h string) []string {
	var out []string
	for s := range strings.SplitSeq(h, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ConversationInfo calls conversations.info for channel (C…, G… or D… ID). Errors:
// channel_not_found, missing_scope (*:read of the conversation's type) → ClassConversation.
func (c *Client) ConversationInfo(ctx context.Context, channel string) (readmodel.ConversationInfo, error) {
	if channel == "" {
		return readmodel.ConversationInfo{}, errors.New("conversations.info: empty channel ID")
	}
	var info readmodel.ConversationInfo
	err := c.call(ctx, readmodel.MethodConversationInfo, func(ctx context.Context, api *slack.Client, _ *capture) error {
		ch, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: channel})
		if err != nil {
			return err
		}
		// A null or missing "channel" decodes as a zero Channel: an archived private
		// channel would pass for a readable public one.
		if ch == nil || ch.ID == "" {
			return fmt.Errorf("%w: conversations.info answer has no channel", errMalformed)
		}
		info = convertConversation(ch)
		return nil
	})
	return info, err
}

// History calls conversations.history for one page (see conversations.history:
// limit max 999; oldest/latest exclusive unless Inclusive; a single message is read
// with Oldest = Latest = ts, Inclusive, Limit 1). The cursor of the next page is
// response_metadata.next_cursor, "" on the last page. Messages that do not decode or
// carry an invalid ts are returned in Page.Skipped; the rest of the page and the
// cursor are kept.
func (c *Client) History(ctx context.Context, req readmodel.HistoryRequest) (readmodel.Page, error) {
	params := &slack.GetConversationHistoryParameters{
		ChannelID: req.Channel,
		Cursor:    req.Cursor,
		Inclusive: req.Inclusive,
		Latest:    string(req.Latest),
		Oldest:    string(req.Oldest),
		Limit:     req.Limit,
	}
	var page readmodel.Page
	err := c.call(ctx, readmodel.MethodHistory, func(ctx context.Context, api *slack.Client, cp *capture) error {
		resp, err := api.GetConversationHistoryContext(ctx, params)
		if err != nil {
			return c.salvage(readmodel.MethodHistory, req.Channel, err, cp, &page)
		}
		// The cursor is in ResponseMetaData (capital D); the embedded
		// SlackResponse.ResponseMetadata is shadowed and always empty (slack-go v0.35).
		msgs, skipped := convertPage(req.Channel, resp.Messages)
		page = readmodel.Page{Messages: msgs, Skipped: skipped, NextCursor: resp.ResponseMetaData.NextCursor, SentAt: cp.sent}
		return nil
	})
	return page, err
}

// Replies calls conversations.replies for one page of the thread req.TS (see
// conversations.replies: limit max 1000). The parent may appear on any page; the
// caller identifies it by ts == thread_ts. Undecodable messages are handled as in
// History. thread_not_found → ClassItem.
func (c *Client) Replies(ctx context.Context, req readmodel.RepliesRequest) (readmodel.Page, error) {
	params := &slack.GetConversationRepliesParameters{
		ChannelID: req.Channel,
		Timestamp: string(req.TS),
		Cursor:    req.Cursor,
		Limit:     req.Limit,
	}
	var page readmodel.Page
	err := c.call(ctx, readmodel.MethodReplies, func(ctx context.Context, api *slack.Client, cp *capture) error {
		msgs, _, next, err := api.GetConversationRepliesContext(ctx, params)
		if err != nil {
			return c.salvage(readmodel.MethodReplies, req.Channel, err, cp, &page)
		}
		good, skipped := convertPage(req.Channel, msgs)
		page = readmodel.Page{Messages: good, Skipped: skipped, NextCursor: next, SentAt: cp.sent}
		return nil
	})
	return page, err
}

// salvage handles slack-go's error for a history/replies page: when it is a decode
// failure of a captured 200 body, the page is re-decoded message by message into
// *page and nil is returned; otherwise (or when the envelope itself is broken) the
// error to classify is returned.
func (c *Client) salvage(method, channel string, err error, cp *capture, page *readmodel.Page) error {
	if !salvageable(err, cp) {
		return err
	}
	p, serr := salvagePage(channel, cp.body)
	if serr != nil {
		return serr
	}
	c.log.Warn("slack page decoded message by message", "method", method, "channel", channel,
		"skipped", len(p.Skipped), "kept", len(p.Messages), "err", err)
	p.SentAt = cp.sent
	*page = p
	return nil
}

// UserInfo calls users.info. Slack's refusals user_not_found and user_not_visible are
// answers, not errors: they return User{ID: id, LookupError: code} and nil.
// DisplayName is profile.display_name; RealName is profile.real_name, else real_name.
func (c *Client) UserInfo(ctx context.Context, id string) (readmodel.User, error) {
	var user readmodel.User
	err := c.call(ctx, readmodel.MethodUsersInfo, func(ctx context.Context, api *slack.Client, _ *capture) error {
		u, err := api.GetUserInfoContext(ctx, id)
		var ser slack.SlackErrorResponse
		if errors.As(err, &ser) && (ser.Err == "user_not_found" || ser.Err == "user_not_visible") {
			user = readmodel.User{ID: id, LookupError: ser.Err, FetchedAt: time.Now().UTC()}
			return nil
		}
		if err != nil {
			return err
		}
		// A null or missing "user" decodes as a zero User: cached, it would wipe the
		// user's names for a week.
		if u == nil || u.ID == "" {
			return fmt.Errorf("%w: users.info answer has no user", errMalformed)
		}
		user = convertUser(u)
		user.FetchedAt = time.Now().UTC()
		return nil
	})
	return user, err
}

// slackTypes maps slackpoll conversation types to users.conversations "types" values
// (the names happen to be Slack's own).
var slackTypes = map[string]string{
	readmodel.TypePublicChannel:  "public_channel",
	readmodel.TypePrivateChannel: "private_channel",
	readmodel.TypeMPIM:           "mpim",
	readmodel.TypeIM:             "im",
}

// MemberConversations calls users.conversations for one page (limit 200,
// exclude_archived) of the conversations the token's user is a member of, restricted
// to types (public_channel, private_channel, mpim, im; empty means all four). It
// returns the page and the next cursor, "" on the last page. An unknown type is an
// error and no request is made.
func (c *Client) MemberConversations(ctx context.Context, types []string, cursor string) ([]readmodel.ConversationInfo, string, error) {
	if len(types) == 0 {
		types = []string{readmodel.TypePublicChannel, readmodel.TypePrivateChannel, readmodel.TypeMPIM, readmodel.TypeIM}
	}
	st := make([]string, 0, len(types))
	for _, t := range types {
		s, ok := slackTypes[t]
		if !ok {
			return nil, "", fmt.Errorf("users.conversations: unknown conversation type %q: want public_channel, private_channel, mpim or im", t)
		}
		st = append(st, s)
	}
	params := &slack.GetConversationsForUserParameters{Cursor: cursor, Types: st, Limit: memberListLimit, ExcludeArchived: true}
	var (
		out  []readmodel.ConversationInfo
		next string
	)
	err := c.call(ctx, readmodel.MethodUsersConversations, func(ctx context.Context, api *slack.Client, _ *capture) error {
		chs, nc, err := api.GetConversationsForUserContext(ctx, params)
		if err != nil {
			return err
		}
		out = make([]readmodel.ConversationInfo, len(chs))
		for i := range chs {
			out[i] = convertConversation(&chs[i])
			// users.conversations lists only the user's conversations; Slack does
			// not always send is_member in this listing.
			out[i].IsMember = true
		}
		next = nc
		return nil
	})
	return out, next, err
}

// ReactionsGet calls reactions.get (channel, timestamp, full=true) for one message,
// top-level or reply, and returns it: text, edited, complete reactions and, for a
// parent, its thread fields. A deleted message fails with message_not_found
// (ClassItem); an answer without a message, or with an undecodable one, is malformed.
func (c *Client) ReactionsGet(ctx context.Context, ref readmodel.Ref) (readmodel.Message, error) {
	var out readmodel.Message
	err := c.call(ctx, readmodel.MethodReactionsGet, func(ctx context.Context, api *slack.Client, cp *capture) error {
		item, err := api.GetReactionsContext(ctx, slack.ItemRef{Channel: ref.Channel, Timestamp: string(ref.TS)}, slack.GetReactionsParameters{Full: true})
		if err != nil {
			if !salvageable(err, cp) {
				return err
			}
			m, kerr := salvageReactionsMessage(cp.body)
			if kerr != nil {
				return kerr
			}
			item = slack.ReactedItem{Item: slack.NewMessageItem(ref.Channel, &m)}
		}
		if item.Message == nil || item.Message.Timestamp == "" {
			return fmt.Errorf("%w: reactions.get answer has no message", errMalformed)
		}
		msgs, skipped := convertPage(ref.Channel, []slack.Message{*item.Message})
		if len(msgs) != 1 {
			return fmt.Errorf("%w: reactions.get message: %s", errMalformed, joinSkipped(skipped))
		}
		out = msgs[0]
		return nil
	})
	return out, err
}

func joinSkipped(s []readmodel.ItemError) string {
	if len(s) == 0 {
		return "undecodable"
	}
	return s[0].Err
}
