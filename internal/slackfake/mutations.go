package slackfake

import (
	"fmt"
	"strings"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// ---- workspace setup ----

// AddUser adds or replaces a user. An empty Name defaults to the lower-case ID.
func (s *Server) AddUser(u User) error {
	if u.ID == "" {
		return fmt.Errorf("%w: user without ID", ErrInvalid)
	}
	if u.Name == "" {
		u.Name = strings.ToLower(u.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[u.ID] = &u
	return nil
}

// AddBot registers an app bot or a classic bot. An app bot's UserID is added as a bot
// user named after the bot if it does not exist yet.
func (s *Server) AddBot(b Bot) error {
	if b.ID == "" {
		return fmt.Errorf("%w: bot without ID", ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bots[b.ID] = &b
	if b.UserID != "" && s.users[b.UserID] == nil {
		s.users[b.UserID] = &User{ID: b.UserID, Name: strings.ToLower(b.Name), RealName: b.Name, IsBot: true}
	}
	return nil
}

// AddConversation adds a conversation, or replaces its flags and membership if it
// exists (its messages are kept).
func (s *Server) AddConversation(c Conversation) error {
	if c.ID == "" {
		return fmt.Errorf("%w: conversation without ID", ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.convs[c.ID]; old != nil {
		old.Conversation = c
		return nil
	}
	s.convs[c.ID] = &conv{Conversation: c, created: s.now().Unix(), byKey: map[uint64]*message{}}
	return nil
}

// ---- posting ----

// nextKey returns a fresh ts key: max(now, last+1µs), so ts values are unique and
// strictly increasing.
func (s *Server) nextKey() uint64 {
	k := uint64(0)
	if us := s.now().UnixMicro(); us > 0 {
		k = uint64(us)
	}
	if k <= s.lastKey {
		k = s.lastKey + 1
	}
	s.lastKey = k
	return k
}

func (s *Server) writableConv(channel string) (*conv, error) {
	c := s.convs[channel]
	if c == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownConversation, channel)
	}
	if c.IsArchived {
		return nil, fmt.Errorf("%w: %s", ErrArchived, channel)
	}
	return c, nil
}

// place stores m (key set) in c, as a top-level message or as a reply of parent.
func (s *Server) place(c *conv, m *message, parent *message) {
	m.ts = tsOf(m.key)
	m.conv = c
	c.byKey[m.key] = m
	if parent != nil {
		m.parent = parent
		insertReply(parent, m)
		parent.enc = nil
	}
	if m.inTimeline() {
		c.insertTimeline(m)
	}
	if m.key > s.lastKey {
		s.lastKey = m.key
	}
}

func (s *Server) post(channel string, m *message) (readmodel.TS, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.writableConv(channel)
	if err != nil {
		return "", err
	}
	m.key = s.nextKey()
	s.place(c, m, nil)
	return m.ts, nil
}

// Post posts a message as a user and returns its ts.
func (s *Server) Post(channel, user, text string) (readmodel.TS, error) {
	return s.post(channel, &message{user: user, text: text})
}

// appBotMessage builds an app bot's message: user = the bot user, bot_id, bot_profile,
// no subtype.
func (s *Server) appBotMessage(botID, text string) (*message, error) {
	b := s.bots[botID]
	if b == nil || b.UserID == "" {
		return nil, fmt.Errorf("%w: %s is not an app bot", ErrUnknownBot, botID)
	}
	cp := *b
	return &message{user: b.UserID, botID: b.ID, bot: &cp, text: text}, nil
}

// PostAsAppBot posts as a registered app bot (BotID() for the token's own bot): the
// message has user (the bot user) and bot_id and no subtype.
func (s *Server) PostAsAppBot(channel, botID, text string) (readmodel.TS, error) {
	s.mu.Lock()
	m, err := s.appBotMessage(botID, text)
	s.mu.Unlock()
	if err != nil {
		return "", err
	}
	return s.post(channel, m)
}

// PostAsClassicBot posts a classic bot message: subtype bot_message, bot_id and
// username (omitted when ""), no user. A registered bot adds a bot_profile; an
// unregistered botID is allowed (a message whose only label is its bot_id).
func (s *Server) PostAsClassicBot(channel, botID, username, text string) (readmodel.TS, error) {
	if botID == "" {
		return "", fmt.Errorf("%w: empty bot ID", ErrInvalid)
	}
	m := &message{botID: botID, username: username, subtype: readmodel.SubtypeBotMessage, text: text}
	s.mu.Lock()
	if b := s.bots[botID]; b != nil {
		cp := *b
		m.bot = &cp
	}
	s.mu.Unlock()
	return s.post(channel, m)
}

// ---- replies ----

// threadRoot finds the live thread parent of ts (a parent, or the parent of a reply).
func (s *Server) threadRoot(channel string, ts readmodel.TS) (*conv, *message, error) {
	c, err := s.writableConv(channel)
	if err != nil {
		return nil, nil, err
	}
	m, err := c.lookup(ts)
	if err != nil {
		return nil, nil, err
	}
	if m.parent != nil {
		m = m.parent
	}
	if m.tombstone {
		return nil, nil, fmt.Errorf("%w: %s %s", ErrDeleted, channel, ts)
	}
	return c, m, nil
}

func (c *conv) lookup(ts readmodel.TS) (*message, error) {
	k, ok := keyOf(ts)
	if !ok {
		return nil, fmt.Errorf("%w: invalid ts %q", ErrInvalid, ts)
	}
	m := c.byKey[k]
	if m == nil {
		return nil, fmt.Errorf("%w: %s %s", ErrUnknownMessage, c.ID, ts)
	}
	return m, nil
}

func (s *Server) reply(channel string, parent readmodel.TS, m *message) (readmodel.TS, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, p, err := s.threadRoot(channel, parent)
	if err != nil {
		return "", err
	}
	m.key = s.nextKey()
	s.place(c, m, p)
	return m.ts, nil
}

// Reply posts a thread reply by user under parent (a reply's ts names its thread).
func (s *Server) Reply(channel string, parent readmodel.TS, user, text string) (readmodel.TS, error) {
	return s.reply(channel, parent, &message{user: user, text: text})
}

// ReplyBroadcast posts a thread reply that is also sent to the channel: one message,
// subtype thread_broadcast, visible in history and in the thread.
func (s *Server) ReplyBroadcast(channel string, parent readmodel.TS, user, text string) (readmodel.TS, error) {
	return s.reply(channel, parent, &message{user: user, text: text, subtype: readmodel.SubtypeThreadBroadcast})
}

// ReplyAsAppBot posts a thread reply as a registered app bot.
func (s *Server) ReplyAsAppBot(channel string, parent readmodel.TS, botID, text string) (readmodel.TS, error) {
	s.mu.Lock()
	m, err := s.appBotMessage(botID, text)
	s.mu.Unlock()
	if err != nil {
		return "", err
	}
	return s.reply(channel, parent, m)
}

// ---- changes to messages ----

func (s *Server) liveMessage(channel string, ts readmodel.TS) (*conv, *message, error) {
	c := s.convs[channel]
	if c == nil {
		return nil, nil, fmt.Errorf("%w: %s", ErrUnknownConversation, channel)
	}
	m, err := c.lookup(ts)
	if err != nil {
		return nil, nil, err
	}
	if m.tombstone {
		return nil, nil, fmt.Errorf("%w: %s %s", ErrDeleted, channel, ts)
	}
	return c, m, nil
}

// Edit replaces a message's text and sets edited = {user: its author, ts: now}; the
// message keeps its ts.
func (s *Server) Edit(channel string, ts readmodel.TS, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, m, err := s.liveMessage(channel, ts)
	if err != nil {
		return err
	}
	if c.IsArchived {
		return fmt.Errorf("%w: %s", ErrArchived, channel)
	}
	editor := m.user
	if editor == "" {
		editor = m.botID
	}
	m.text = text
	m.edited = &readmodel.Edited{User: editor, TS: tsOf(s.nextKey())}
	m.enc = nil
	return nil
}

// Delete deletes a message. A top-level message or reply disappears (its parent's
// reply_count and latest_reply follow, latest_reply moving backwards if it was the
// newest); a parent with live replies becomes a tombstone; a tombstone whose last
// reply goes disappears too, and its thread then answers thread_not_found.
func (s *Server) Delete(channel string, ts readmodel.TS) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, m, err := s.liveMessage(channel, ts)
	if err != nil {
		return err
	}
	s.remove(c, m)
	return nil
}

func (s *Server) remove(c *conv, m *message) {
	if p := m.parent; p != nil {
		removeReply(p, m)
		p.enc = nil
		delete(c.byKey, m.key)
		if m.inTimeline() {
			c.removeTimeline(m)
		}
		if p.tombstone && len(p.replies) == 0 {
			delete(c.byKey, p.key)
			c.removeTimeline(p)
		}
		return
	}
	if len(m.replies) > 0 {
		m.tombstone = true
		m.enc = nil
		return
	}
	delete(c.byKey, m.key)
	c.removeTimeline(m)
}

// React adds user's reaction name ("thumbsup", "thumbsup::skin-tone-2") to a message;
// reacting twice is a no-op.
func (s *Server) React(channel string, ts readmodel.TS, user, name string) error {
	if user == "" || name == "" {
		return fmt.Errorf("%w: reaction needs a user and a name", ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, m, err := s.liveMessage(channel, ts)
	if err != nil {
		return err
	}
	for _, r := range m.reactions {
		if r.name == name {
			for _, u := range r.users {
				if u == user {
					return nil
				}
			}
			r.users = append(r.users, user)
			m.enc = nil
			return nil
		}
	}
	m.reactions = append(m.reactions, &reaction{name: name, users: []string{user}})
	m.enc = nil
	return nil
}

// Unreact removes user's reaction name; the reaction disappears with its last user,
// and the reactions key with the last reaction. Removing an absent reaction is a no-op.
func (s *Server) Unreact(channel string, ts readmodel.TS, user, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, m, err := s.liveMessage(channel, ts)
	if err != nil {
		return err
	}
	for i, r := range m.reactions {
		if r.name != name {
			continue
		}
		for j, u := range r.users {
			if u == user {
				r.users = append(r.users[:j:j], r.users[j+1:]...)
				if len(r.users) == 0 {
					m.reactions = append(m.reactions[:i:i], m.reactions[i+1:]...)
				}
				m.enc = nil
				return nil
			}
		}
	}
	return nil
}

// ---- users ----

// RenameUser sets a user's profile display_name and real_name.
func (s *Server) RenameUser(id, displayName, realName string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[id]
	if u == nil {
		return fmt.Errorf("%w: %s", ErrUnknownUser, id)
	}
	u.DisplayName, u.RealName = displayName, realName
	return nil
}

// DeactivateUser marks a user deleted: users.info then answers deleted: true and no
// top-level real_name (the profile keeps its names).
func (s *Server) DeactivateUser(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[id]
	if u == nil {
		return fmt.Errorf("%w: %s", ErrUnknownUser, id)
	}
	u.Deleted = true
	return nil
}

// ---- conversations and token ----

func (s *Server) setConv(channel string, f func(c *conv)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.convs[channel]
	if c == nil {
		return fmt.Errorf("%w: %s", ErrUnknownConversation, channel)
	}
	f(c)
	return nil
}

// Archive archives a conversation: it stays readable, is_archived becomes true, and
// it accepts no new messages.
func (s *Server) Archive(channel string) error {
	s.mu.Lock()
	c := s.convs[channel]
	im := c != nil && c.IsIM
	s.mu.Unlock()
	if im {
		// conversations.archive answers method_not_supported_for_channel_type for a DM.
		return fmt.Errorf("%w: %s is an IM, which Slack cannot archive", ErrInvalid, channel)
	}
	return s.setConv(channel, func(c *conv) { c.IsArchived = true })
}

// Unarchive reverses Archive.
func (s *Server) Unarchive(channel string) error {
	return s.setConv(channel, func(c *conv) { c.IsArchived = false })
}

// RemoveBot removes the token's bot from a conversation. A public channel then answers
// not_in_channel to history and replies; a private channel, IM or MPIM answers
// channel_not_found, as Slack does for conversations a token cannot see.
func (s *Server) RemoveBot(channel string) error {
	return s.setConv(channel, func(c *conv) { c.BotMember = false })
}

// JoinBot adds the token's bot to a conversation (reverses RemoveBot).
func (s *Server) JoinBot(channel string) error {
	return s.setConv(channel, func(c *conv) { c.BotMember = true })
}

// RevokeScope takes a scope away from the token: calls that need it answer
// missing_scope with needed = scope.
func (s *Server) RevokeScope(scope string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.scopes, scope)
}

// GrantScope gives the token a scope.
func (s *Server) GrantScope(scope string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scopes[scope] = true
}

// RevokeToken uninstalls the app: every later call with any of the Server's access
// tokens answers token_revoked (auth.test too: Slack's common errors apply to every
// method), and oauth.v2.access refuses the refresh token with invalid_refresh_token.
func (s *Server) RevokeToken() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked = true
}
