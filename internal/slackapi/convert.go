package slackapi

import (
	"fmt"
	"slices"

	"github.com/slack-go/slack"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// convertPage converts the messages of one history/replies page. A message whose ts,
// thread_ts or latest_reply is not a valid ts is reported in skipped and not returned:
// a bad key must never reach the store (README, "Replace on read").
func convertPage(channel string, msgs []slack.Message) (out []readmodel.Message, skipped []readmodel.ItemError) {
	out = make([]readmodel.Message, 0, len(msgs))
	for i := range msgs {
		m, err := convertMessage(channel, &msgs[i])
		if err != nil {
			skipped = append(skipped, readmodel.ItemError{TS: validTS(msgs[i].Timestamp), Err: err.Error()})
			continue
		}
		out = append(out, m)
	}
	return out, skipped
}

// convertMessage maps the Slack fields of one message onto readmodel.Message. The
// polling fields (watermark, own post, deleted, …) are left zero for the poller.
func convertMessage(channel string, m *slack.Message) (readmodel.Message, error) {
	ts, err := readmodel.ParseTS(m.Timestamp)
	if err != nil {
		return readmodel.Message{}, fmt.Errorf("message ts: %w", err)
	}
	out := readmodel.Message{
		Channel:    channel,
		TS:         ts,
		User:       author(m),
		BotID:      m.BotID,
		BotName:    botName(m),
		Subtype:    m.SubType,
		Text:       m.Text,
		ReplyCount: m.ReplyCount,
	}
	if m.ThreadTimestamp != "" {
		if out.ThreadTS, err = readmodel.ParseTS(m.ThreadTimestamp); err != nil {
			return readmodel.Message{}, fmt.Errorf("message %s thread_ts: %w", ts, err)
		}
	}
	if m.LatestReply != "" {
		if out.LatestReply, err = readmodel.ParseTS(m.LatestReply); err != nil {
			return readmodel.Message{}, fmt.Errorf("message %s latest_reply: %w", ts, err)
		}
	}
	if m.Edited != nil {
		out.Edited = &readmodel.Edited{User: m.Edited.User, TS: readmodel.TS(m.Edited.Timestamp)}
	}
	// nil when the key is absent: a message without reactions has zero reactions
	// (README, "Replace on read"), and the store replaces the set whole.
	if m.Reactions != nil {
		out.Reactions = make([]readmodel.Reaction, len(m.Reactions))
		for i, r := range m.Reactions {
			out.Reactions[i] = readmodel.Reaction{Name: r.Name, Count: r.Count, Users: slices.Clone(r.Users)}
		}
	}
	return out, nil
}

// author is the message's user, or for a file_comment that has none (Slack's older
// shape), the comment's user.
func author(m *slack.Message) string {
	if m.User == "" && m.Comment != nil {
		return m.Comment.User
	}
	return m.User
}

// botName is a bot message's label source: username, else bot_profile.name
// (README, "How it works"; the caller falls back to bot_id).
func botName(m *slack.Message) string {
	if m.Username != "" {
		return m.Username
	}
	if m.BotProfile != nil {
		return m.BotProfile.Name
	}
	return ""
}

// validTS returns s as a TS if it is a valid ts, else "".
func validTS(s string) readmodel.TS {
	ts, err := readmodel.ParseTS(s)
	if err != nil {
		return ""
	}
	return ts
}

// convertConversation maps a conversations.info / users.conversations channel.
func convertConversation(ch *slack.Channel) readmodel.ConversationInfo {
	return readmodel.ConversationInfo{
		ID:         ch.ID,
		Name:       ch.Name,
		IsIM:       ch.IsIM,
		IsMPIM:     ch.IsMpIM,
		IsPrivate:  ch.IsPrivate,
		IsArchived: ch.IsArchived,
		IsMember:   ch.IsMember,
	}
}

// convertUser maps a users.info user. RealName falls back from profile.real_name to
// user.real_name (older accounts have only the latter).
func convertUser(u *slack.User) readmodel.User {
	real := u.Profile.RealName
	if real == "" {
		real = u.RealName
	}
	return readmodel.User{ID: u.ID, DisplayName: u.Profile.DisplayName, RealName: real, Deleted: u.Deleted}
}
