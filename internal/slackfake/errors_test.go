package slackfake

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

func TestErrorsAsSlackSendsThem(t *testing.T) {
	hist := func(api *slack.Client, ch string) error {
		_, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: ch})
		return err
	}
	cases := []struct {
		name  string
		setup func(s *Server)
		call  func(s *Server, api *slack.Client) error
		code  string
	}{
		{"invalid_auth", nil, func(s *Server, _ *slack.Client) error {
			bad := slack.New("xoxb-wrong", slack.OptionAPIURL(apiURL), slack.OptionHTTPClient(s.Client()))
			_, err := bad.AuthTest()
			return err
		}, "invalid_auth"},
		{"token_revoked", func(s *Server) { s.RevokeToken() }, func(_ *Server, api *slack.Client) error { return hist(api, "C1") }, "token_revoked"},
		{"channel_not_found unknown", nil, func(_ *Server, api *slack.Client) error { return hist(api, "C404") }, "channel_not_found"},
		{"channel_not_found private non-member", nil, func(_ *Server, api *slack.Client) error { return hist(api, "G9") }, "channel_not_found"},
		{"not_in_channel", nil, func(_ *Server, api *slack.Client) error { return hist(api, "C2") }, "not_in_channel"},
		{"not_in_channel after RemoveBot", func(s *Server) { must(t, s.RemoveBot("C1")) }, func(_ *Server, api *slack.Client) error { return hist(api, "C1") }, "not_in_channel"},
		{"channel_not_found after RemoveBot from a private channel", func(s *Server) { must(t, s.RemoveBot("C3")) }, func(_ *Server, api *slack.Client) error { return hist(api, "C3") }, "channel_not_found"},
		{"missing_scope", func(s *Server) { s.RevokeScope("groups:history") }, func(_ *Server, api *slack.Client) error { return hist(api, "C3") }, "missing_scope"},
		{"thread_not_found", nil, func(_ *Server, api *slack.Client) error {
			_, _, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: "1700000000.000001"})
			return err
		}, "thread_not_found"},
		{"user_not_found", nil, func(_ *Server, api *slack.Client) error { _, err := api.GetUserInfo("U404"); return err }, "user_not_found"},
		{"invalid_cursor", nil, func(_ *Server, api *slack.Client) error {
			_, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1", Cursor: "%%%"})
			return err
		}, "invalid_cursor"},
		{"invalid_ts_oldest", nil, func(_ *Server, api *slack.Client) error {
			_, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1", Oldest: "-1"})
			return err
		}, "invalid_ts_oldest"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, api := newFake(t, Options{})
			workspace(t, s)
			if tc.setup != nil {
				tc.setup(s)
			}
			wantCode(t, tc.call(s, api), tc.code)
			last := s.Requests()[len(s.Requests())-1]
			if last.Status != http.StatusOK || last.Error != tc.code {
				t.Fatalf("logged status %d error %q, want HTTP 200 with %q", last.Status, last.Error, tc.code)
			}
		})
	}
}

func TestMissingScopeCarriesNeededAndProvided(t *testing.T) {
	s, api := newFake(t, Options{})
	s.RevokeScope("channels:history")
	_, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1"})
	e := slackErr(err)
	if e.Err != "missing_scope" || e.Needed != "channels:history" || !strings.Contains(e.Provided, "groups:history") ||
		strings.Contains(e.Provided, "channels:history") {
		t.Fatalf("missing_scope = %+v, want needed channels:history and the remaining scopes provided", e)
	}
	s.GrantScope("channels:history")
	_, err = api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1"})
	must(t, err)
}

func TestNotAuthedAndBearerToken(t *testing.T) {
	s, _ := newFake(t, Options{})
	r := rawCall(t, s, "auth.test", url.Values{"token": {""}})
	if r.status != 200 || r.json["ok"] != false || r.json["error"] != "not_authed" {
		t.Fatalf("no token: %d %s", r.status, r.body)
	}
	req, _ := http.NewRequest(http.MethodGet, apiURL+"conversations.history?channel=C1&limit=1", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token())
	r = doRaw(t, s.Client(), req)
	if r.json["ok"] != true {
		t.Fatalf("GET with a Bearer token: %s", r.body)
	}
	r = rawCall(t, s, "chat.unknown", nil)
	if r.json["error"] != "unknown_method" {
		t.Fatalf("unknown method: %s", r.body)
	}
}
