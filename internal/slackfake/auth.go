package slackfake

import (
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"time"
)

// TokenLifetime is how long an access token lives once token rotation is enabled:
// Slack's 12 hours (expires_in 43200).
const TokenLifetime = 12 * time.Hour

// tokenLifetime is the life of the access tokens this Server issues.
func (s *Server) tokenLifetime() time.Duration {
	if s.opts.TokenLifetime > 0 {
		return s.opts.TokenLifetime
	}
	return TokenLifetime
}

// auth is a Server's token state. Callers hold Server.mu.
type auth struct {
	current string                // the newest access token (Token)
	tokens  map[string]*tokenInfo // every access token ever issued
	rotate  bool                  // EnableRotation was called
	client  string                // the app's client_id
	secret  string                // the app's client_secret
	refresh string                // the one unused refresh token; "" before rotation
	rng     *rand.Rand            // token values; apart from the fault generator
	// teams is the Teams the Server is routed by, nil if none; set and cleared under
	// both Server.mu and Teams.mu.
	teams *Teams
}

// tokenInfo is one access token's life.
type tokenInfo struct {
	expires time.Time // zero = never (no rotation)
	used    bool      // a request authenticated with it
}

// tokenAlphabet is what Slack's tokens end in.
const tokenAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func (a *auth) init(opts Options, teamID string) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(teamID)) // hash writes never fail
	a.rng = rand.New(rand.NewPCG(uint64(opts.Seed), h.Sum64()))
	a.tokens = map[string]*tokenInfo{}
	switch {
	case opts.Token != "":
		a.current = opts.Token
	case opts.TeamID == "":
		a.current = botToken
	default:
		a.current = "xoxb-" + a.digits(13) + "-" + a.digits(13) + "-" + a.random(24)
	}
	a.tokens[a.current] = &tokenInfo{}
}

func (a *auth) digits(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + a.rng.IntN(10))
	}
	if b[0] == '0' {
		b[0] = '1'
	}
	return string(b)
}

func (a *auth) random(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = tokenAlphabet[a.rng.IntN(len(tokenAlphabet))]
	}
	return string(b)
}

// issue makes a new access token and refresh token valid from now, replacing the
// refresh token; earlier access tokens live on until their own expiry. The Server's
// Teams routes both before the caller releases Server.mu.
func (s *Server) issue(now time.Time) (access, refresh string) {
	a := &s.auth
	access = "xoxe.xoxb-1-" + a.random(60)
	refresh = "xoxe-1-" + a.random(70)
	old := a.refresh
	a.current = access
	a.tokens[access] = &tokenInfo{expires: now.Add(s.tokenLifetime())}
	a.refresh = refresh
	a.teams.index(s, access, refresh, old)
	return access, refresh
}

// check answers whether token authenticates a call at now: "" if it does (and marks
// it used), else Slack's error code. Order as Slack's: unknown token, uninstalled app,
// expired token.
func (s *Server) checkToken(token string, now time.Time) string {
	t := s.auth.tokens[token]
	switch {
	case token == "":
		return "not_authed"
	case t == nil:
		return "invalid_auth"
	case s.revoked:
		return "token_revoked"
	case !t.expires.IsZero() && !now.Before(t.expires):
		return "token_expired"
	}
	t.used = true
	return ""
}

// EnableRotation turns on token rotation for the app with this client id and secret,
// as an install of an app with rotation on: it issues an access token ("xoxe.xoxb-1-…",
// valid for Options.TokenLifetime (default TokenLifetime) from Options.Now) and a single-use refresh token
// ("xoxe-1-…") for oauth.v2.access. The previous long-lived token stops working
// (invalid_auth), as after Slack's oauth.v2.exchange. Called again, it issues a fresh
// pair and forgets the old refresh token. expiresIn is the tokens' lifetime.
func (s *Server) EnableRotation(clientID, clientSecret string) (access, refresh string, expiresIn time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.auth.rotate {
		for tok, t := range s.auth.tokens {
			if t.expires.IsZero() {
				delete(s.auth.tokens, tok)
				s.auth.teams.unindex(s, tok)
			}
		}
	}
	s.auth.rotate = true
	s.auth.client, s.auth.secret = clientID, clientSecret
	access, refresh = s.issue(s.now())
	return access, refresh, s.tokenLifetime()
}

// RefreshToken returns the refresh token that oauth.v2.access accepts now, "" without
// rotation.
func (s *Server) RefreshToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth.refresh
}

// TokenUsed reports whether a request was ever authenticated with token (an access
// token this Server issued).
func (s *Server) TokenUsed(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.auth.tokens[token]
	return t != nil && t.used
}

// tokenList returns every access token and the refresh token, for Teams' index.
// Callers hold s.mu.
func (a *auth) tokenList() (access []string, refresh string) {
	for tok := range a.tokens {
		access = append(access, tok)
	}
	return access, a.refresh
}

// oauthAccess answers oauth.v2.access with grant_type=refresh_token, as Slack does
// with token rotation on: client_id and client_secret as form fields or HTTP Basic
// auth; the refresh token is single-use. The answer:
//
//	{"ok":true,"access_token":"xoxe.xoxb-1-…","token_type":"bot","scope":"a,b",
//	 "bot_user_id","app_id","team":{"id","name"},"enterprise":null|{"id","name"},
//	 "is_enterprise_install","expires_in":43200,"refresh_token":"xoxe-1-…"}
//
// Errors: invalid_client_id, bad_client_secret, invalid_grant_type (a grant other than
// refresh_token, or none), invalid_arguments (no refresh_token), invalid_refresh_token
// (unknown, already used, or the app uninstalled by RevokeToken), and
// invalid_grant_type also on a Server without rotation (no refresh token to exchange).
func (s *Server) oauthAccess(c *call) (segments, *apiErr) {
	id, secret := c.params.Get("client_id"), c.params.Get("client_secret")
	if u, p, ok := (&http.Request{Header: c.header}).BasicAuth(); ok {
		id, secret = u, p
	}
	switch {
	case c.params.Get("grant_type") != "refresh_token" || !s.auth.rotate:
		return nil, &apiErr{code: "invalid_grant_type"}
	case id != s.auth.client:
		return nil, &apiErr{code: "invalid_client_id"}
	case secret != s.auth.secret:
		return nil, &apiErr{code: "bad_client_secret"}
	case c.params.Get("refresh_token") == "":
		return nil, &apiErr{code: "invalid_arguments"}
	case c.params.Get("refresh_token") != s.auth.refresh || s.revoked:
		return nil, &apiErr{code: "invalid_refresh_token"}
	}
	access, refresh := s.issue(c.now)
	type idName struct {
		ID   string `json:"id"`
		Name string `json:"name,omitempty"`
	}
	var ent *idName
	if s.id.enterpriseID != "" {
		ent = &idName{ID: s.id.enterpriseID}
	}
	return marshalOK(struct {
		OK                  bool    `json:"ok"`
		AccessToken         string  `json:"access_token"`
		TokenType           string  `json:"token_type"`
		Scope               string  `json:"scope"`
		BotUserID           string  `json:"bot_user_id"`
		AppID               string  `json:"app_id"`
		Team                idName  `json:"team"`
		Enterprise          *idName `json:"enterprise"`
		IsEnterpriseInstall bool    `json:"is_enterprise_install"`
		ExpiresIn           int     `json:"expires_in"`
		RefreshToken        string  `json:"refresh_token"`
	}{true, access, "bot", s.scopeHeader(), botUserID, botAppID,
		idName{s.id.teamID, s.id.teamName}, ent, s.id.enterpriseID != "",
		int(s.tokenLifetime() / time.Second), refresh})
}

// validID reports whether id looks like a Slack ID starting with prefix: the prefix
// and 2 to 20 uppercase letters or digits.
func validID(id string, prefix byte) bool {
	if len(id) < 3 || len(id) > 21 || id[0] != prefix {
		return false
	}
	for i := 1; i < len(id); i++ {
		if c := id[i]; (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
