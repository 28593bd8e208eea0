package slackapi

import (
	"encoding/json"

	"github.com/slack-go/slack"
)

// keptMessage holds only the message fields slackpoll keeps, with the JSON types Slack
// documents for them. It is the fallback when slack-go cannot decode a message for a
// field we do not keep: slack-go v0.35 rejects element types it does not know inside
// actions and context blocks ("unsupported block element type …"), and Slack adds
// such types often. Decoding it is strict: a kept field of the wrong type is still an
// error, so a message is never stored with a field silently emptied.
type keptMessage struct {
	TS          string               `json:"ts"`
	ThreadTS    string               `json:"thread_ts"`
	LatestReply string               `json:"latest_reply"`
	User        string               `json:"user"`
	BotID       string               `json:"bot_id"`
	Username    string               `json:"username"`
	Subtype     string               `json:"subtype"`
	Text        string               `json:"text"`
	ReplyCount  int                  `json:"reply_count"`
	Edited      *slack.Edited        `json:"edited"`
	Reactions   []slack.ItemReaction `json:"reactions"`
	BotProfile  *struct {
		Name string `json:"name"`
	} `json:"bot_profile"`
	// Only the author of a file_comment (see author); its other fields are not kept.
	Comment *struct {
		User string `json:"user"`
	} `json:"comment"`
}

// decodeKept decodes raw into a slack.Message carrying only the kept fields, for
// convertMessage. Errors: raw is not an object, or a kept field has the wrong JSON
// type.
func decodeKept(raw json.RawMessage) (slack.Message, error) {
	var k keptMessage
	if err := json.Unmarshal(raw, &k); err != nil {
		return slack.Message{}, err
	}
	var m slack.Message
	m.Timestamp = k.TS
	m.ThreadTimestamp = k.ThreadTS
	m.LatestReply = k.LatestReply
	m.User = k.User
	m.BotID = k.BotID
	m.Username = k.Username
	m.SubType = k.Subtype
	m.Text = k.Text
	m.ReplyCount = k.ReplyCount
	m.Edited = k.Edited
	m.Reactions = k.Reactions
	if k.BotProfile != nil {
		m.BotProfile = &slack.BotProfile{Name: k.BotProfile.Name}
	}
	if k.Comment != nil {
		m.Comment = &slack.Comment{User: k.Comment.User}
	}
	return m, nil
}
