package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestWorkspacesLoad(t *testing.T) {
	t.Setenv("TOK_A", "xoxb-a")
	t.Setenv("REF_A", "xoxe-1-a")
	c := mustLoad(t, `
slack: {client_id: "1.2", client_secret: s}
store: {dir: stores}
workspaces:
  - {team_id: T0AAA, token: "${TOK_A}", refresh_token: "${REF_A}", conversations: [C0A], discover: member}
  - {team_id: T0BBB, enterprise_id: E0ORG, token: xoxb-b}
`)
	if !c.MultiWorkspace() {
		t.Fatal("MultiWorkspace() = false with workspaces listed")
	}
	if len(c.Workspaces) != 2 || c.Workspaces[0].Token.Reveal() != "xoxb-a" || c.Workspaces[0].RefreshToken.Reveal() != "xoxe-1-a" {
		t.Fatalf("workspaces not loaded as written: %+v", c.Workspaces)
	}
	if !filepath.IsAbs(c.Store.Dir) || filepath.Base(c.Store.Dir) != "stores" {
		t.Errorf("store.dir = %q, want an absolute path ending in stores", c.Store.Dir)
	}
	if err := c.RequireWorkspaceTokens(); err != nil {
		t.Errorf("RequireWorkspaceTokens: %v", err)
	}
	if strings.Contains(c.String(), "xoxb-a") || strings.Contains(c.String(), "xoxe-1-a") {
		t.Error("the config's text shows a workspace token")
	}
}

func TestWorkspacesInvalid(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"workspaces: [{team_id: T0AAA, token: x}]\n", "store.dir"},
		{"store: {dir: d}\nworkspaces: [{team_id: t0aaa, token: x}]\n", "workspaces[0].team_id"},
		{"store: {dir: d}\nworkspaces: [{team_id: T0AAA, token: x}, {team_id: T0AAA, token: y}]\n", "listed twice"},
		{"store: {dir: d}\nworkspaces: [{team_id: T0AAA, token: x, refresh_token: xoxe-1-r}]\n", "slack.client_id"},
		{"store: {dir: d}\nworkspaces: [{team_id: T0AAA, token: x, discover: all}]\n", "workspaces[0].discover"},
		{"store: {dir: d}\nworkspaces: [{team_id: T0AAA, token: x, conversations: [nope]}]\n", "workspaces[0].conversations"},
	} {
		_, err := Load(writeConfig(t, tc.yaml))
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want an ErrInvalid naming %s", tc.yaml, err, tc.want)
		}
	}
	c := mustLoad(t, "store: {dir: d}\nworkspaces: [{team_id: T0AAA}]\n")
	if err := c.RequireWorkspaceTokens(); err == nil || !strings.Contains(err.Error(), "workspaces[0].token") {
		t.Errorf("RequireWorkspaceTokens with no token: %v", err)
	}
}

func TestRotatingAccessTokenIsABotToken(t *testing.T) {
	c := mustLoad(t, "slack: {token: xoxe.xoxb-1-abc}\n")
	if err := c.RequireToken(); err != nil {
		t.Errorf("a rotating bot token (xoxe.xoxb-…) refused: %v", err)
	}
	c = mustLoad(t, "slack: {token: xoxe-1-abc}\n")
	if err := c.RequireToken(); err == nil || !strings.Contains(err.Error(), "refresh token") {
		t.Errorf("a refresh token as slack.token: %v, want refused as a refresh token", err)
	}
}
