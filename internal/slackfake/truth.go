package slackfake

import (
	"bufio"
	"encoding/json"
	"io"
	"slices"

	"github.com/slackpoll/slackpoll/internal/export"
	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// Truth is the workspace as a converged read model would export it (README, "Commands" (export)),
// built with the readmodel export constructors, without the fields only polling
// knows: last_swept_at, last_polled_at, missing_since and fetched_at are null, record
// is "". Order: conversations by ID, messages by channel then ts, users by ID.
//
//   - Conversations: every conversation, with the status a poller ends up reporting:
//     channel_not_found (private and the bot is not a member), missing_scope with
//     needed_scope (the type's *:read, then *:history scope), archived, not_in_channel,
//     else ok. A revoked token changes no status.
//   - Messages: the timeline of every conversation (top-level messages, thread
//     parents, thread_broadcast replies), present messages only: a deleted message is
//     absent; a tombstoned parent appears with deleted = true and the content it had
//     when deleted (user, text, edited, reactions), with reply_count and latest_reply
//     of the live thread. Replies are the live replies, ascending. Reactions are as
//     the API returns them (users truncated to Options.ReactionUsersCap).
//     reply_watermark = latest_reply. own_post = bot_id is the token's bot ID.
//     user_label uses the fake's users: display_name → real_name → the ID; for a
//     message without a user: username → bot_profile.name → bot_id.
//   - Users: every user ID a poller looks up from these messages (authors, reply
//     authors, listed reaction users); unknown IDs with lookup_error user_not_found.
//
// Tests comparing a read model with it usually keep only the conversations the poller
// can read (Only) and ignore the read model's missing_since messages.
type Truth struct {
	Conversations []export.ConversationLine
	Messages      []export.MessageLine
	Users         []export.UserLine
}

// Truth renders the current workspace.
func (s *Server) Truth() Truth {
	s.mu.Lock()
	defer s.mu.Unlock()
	var t Truth
	ids := make([]string, 0, len(s.convs))
	for id := range s.convs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	label := func(id string) string {
		if u := s.users[id]; u != nil {
			return (&readmodel.User{ID: u.ID, DisplayName: u.DisplayName, RealName: u.RealName}).Label()
		}
		return ""
	}
	for _, id := range ids {
		cv := s.convs[id]
		t.Conversations = append(t.Conversations, export.NewConversationLine(s.truthConversation(cv)))
		for _, m := range cv.timeline {
			rm := s.modelMessage(m)
			var replies []readmodel.Message
			if m.parent == nil {
				for _, r := range m.replies {
					replies = append(replies, s.modelMessage(r))
				}
			}
			t.Messages = append(t.Messages, export.NewMessageLine(&rm, replies, label))
		}
	}
	t.Users = s.userLines(referencedUsers(t.Messages))
	// The lines are the workspace's, as an export of its store says: a store
	// holding another team's data differs from the truth.
	team := s.TeamID()
	for i := range t.Conversations {
		t.Conversations[i].TeamID = team
	}
	for i := range t.Messages {
		t.Messages[i].TeamID = team
	}
	for i := range t.Users {
		t.Users[i].TeamID = team
	}
	return t
}

func (s *Server) truthConversation(cv *conv) *readmodel.Conversation {
	c := &readmodel.Conversation{ID: cv.ID, Type: cv.Type(), Name: cv.Name, IsArchived: cv.IsArchived,
		Status: readmodel.StatusOK}
	typ := cv.Type()
	switch {
	case cv.hidden():
		c.Status = readmodel.StatusChannelNotFound
	case !s.scopes[readScope(typ)]:
		c.Status, c.NeededScope = readmodel.StatusMissingScope, readScope(typ)
	case cv.IsArchived:
		c.Status = readmodel.StatusArchived
	case !s.scopes[readmodel.HistoryScope(typ)]:
		c.Status, c.NeededScope = readmodel.StatusMissingScope, readmodel.HistoryScope(typ)
	case !cv.BotMember:
		c.Status = readmodel.StatusNotInChannel
	}
	return c
}

// modelMessage converts a stored message to the read model's Message, as a poller
// would store it after reading it (a tombstone keeps its content, marked deleted).
func (s *Server) modelMessage(m *message) readmodel.Message {
	rm := readmodel.Message{
		Channel: m.conv.ID, TS: m.ts, ThreadTS: m.threadTS(), User: m.user, BotID: m.botID,
		Subtype: m.subtype, Text: m.text, ReplyCount: len(m.replies), LatestReply: m.latestReply(),
		OwnPost: m.botID == botID, Deleted: m.tombstone,
	}
	rm.ReplyWatermark = rm.LatestReply
	rm.BotName = m.username
	if rm.BotName == "" && m.bot != nil {
		rm.BotName = m.bot.Name
	}
	if m.edited != nil {
		e := *m.edited
		rm.Edited = &e
	}
	for _, r := range m.reactions {
		rm.Reactions = append(rm.Reactions, readmodel.Reaction{
			Name: r.name, Count: len(r.users), Users: slices.Clone(s.visibleUsers(r)),
		})
	}
	return rm
}

func referencedUsers(msgs []export.MessageLine) []string {
	seen := map[string]bool{}
	add := func(id string) {
		if id != "" {
			seen[id] = true
		}
	}
	addReactions := func(rs []readmodel.Reaction) {
		for _, r := range rs {
			for _, u := range r.Users {
				add(u)
			}
		}
	}
	for _, m := range msgs {
		add(m.User)
		addReactions(m.Reactions)
		for _, r := range m.Replies {
			add(r.User)
			addReactions(r.Reactions)
		}
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (s *Server) userLines(ids []string) []export.UserLine {
	out := make([]export.UserLine, 0, len(ids))
	for _, id := range ids {
		ru := readmodel.User{ID: id, LookupError: "user_not_found"}
		if u := s.users[id]; u != nil {
			ru = readmodel.User{ID: id, DisplayName: u.DisplayName, RealName: u.RealName, Deleted: u.Deleted}
		}
		out = append(out, export.NewUserLine(&ru))
	}
	return out
}

// Only returns the part of t about the given conversations: their conversation and
// message lines, and the users those messages reference.
func (t Truth) Only(ids ...string) Truth {
	keep := map[string]bool{}
	for _, id := range ids {
		keep[id] = true
	}
	var out Truth
	for _, c := range t.Conversations {
		if keep[c.ID] {
			out.Conversations = append(out.Conversations, c)
		}
	}
	for _, m := range t.Messages {
		if keep[m.Channel] {
			out.Messages = append(out.Messages, m)
		}
	}
	want := map[string]bool{}
	for _, id := range referencedUsers(out.Messages) {
		want[id] = true
	}
	for _, u := range t.Users {
		if want[u.ID] {
			out.Users = append(out.Users, u)
		}
	}
	return out
}

// Write writes t as JSON Lines: conversations, then messages, then users.
func (t Truth) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range t.Conversations {
		if err := enc.Encode(&t.Conversations[i]); err != nil {
			return err
		}
	}
	for i := range t.Messages {
		if err := enc.Encode(&t.Messages[i]); err != nil {
			return err
		}
	}
	for i := range t.Users {
		if err := enc.Encode(&t.Users[i]); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteTruth writes the current workspace's Truth as JSON Lines (README, "Commands" (export)).
func (s *Server) WriteTruth(w io.Writer) error { return s.Truth().Write(w) }
