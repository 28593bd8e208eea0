package slackfake

import (
	"slices"
	"strings"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// text is a topic or purpose object.
type text struct {
	Value   string `json:"value"`
	Creator string `json:"creator"`
	LastSet int64  `json:"last_set"`
}

// channelJSON is a channel, private channel or MPIM object as conversations.info and
// conversations.list send it (testdata/slack-api-ref examples). IsMember is omitted by
// users.conversations, as Slack does.
type channelJSON struct {
	ID                 string   `json:"id"`
	Name               string   `json:"name"`
	IsChannel          bool     `json:"is_channel"`
	IsGroup            bool     `json:"is_group"`
	IsIM               bool     `json:"is_im"`
	IsMPIM             bool     `json:"is_mpim"`
	IsPrivate          bool     `json:"is_private"`
	Created            int64    `json:"created"`
	IsArchived         bool     `json:"is_archived"`
	IsGeneral          bool     `json:"is_general"`
	Unlinked           int      `json:"unlinked"`
	NameNormalized     string   `json:"name_normalized"`
	IsShared           bool     `json:"is_shared"`
	IsOrgShared        bool     `json:"is_org_shared"`
	IsExtShared        bool     `json:"is_ext_shared"`
	IsPendingExtShared bool     `json:"is_pending_ext_shared"`
	PendingShared      []string `json:"pending_shared"`
	ContextTeamID      string   `json:"context_team_id"`
	Updated            int64    `json:"updated"`
	Creator            string   `json:"creator"`
	SharedTeamIDs      []string `json:"shared_team_ids"`
	IsMember           *bool    `json:"is_member,omitempty"`
	Topic              text     `json:"topic"`
	Purpose            text     `json:"purpose"`
	PreviousNames      []string `json:"previous_names"`
}

// imJSON is a 1:1 IM object (no name, no is_member).
type imJSON struct {
	ID            string  `json:"id"`
	Created       int64   `json:"created"`
	IsIM          bool    `json:"is_im"`
	IsOrgShared   bool    `json:"is_org_shared"`
	ContextTeamID string  `json:"context_team_id"`
	User          string  `json:"user"`
	IsUserDeleted bool    `json:"is_user_deleted"`
	Priority      float64 `json:"priority"`
}

// conversationObject renders cv for conversations.info/list (withMember) or
// users.conversations. Callers hold s.mu.
func (s *Server) conversationObject(cv *conv, withMember bool) any {
	if cv.IsIM {
		deleted := false
		if u := s.users[cv.User]; u != nil {
			deleted = u.Deleted
		}
		return imJSON{ID: cv.ID, Created: cv.created, IsIM: true, ContextTeamID: s.id.teamID,
			User: cv.User, IsUserDeleted: deleted}
	}
	o := channelJSON{
		ID: cv.ID, Name: cv.Name, IsChannel: cv.IsChannel, IsGroup: cv.IsGroup, IsMPIM: cv.IsMPIM,
		IsPrivate: cv.IsPrivate, Created: cv.created, IsArchived: cv.IsArchived,
		NameNormalized: cv.Name, PendingShared: []string{}, ContextTeamID: s.id.teamID,
		Updated: cv.created * 1000, Creator: botUserID, SharedTeamIDs: []string{s.id.teamID},
		PreviousNames: []string{},
	}
	if withMember {
		m := cv.BotMember
		o.IsMember = &m
	}
	return o
}

// conversationsInfo answers conversations.info: {"ok":true,"channel":{…}}.
// channel_not_found for an unknown or hidden conversation; missing_scope without the
// type's *:read scope.
func (s *Server) conversationsInfo(c *call) (segments, *apiErr) {
	cv := s.convs[c.params.Get("channel")]
	if cv == nil || cv.hidden() {
		return nil, &apiErr{code: "channel_not_found"}
	}
	if e := s.needScope(readScope(cv.Type())); e != nil {
		return nil, e
	}
	return marshalOK(struct {
		OK      bool `json:"ok"`
		Channel any  `json:"channel"`
	}{true, s.conversationObject(cv, true)})
}

// conversationsList answers conversations.list: the conversations the token can see
// (all public channels; private ones, IMs and MPIMs it is a member of).
func (s *Server) conversationsList(c *call) (segments, *apiErr) {
	return s.listConversations(c, false)
}

// usersConversations answers users.conversations: the conversations the bot is a
// member of. The user argument is ignored (the fake tracks only the bot's membership).
func (s *Server) usersConversations(c *call) (segments, *apiErr) {
	return s.listConversations(c, true)
}

// listConversations implements both lists: types (default public_channel; unknown →
// invalid_types; each needs its *:read scope), exclude_archived, limit (default 100,
// max 999), cursor "team:<next id>", ordered by ID. Shape:
//
//	{"ok":true,"channels":[…],"response_metadata":{"next_cursor":"…" or ""}}
func (s *Server) listConversations(c *call, memberOnly bool) (segments, *apiErr) {
	types := map[string]bool{}
	spec := c.params.Get("types")
	if spec == "" {
		spec = readmodel.TypePublicChannel
	}
	for _, t := range strings.Split(spec, ",") {
		t = strings.TrimSpace(t)
		switch t {
		case readmodel.TypePublicChannel, readmodel.TypePrivateChannel, readmodel.TypeIM, readmodel.TypeMPIM:
			if e := s.needScope(readScope(t)); e != nil {
				return nil, e
			}
			types[t] = true
		default:
			return nil, &apiErr{code: "invalid_types"}
		}
	}
	exclArchived := c.params.Get("exclude_archived") == "true" || c.params.Get("exclude_archived") == "1"
	limit := pageLimit(c.params, 100, 999, 0)
	from := ""
	if cur := c.params.Get("cursor"); cur != "" {
		if c.fault.Kind == InvalidCursor {
			return nil, &apiErr{code: "invalid_cursor"}
		}
		id, ok := parseIDCursor(cur)
		if !ok {
			return nil, &apiErr{code: "invalid_cursor"}
		}
		from = id
	}
	ids := make([]string, 0, len(s.convs))
	for id, cv := range s.convs {
		if cv.hidden() || (memberOnly && !cv.BotMember) || !types[cv.Type()] ||
			(exclArchived && cv.IsArchived) || id < from {
			continue
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	next := ""
	if len(ids) > limit {
		next = idCursor(ids[limit])
		ids = ids[:limit]
	}
	if c.fault.Kind == RepeatCursor {
		next = c.params.Get("cursor")
	}
	chans := make([]any, len(ids))
	for i, id := range ids {
		chans[i] = s.conversationObject(s.convs[id], !memberOnly)
	}
	type meta struct {
		NextCursor string `json:"next_cursor"`
	}
	return marshalOK(struct {
		OK       bool  `json:"ok"`
		Channels []any `json:"channels"`
		Meta     meta  `json:"response_metadata"`
	}{true, chans, meta{next}})
}
