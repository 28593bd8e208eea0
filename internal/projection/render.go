package projection

import (
	"strings"
)

// Mention is one reference a message's text makes to a user or a conversation, by
// ID: the projection keeps them (table mentions) so that a rename re-renders the
// messages that show the old name.
type Mention struct {
	Kind   string // MentionUser or MentionChannel
	Target string // the user or conversation ID
}

// Mention kinds.
const (
	MentionUser    = "user"
	MentionChannel = "channel"
)

// Names resolves IDs to what Slack's clients show: a user's label (display name →
// real name → ID) and a conversation's name; "" when not known.
type Names struct {
	User         func(id string) string
	Conversation func(id string) string
}

// Render turns Slack mrkdwn into the text a reader sees, for search and snippets
// (Slack's "Formatting text for app surfaces"): <@U…> and <@U…|name> become @label
// (the label slackpoll knows, else the name given, else the ID), <#C…|name> and <#C…>
// become #name, <!here>, <!channel> and <!everyone> become @here, @channel and
// @everyone, <!subteam^S…|@team> its label, <!date^…|fallback> its fallback,
// <url|label> its label and <url> the URL (mailto: dropped); &amp;, &lt; and &gt;
// become &, < and >. It returns the mentions it resolved, in order, without repeats.
// Text that is not a well-formed <…> reference is kept as it is.
func Render(text string, n Names) (string, []Mention) {
	var b strings.Builder
	var mentions []Mention
	seen := map[Mention]bool{}
	add := func(m Mention) {
		if !seen[m] {
			seen[m] = true
			mentions = append(mentions, m)
		}
	}
	b.Grow(len(text))
	for len(text) > 0 {
		i := strings.IndexAny(text, "<&")
		if i < 0 {
			b.WriteString(text)
			break
		}
		b.WriteString(text[:i])
		text = text[i:]
		if text[0] == '&' {
			switch {
			case strings.HasPrefix(text, "&amp;"):
				b.WriteByte('&')
				text = text[5:]
			case strings.HasPrefix(text, "&lt;"):
				b.WriteByte('<')
				text = text[4:]
			case strings.HasPrefix(text, "&gt;"):
				b.WriteByte('>')
				text = text[4:]
			default:
				b.WriteByte('&')
				text = text[1:]
			}
			continue
		}
		end := strings.IndexAny(text[1:], "<>\n")
		if end < 0 || text[1+end] != '>' {
			b.WriteByte('<')
			text = text[1:]
			continue
		}
		ref := text[1 : 1+end]
		text = text[2+end:]
		target, label, _ := strings.Cut(ref, "|")
		switch {
		case strings.HasPrefix(target, "@"):
			add(Mention{MentionUser, target[1:]})
			b.WriteString("@" + resolve(n.User, target[1:], label, "@"))
		case strings.HasPrefix(target, "#"):
			add(Mention{MentionChannel, target[1:]})
			b.WriteString("#" + resolve(n.Conversation, target[1:], label, "#"))
		case strings.HasPrefix(target, "!"):
			cmd := target[1:]
			switch {
			case label != "":
				b.WriteString(label)
			case cmd == "here" || cmd == "channel" || cmd == "everyone":
				b.WriteString("@" + cmd)
			default:
				b.WriteString(cmd)
			}
		default:
			if label != "" {
				b.WriteString(unescape(label))
			} else {
				b.WriteString(unescape(strings.TrimPrefix(target, "mailto:")))
			}
		}
	}
	return b.String(), mentions
}

// resolve names an ID: as slackpoll knows it (lookup), else the label the reference
// carries, else the ID; without a leading sigil of its own.
func resolve(lookup func(string) string, id, label, sigil string) string {
	name := ""
	if lookup != nil {
		name = lookup(id)
	}
	if name == "" {
		name = label
	}
	if name == "" {
		name = id
	}
	return strings.TrimPrefix(name, sigil)
}

// unescape decodes the three entities Slack escapes inside a link.
func unescape(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(s)
}
