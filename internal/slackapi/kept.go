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
	TS          string        `json:"ts"`
	ThreadTS    string        `json:"thread_ts"`
	LatestReply string        `json:"latest_reply"`
	User        string        `json:"user"`
	BotID       string        `json:"bot_id"`
	Username    string        `json:"username"`
	Subtype     string        `json:"subtype"`
	Text        string        `json:"text"`
	ReplyCount  int           `json:"reply_count"`
	Edited      *slack.Edited `json:"edited"`
	Reactions   keptReactions `json:"reactions"`
	BotProfile  *struct {
		Name string `json:"name"`
	} `json:"bot_profile"`
	// Only the author of a file_comment (see author); its other fields are not kept.
	Comment *struct {
		User string `json:"user"`
	} `json:"comment"`
}

// keptReactions is a message's reactions as keptMessage reads them: a list (or null),
// or an empty object, which real pages carry and which names no reaction: it is read
// as none, and noted.
type keptReactions struct {
	list        []slack.ItemReaction
	emptyObject bool
}

func (k *keptReactions) UnmarshalJSON(b []byte) error {
	var obj map[string]json.RawMessage
	if len(b) > 0 && b[0] == '{' && json.Unmarshal(b, &obj) == nil && len(obj) == 0 {
		k.emptyObject = true
		return nil
	}
	return json.Unmarshal(b, &k.list)
}

// noteEmptyReactions is the note of a message whose reactions are an empty object.
const noteEmptyReactions = `"reactions" is an empty object, not a list: read as no reactions`

// decodeKept decodes raw into a slack.Message carrying only the kept fields, for
// convertMessage, and a note when a field was read in one deterministic way from a
// shape Slack does not document (noteEmptyReactions), else "". Errors: raw is not an
// object, or a kept field has the wrong JSON type.
func decodeKept(raw json.RawMessage) (slack.Message, string, error) {
	var k keptMessage
	if err := json.Unmarshal(raw, &k); err != nil {
		return slack.Message{}, "", err
	}
	note := ""
	if k.Reactions.emptyObject {
		note = noteEmptyReactions
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
	m.Reactions = k.Reactions.list
	if k.BotProfile != nil {
		m.BotProfile = &slack.BotProfile{Name: k.BotProfile.Name}
	}
	if k.Comment != nil {
		m.Comment = &slack.Comment{User: k.Comment.User}
	}
	return m, note, nil
}
