package slackfake

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
)

// Teams is a fake Slack serving many workspaces (installations) at one address, as
// Slack does: each request goes to the Server whose access token it carries (the
// "token" argument or an "Authorization: Bearer" header), and oauth.v2.access to the
// Server whose refresh token it carries. Every Server keeps its own data, rate limits,
// faults and request log. Routing is one map look-up per request, and stays current as
// tokens rotate: every access token a Server ever issued keeps routing to it (so an
// expired one answers token_expired), until Remove.
//
// Requests that reach no Server answer as Slack would: not_authed without a token,
// invalid_auth with an unknown one, unknown_method for an unknown method, and for
// oauth.v2.access invalid_arguments without a refresh token or invalid_refresh_token
// with an unknown one. They are in no Server's request log.
//
// Teams is an http.Handler; Transport and Client reach it in memory, as a Server's.
// Its methods are safe for concurrent use with requests and with each other.
type Teams struct {
	mu        sync.RWMutex
	byTeam    map[string]*Server
	byToken   map[string]*Server // every access token issued → its Server
	byRefresh map[string]*Server // the current refresh token → its Server
}

// NewTeams returns an empty Teams.
func NewTeams() *Teams {
	return &Teams{byTeam: map[string]*Server{}, byToken: map[string]*Server{},
		byRefresh: map[string]*Server{}}
}

// Errors of Teams.Add.
var (
	ErrBadTeamID   = errors.New("slackfake: team ID is not a Slack team ID (T and uppercase letters or digits)")
	ErrBadEntID    = errors.New("slackfake: enterprise ID is not a Slack enterprise ID (E and uppercase letters or digits)")
	ErrDuplicate   = errors.New("slackfake: a server with this team ID or token is already added")
	ErrOtherTeams  = errors.New("slackfake: the server is already in a Teams")
	ErrUnknownTeam = errors.New("slackfake: no server with this team ID")
)

// Add routes s's tokens to s from now on. It fails, adding nothing, when s's team ID or
// enterprise ID is not Slack-shaped (ErrBadTeamID, ErrBadEntID), when another Server
// in t has the same team ID or shares a token (ErrDuplicate), or when s is in a Teams
// already (ErrOtherTeams).
func (t *Teams) Add(s *Server) error {
	if !validID(s.id.teamID, 'T') {
		return ErrBadTeamID
	}
	if s.id.enterpriseID != "" && !validID(s.id.enterpriseID, 'E') {
		return ErrBadEntID
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byTeam[s.id.teamID] != nil {
		return fmt.Errorf("%w: team %s", ErrDuplicate, s.id.teamID)
	}
	// Lock order: Teams.mu, then Server.mu. A Server indexes new tokens only after
	// releasing its own lock.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.auth.teams != nil {
		return ErrOtherTeams
	}
	access, refresh := s.auth.tokenList()
	for _, tok := range access {
		if t.byToken[tok] != nil {
			return fmt.Errorf("%w: team %s", ErrDuplicate, s.id.teamID)
		}
	}
	if refresh != "" && t.byRefresh[refresh] != nil {
		return fmt.Errorf("%w: team %s", ErrDuplicate, s.id.teamID)
	}
	s.auth.teams = t
	t.byTeam[s.id.teamID] = s
	for _, tok := range access {
		t.byToken[tok] = s
	}
	if refresh != "" {
		t.byRefresh[refresh] = s
	}
	s.routedRefresh = refresh
	return nil
}

// Remove stops routing to the Server of teamID (an uninstall as far as the address is
// concerned: its tokens then answer invalid_auth). It returns ErrUnknownTeam if there
// is none. The Server itself is unchanged and may be added again.
func (t *Teams) Remove(teamID string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byTeam[teamID]
	if s == nil {
		return ErrUnknownTeam
	}
	delete(t.byTeam, teamID)
	s.mu.Lock()
	s.auth.teams = nil
	s.mu.Unlock()
	// Tokens may have rotated since Add, so sweep rather than ask s: only entries of s.
	for tok, o := range t.byToken {
		if o == s {
			delete(t.byToken, tok)
		}
	}
	for tok, o := range t.byRefresh {
		if o == s {
			delete(t.byRefresh, tok)
		}
	}
	return nil
}

// index routes a Server's newly issued tokens to it, dropping its refresh token that
// was exchanged. A nil t (a Server in no Teams) does nothing, as does a Server that
// was removed meanwhile.
func (t *Teams) index(s *Server, access, refresh string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byTeam[s.id.teamID] != s {
		return
	}
	t.byToken[access] = s
	// Single-use refresh tokens: only the newest routes.
	if old := s.routedRefresh; old != "" && t.byRefresh[old] == s {
		delete(t.byRefresh, old)
	}
	s.routedRefresh = refresh
	t.byRefresh[refresh] = s
}

// Server returns the Server of teamID, nil if none.
func (t *Teams) Server(teamID string) *Server {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.byTeam[teamID]
}

// TeamIDs returns the team IDs served, sorted.
func (t *Teams) TeamIDs() []string {
	t.mu.RLock()
	out := make([]string, 0, len(t.byTeam))
	for id := range t.byTeam {
		out = append(out, id)
	}
	t.mu.RUnlock()
	slices.Sort(out)
	return out
}

// Len returns the number of Servers routed.
func (t *Teams) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.byTeam)
}

// route finds the Server for r, or the answer of a request that reaches none.
func (t *Teams) route(r *request) (*Server, *answer) {
	if _, known := methods[r.method]; !known {
		return nil, errorAnswer(&apiErr{code: "unknown_method"}, "")
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if r.method == oauthMethod {
		rt := r.params.Get("refresh_token")
		if s := t.byRefresh[rt]; s != nil {
			return s, nil
		}
		if rt == "" {
			return nil, errorAnswer(&apiErr{code: "invalid_arguments"}, "")
		}
		return nil, errorAnswer(&apiErr{code: "invalid_refresh_token"}, "")
	}
	if s := t.byToken[r.token]; s != nil {
		return s, nil
	}
	if r.token == "" {
		return nil, errorAnswer(&apiErr{code: "not_authed"}, "")
	}
	return nil, errorAnswer(&apiErr{code: "invalid_auth"}, "")
}

func (t *Teams) handle(u *url.URL, header http.Header, body []byte, bodyErr error) *answer {
	r := parseRequest(u, header, body, bodyErr)
	s, a := t.route(r)
	if s == nil {
		return a
	}
	return s.serve(r)
}

// ServeHTTP serves the Slack Web API of every team at /<method>, as Server.ServeHTTP.
func (t *Teams) ServeHTTP(w http.ResponseWriter, r *http.Request) { serveHTTP(t, w, r) }

// Transport returns an in-memory http.RoundTripper to t (see Server.Transport).
func (t *Teams) Transport() http.RoundTripper { return transport{t} }

// Client returns an *http.Client that reaches t in memory (Transport): one client for
// every team, each call authenticated by its own token.
func (t *Teams) Client() *http.Client { return &http.Client{Transport: t.Transport()} }
