package slackfake

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slack-go/slack"
)

const (
	testClientID     = "1000000001.2000000002"
	testClientSecret = "f4k3s3cr3t"
)

// refresh exchanges a refresh token through slack-go's own function, the way a
// rotating client does.
func refresh(c *http.Client, refreshToken string) (*slack.OAuthV2Response, error) {
	return slack.RefreshOAuthV2Token(c, testClientID, testClientSecret, refreshToken,
		slack.OAuthOptionAPIURL(apiURL))
}

func authTestWith(c *http.Client, token string) (*slack.AuthTestResponse, error) {
	return slack.New(token, slack.OptionAPIURL(apiURL), slack.OptionHTTPClient(c)).AuthTest()
}

func TestRotationRefreshThroughSlackGo(t *testing.T) {
	s, _ := newFake(t, Options{TeamID: "T0ROTATE1", TeamName: "Rotate One"})
	access, rt, exp := s.EnableRotation(testClientID, testClientSecret)
	if exp != 12*time.Hour || !strings.HasPrefix(access, "xoxe.xoxb-1-") || !strings.HasPrefix(rt, "xoxe-1-") {
		t.Fatalf("EnableRotation = %q, %q, %v", access, rt, exp)
	}
	if s.Token() != access || s.RefreshToken() != rt {
		t.Fatalf("Token/RefreshToken = %q, %q, want the issued pair", s.Token(), s.RefreshToken())
	}
	resp, err := refresh(s.Client(), rt)
	must(t, err)
	if !strings.HasPrefix(resp.AccessToken, "xoxe.xoxb-1-") || resp.AccessToken == access ||
		!strings.HasPrefix(resp.RefreshToken, "xoxe-1-") || resp.RefreshToken == rt ||
		resp.ExpiresIn != 43200 || resp.TokenType != "bot" || resp.Team.ID != "T0ROTATE1" ||
		resp.Team.Name != "Rotate One" || resp.BotUserID != s.BotUserID() || resp.AppID == "" ||
		resp.Enterprise.ID != "" || !strings.Contains(resp.Scope, "channels:history") {
		t.Fatalf("oauth.v2.access answer: %+v", resp)
	}
	if s.Token() != resp.AccessToken {
		t.Fatalf("Token() = %q after refresh, want the new access token", s.Token())
	}
	for _, tok := range []string{access, resp.AccessToken} {
		a, err := authTestWith(s.Client(), tok)
		must(t, err)
		if a.TeamID != "T0ROTATE1" {
			t.Fatalf("auth.test team = %q", a.TeamID)
		}
	}
	// Single use: the exchanged refresh token is refused, the new one works.
	_, err = refresh(s.Client(), rt)
	wantCode(t, err, "invalid_refresh_token")
	_, err = refresh(s.Client(), resp.RefreshToken)
	must(t, err)
	// The request log keeps neither the secret nor the refresh token.
	for _, r := range s.Requests() {
		if r.Params.Has("client_secret") || r.Params.Has("refresh_token") || r.Params.Has("token") {
			t.Fatalf("request log keeps a secret: %+v", r.Params)
		}
	}
}

func TestRotationLongLivedTokenStops(t *testing.T) {
	s, api := newFake(t, Options{})
	old := s.Token()
	if old != botToken {
		t.Fatalf("default Token() = %q", old)
	}
	s.EnableRotation(testClientID, testClientSecret)
	_, err := api.AuthTest()
	wantCode(t, err, "invalid_auth")
}

func TestOAuthErrors(t *testing.T) {
	s, _ := newFake(t, Options{})
	form := func(p url.Values) raw { return rawCall(t, s, "oauth.v2.access", p) }
	if got := form(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"xoxe-1-x"}}); got.json["error"] != "invalid_grant_type" {
		t.Fatalf("without rotation: %s", got.body)
	}
	_, rt, _ := s.EnableRotation(testClientID, testClientSecret)
	good := url.Values{"client_id": {testClientID}, "client_secret": {testClientSecret},
		"grant_type": {"refresh_token"}, "refresh_token": {rt}}
	for _, tc := range []struct {
		change func(p url.Values)
		want   string
	}{
		{func(p url.Values) { p.Set("client_id", "999.999") }, "invalid_client_id"},
		{func(p url.Values) { p.Set("client_secret", "nope") }, "bad_client_secret"},
		{func(p url.Values) { p.Del("grant_type") }, "invalid_grant_type"},
		{func(p url.Values) { p.Set("grant_type", "authorization_code") }, "invalid_grant_type"},
		{func(p url.Values) { p.Del("refresh_token") }, "invalid_arguments"},
		{func(p url.Values) { p.Set("refresh_token", "xoxe-1-unknown") }, "invalid_refresh_token"},
	} {
		p := url.Values{}
		for k, v := range good {
			p[k] = append([]string(nil), v...)
		}
		tc.change(p)
		if got := form(p); got.json["ok"] != false || got.json["error"] != tc.want {
			t.Fatalf("%v: %s, want %s", p, got.body, tc.want)
		}
	}
	// None of those used up the refresh token; HTTP Basic auth carries the credentials.
	req, _ := http.NewRequest(http.MethodPost, apiURL+"oauth.v2.access",
		strings.NewReader(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(testClientID, testClientSecret)
	got := doRaw(t, s.Client(), req)
	if got.json["ok"] != true || got.json["enterprise"] != nil || got.json["expires_in"] != float64(43200) {
		t.Fatalf("Basic auth refresh: %s", got.body)
	}
	if _, present := got.json["enterprise"]; !present {
		t.Fatalf("enterprise key missing: %s", got.body)
	}
}

// TestRotationExpiry runs the 12-hour lifetime on the bubble's clock: a token works
// until 12 h after issue and then answers token_expired, also after a refresh issued
// its successor (Slack does not end the old token early, nor extend it).
func TestRotationExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{TeamID: "T0EXPIRE1"})
		first, rt, _ := s.EnableRotation(testClientID, testClientSecret)
		time.Sleep(11 * time.Hour)
		resp, err := refresh(s.Client(), rt)
		must(t, err)
		_, err = authTestWith(s.Client(), first)
		must(t, err)
		time.Sleep(time.Hour - time.Second)
		_, err = authTestWith(s.Client(), first)
		must(t, err)
		time.Sleep(time.Second)
		_, err = authTestWith(s.Client(), first)
		wantCode(t, err, "token_expired")
		api := slack.New(resp.AccessToken, slack.OptionAPIURL(apiURL), slack.OptionHTTPClient(s.Client()))
		_, err = api.AuthTest()
		must(t, err)
		time.Sleep(11 * time.Hour)
		_, err = api.AuthTest()
		wantCode(t, err, "token_expired")
		// An expired access token does not stop a refresh.
		resp2, err := refresh(s.Client(), resp.RefreshToken)
		must(t, err)
		_, err = authTestWith(s.Client(), resp2.AccessToken)
		must(t, err)
		if !s.TokenUsed(first) || !s.TokenUsed(resp.AccessToken) || s.TokenUsed(rt) {
			t.Fatal("TokenUsed does not record which access tokens authenticated a call")
		}
	})
}

func TestAuthTestExpiresIn(t *testing.T) {
	c := &clock{t: t0}
	s, _ := newFake(t, Options{Now: c.now})
	access, _, _ := s.EnableRotation(testClientID, testClientSecret)
	c.advance(2 * time.Hour)
	got := rawCall(t, s, "auth.test", url.Values{"token": {access}})
	if got.json["expires_in"] != float64(10*3600) {
		t.Fatalf("auth.test expires_in: %s", got.body)
	}
}

func TestRevokeWithRotation(t *testing.T) {
	s, _ := newFake(t, Options{})
	access, rt, _ := s.EnableRotation(testClientID, testClientSecret)
	s.RevokeToken()
	_, err := authTestWith(s.Client(), access)
	wantCode(t, err, "token_revoked")
	_, err = refresh(s.Client(), rt)
	wantCode(t, err, "invalid_refresh_token")
}

func TestEnterpriseInstall(t *testing.T) {
	s, _ := newFake(t, Options{TeamID: "T0GRID001", EnterpriseID: "E0ORG0001"})
	if s.EnterpriseID() != "E0ORG0001" {
		t.Fatalf("EnterpriseID() = %q", s.EnterpriseID())
	}
	got := rawCall(t, s, "auth.test", nil)
	if got.json["enterprise_id"] != "E0ORG0001" || got.json["is_enterprise_install"] != true || got.json["team_id"] != "T0GRID001" {
		t.Fatalf("auth.test: %s", got.body)
	}
	_, rt, _ := s.EnableRotation(testClientID, testClientSecret)
	resp, err := refresh(s.Client(), rt)
	must(t, err)
	if resp.Enterprise.ID != "E0ORG0001" || !resp.IsEnterpriseInstall {
		t.Fatalf("oauth.v2.access enterprise: %+v", resp)
	}
	// A workspace install has no enterprise_id key.
	plain, _ := newFake(t, Options{})
	if got := rawCall(t, plain, "auth.test", nil); got.json["enterprise_id"] != nil || got.json["team_id"] != "T0SLACKPL" {
		t.Fatalf("default auth.test: %s", got.body)
	}
}

// TestRotatedTokenSharesRateLimit: Slack limits per workspace and app, so a fresh
// token does not buy a fresh window.
func TestRotatedTokenSharesRateLimit(t *testing.T) {
	s, _ := newFake(t, Options{RatePerMinute: map[string]int{"conversations.history": 1}})
	first, rt, _ := s.EnableRotation(testClientID, testClientSecret)
	resp, err := refresh(s.Client(), rt)
	must(t, err)
	if got := rawCall(t, s, "conversations.history", url.Values{"token": {first}, "channel": {"C1"}}); got.status != 200 {
		t.Fatalf("first call: %d %s", got.status, got.body)
	}
	if got := rawCall(t, s, "conversations.history", url.Values{"token": {resp.AccessToken}, "channel": {"C1"}}); got.status != 429 {
		t.Fatalf("second call with the new token: %d %s, want 429", got.status, got.body)
	}
}

// TestRotationTokenLifetimeOption: Options.TokenLifetime sets the rotating tokens'
// life (EnableRotation's expiresIn, oauth.v2.access's expires_in and the expiry
// itself), so a demo in real time sees tokens expire within seconds.
func TestRotationTokenLifetimeOption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{TeamID: "T0SHORT01", TokenLifetime: 4 * time.Second})
		access, rt, exp := s.EnableRotation(testClientID, testClientSecret)
		if exp != 4*time.Second {
			t.Fatalf("EnableRotation expiresIn = %v, want 4s", exp)
		}
		resp, err := refresh(s.Client(), rt)
		must(t, err)
		if resp.ExpiresIn != 4 {
			t.Fatalf("oauth.v2.access expires_in = %d, want 4", resp.ExpiresIn)
		}
		time.Sleep(4*time.Second - time.Millisecond)
		_, err = authTestWith(s.Client(), resp.AccessToken)
		must(t, err)
		time.Sleep(time.Millisecond)
		for _, tok := range []string{access, resp.AccessToken} {
			_, err = authTestWith(s.Client(), tok)
			wantCode(t, err, "token_expired")
		}
	})
}
