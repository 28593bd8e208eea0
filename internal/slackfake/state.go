package slackfake

import (
	"errors"
	"sort"
	"strconv"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// Errors returned by the workspace mutations.
var (
	ErrUnknownConversation = errors.New("slackfake: unknown conversation")
	ErrUnknownUser         = errors.New("slackfake: unknown user")
	ErrUnknownBot          = errors.New("slackfake: unknown bot")
	ErrUnknownMessage      = errors.New("slackfake: unknown message")
	ErrDeleted             = errors.New("slackfake: message is deleted")
	ErrArchived            = errors.New("slackfake: conversation is archived")
	ErrInvalid             = errors.New("slackfake: invalid argument")
)

// User is a workspace member. users.info returns it with profile.display_name =
// DisplayName and profile.real_name = RealName; a Deleted (deactivated) user comes back
// with "deleted": true and no top-level real_name, as Slack sends it.
type User struct {
	ID          string // "U…"
	Name        string // the handle, users.info "name"; defaults to the ID in lower case
	DisplayName string // profile.display_name; "" when never set
	RealName    string // profile.real_name (and top-level real_name while active)
	IsBot       bool
	Deleted     bool
}

// Bot is an app bot or a classic bot. An app bot has a bot user (UserID): its
// messages carry user = UserID, bot_id = ID, a bot_profile and no subtype. A classic
// bot (UserID "") posts subtype "bot_message" with bot_id and username and no user.
type Bot struct {
	ID     string // "B…"
	UserID string // the bot user "U…", "" for a classic bot
	Name   string // bot_profile.name
	AppID  string // "A…"
}

// Conversation is a channel, private channel, IM or MPIM with Slack's flags.
// BotMember says whether the token's bot user is a member: a public channel the bot
// is not in answers not_in_channel, a private channel, IM or MPIM it is not in answers
// channel_not_found (Slack does not reveal it). Use the constructors PublicChannel,
// PrivateChannel, DirectMessage and GroupDM for Slack's flag combinations.
type Conversation struct {
	ID         string // "C…", "G…" or "D…"
	Name       string // "" for an IM
	IsChannel  bool
	IsGroup    bool
	IsIM       bool
	IsMPIM     bool
	IsPrivate  bool
	IsArchived bool
	BotMember  bool
	User       string // IM only: the other party
}

// PublicChannel returns a public channel the bot is a member of.
func PublicChannel(id, name string) Conversation {
	return Conversation{ID: id, Name: name, IsChannel: true, BotMember: true}
}

// PrivateChannel returns a private channel the bot is a member of (modern private
// channels: is_channel true, is_group false, is_private true).
func PrivateChannel(id, name string) Conversation {
	return Conversation{ID: id, Name: name, IsChannel: true, IsPrivate: true, BotMember: true}
}

// DirectMessage returns a 1:1 IM between the bot and user.
func DirectMessage(id, user string) Conversation {
	return Conversation{ID: id, IsIM: true, User: user, BotMember: true}
}

// GroupDM returns a multi-party IM the bot is a member of (is_group, is_mpim and
// is_private all true, as Slack sends it).
func GroupDM(id, name string) Conversation {
	return Conversation{ID: id, Name: name, IsGroup: true, IsMPIM: true, IsPrivate: true, BotMember: true}
}

// Type returns slackpoll's name for the conversation type (readmodel.TypeFromFlags).
func (c Conversation) Type() string { return readmodel.TypeFromFlags(c.IsIM, c.IsMPIM, c.IsPrivate) }

// hidden reports whether Slack hides the conversation from a non-member token.
func (c *Conversation) hidden() bool {
	return !c.BotMember && (c.IsPrivate || c.IsIM || c.IsMPIM)
}

// readScope is the *:read scope conversations.info/list need for the type.
func readScope(typ string) string {
	switch typ {
	case readmodel.TypeIM:
		return "im:read"
	case readmodel.TypeMPIM:
		return "mpim:read"
	case readmodel.TypePrivateChannel:
		return "groups:read"
	}
	return "channels:read"
}

// conv is one conversation's state: the timeline (top-level messages, thread parents
// and tombstones, thread_broadcast replies) ascending by ts, and every live message by
// ts key.
type conv struct {
	Conversation
	created  int64
	timeline []*message
	byKey    map[uint64]*message
}

type reaction struct {
	name  string
	users []string // every reacting user, in reaction order
}

// message is one stored message. Replies point at their parent; a parent holds its
// live replies ascending. A tombstone is a deleted parent kept for its replies; it
// keeps its original content for Truth.
type message struct {
	key       uint64
	ts        readmodel.TS
	conv      *conv
	parent    *message
	user      string
	botID     string
	username  string
	bot       *Bot // bot_profile source; nil for users and unregistered bots
	subtype   string
	text      string
	edited    *readmodel.Edited
	reactions []*reaction
	replies   []*message
	tombstone bool
	enc       []byte // cached JSON; nil when stale
}

func (m *message) isBroadcast() bool { return m.subtype == readmodel.SubtypeThreadBroadcast }

// inTimeline reports whether m shows in conversations.history.
func (m *message) inTimeline() bool { return m.parent == nil || m.isBroadcast() }

// threadTS is the thread_ts Slack sends: the parent's ts for a reply, the own ts
// for a parent with replies (or a tombstone), "" otherwise.
func (m *message) threadTS() readmodel.TS {
	if m.parent != nil {
		return m.parent.ts
	}
	if len(m.replies) > 0 || m.tombstone {
		return m.ts
	}
	return ""
}

func (m *message) latestReply() readmodel.TS {
	if len(m.replies) == 0 {
		return ""
	}
	return m.replies[len(m.replies)-1].ts
}

// replyUsers returns the distinct authors of the live replies, in order of first reply.
func (m *message) replyUsers() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range m.replies {
		u := r.user
		if u == "" {
			u = r.botID
		}
		if u != "" && !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out
}

// ---- ts keys ----

const maxKey = ^uint64(0)

// keyOf turns a ts into an integer key (seconds·10⁶ + µs), saturating on overflow.
func keyOf(ts readmodel.TS) (uint64, bool) {
	sec, micro, ok := ts.Parts()
	if !ok {
		return 0, false
	}
	if sec > (maxKey-999999)/1000000 {
		return maxKey, true
	}
	return sec*1000000 + uint64(micro), true
}

// tsOf formats a key as Slack's "%d.%06d".
func tsOf(k uint64) readmodel.TS {
	var b [32]byte
	out := strconv.AppendUint(b[:0], k/1000000, 10)
	out = append(out, '.')
	micro := k % 1000000
	for d := uint64(100000); d > 0; d /= 10 {
		out = append(out, byte('0'+micro/d%10))
	}
	return readmodel.TS(out)
}

// ---- timeline maintenance (callers hold s.mu) ----

func (c *conv) insertTimeline(m *message) {
	i := sort.Search(len(c.timeline), func(i int) bool { return c.timeline[i].key >= m.key })
	c.timeline = append(c.timeline, nil)
	copy(c.timeline[i+1:], c.timeline[i:])
	c.timeline[i] = m
}

func (c *conv) removeTimeline(m *message) {
	i := sort.Search(len(c.timeline), func(i int) bool { return c.timeline[i].key >= m.key })
	if i < len(c.timeline) && c.timeline[i] == m {
		c.timeline = append(c.timeline[:i], c.timeline[i+1:]...)
	}
}

func insertReply(p *message, r *message) {
	i := sort.Search(len(p.replies), func(i int) bool { return p.replies[i].key >= r.key })
	p.replies = append(p.replies, nil)
	copy(p.replies[i+1:], p.replies[i:])
	p.replies[i] = r
}

func removeReply(p *message, r *message) {
	for i, x := range p.replies {
		if x == r {
			p.replies = append(p.replies[:i], p.replies[i+1:]...)
			return
		}
	}
}
