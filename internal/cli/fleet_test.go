package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/status"
	"github.com/slackpoll/slackpoll/internal/workspace"
)

// fleetConfig writes a config of many workspaces (store.dir) polling the fake at
// apiURL, one entry per "team_id=token", with the read API on a free port.
func fleetConfig(t *testing.T, apiURL string, teams ...string) (cfg, base, dir string) {
	t.Helper()
	dir = t.TempDir()
	addr := freeAddr(t)
	var b strings.Builder
	fmt.Fprintf(&b, "store:\n  dir: %q\nhttp:\n  listen: %q\n  token: api-tok\ntick:\n  interval: 1h\n", filepath.Join(dir, "stores"), addr)
	fmt.Fprintf(&b, "slack:\n  api_url: %q\n  rates: {conversations.history: 6000, conversations.replies: 6000, conversations.info: 6000, users.info: 6000, auth.test: 6000, users.conversations: 6000}\n", apiURL)
	b.WriteString("workspaces:\n")
	for _, tt := range teams {
		team, tok, _ := strings.Cut(tt, "=")
		fmt.Fprintf(&b, "  - {team_id: %s, token: %q, conversations: [C0GENERAL]}\n", team, tok)
	}
	cfg = filepath.Join(dir, "slackpoll.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, "http://" + addr, dir
}

// TestFleetARejectedWorkspaceLeavesTheOthers runs two workspaces in one daemon, one
// with a token Slack rejects: that one is listed token_rejected with the reason and
// its API answers 503, while the other polls and serves its API under its prefix;
// the routes without a team_id refuse to guess; the daemon exits 0 on SIGTERM.
func TestFleetARejectedWorkspaceLeavesTheOthers(t *testing.T) {
	fake := slackfake.New(slackfake.Options{})
	if err := fake.AddConversation(slackfake.PublicChannel("C0GENERAL", "general")); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Post("C0GENERAL", fake.BotUserID(), "hello"); err != nil {
		t.Fatal(err)
	}
	slack := httptest.NewServer(fake)
	t.Cleanup(slack.Close)
	good := fake.TeamID()
	cfg, base, dir := fleetConfig(t, slack.URL+"/api/", good+"="+fake.Token(), "T0REVOKED=xoxb-not-a-valid-token")

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	var stderr string
	go func() {
		code, _, errOut := runCLI(ctx, "run", "--config", cfg)
		stderr = errOut
		done <- code
	}()
	list := func() map[string]workspace.Status {
		code, b := get(base+"/v1/workspaces", "api-tok")
		var body struct{ Workspaces []workspace.Status }
		if code != http.StatusOK || json.Unmarshal(b, &body) != nil {
			return nil
		}
		out := map[string]workspace.Status{}
		for _, s := range body.Workspaces {
			out[s.TeamID] = s
		}
		return out
	}
	waitFor(t, "the good workspace's first tick and the bad one's rejection", func() bool {
		l := list()
		return l[good].LastTick != nil && l["T0REVOKED"].State == workspace.TokenRejected
	})
	l := list()
	if st := l[good]; st.State != workspace.Active || st.Source != workspace.SourceConfig || st.Store != filepath.Join(dir, "stores", good+".db") {
		t.Errorf("good workspace = %+v, want active, from the config, in <store.dir>/%s.db", st, good)
	}
	if st := l["T0REVOKED"]; !strings.Contains(st.Reason, "invalid_auth") {
		t.Errorf("rejected workspace's reason = %q, want Slack's invalid_auth", st.Reason)
	}
	code, b := get(base+"/v1/workspaces/"+good+"/v1/status", "api-tok")
	var rep status.Report
	if code != http.StatusOK || json.Unmarshal(b, &rep) != nil || rep.LastTick == nil {
		t.Errorf("GET /v1/workspaces/%s/v1/status = %d %s, want its status report", good, code, b)
	}
	if code, b := get(base+"/v1/workspaces/T0REVOKED/v1/status", "api-tok"); code != http.StatusServiceUnavailable || !strings.Contains(string(b), "token_rejected") {
		t.Errorf("the rejected workspace's API = %d %s, want 503 saying token_rejected", code, b)
	}
	if code, b := get(base+"/v1/status", "api-tok"); code != http.StatusNotFound || !strings.Contains(string(b), "/v1/workspaces/{team_id}/status") {
		t.Errorf("GET /v1/status with two workspaces = %d %s, want 404 pointing at /v1/workspaces/{team_id}/…", code, b)
	}
	if code, _ := get(base+"/v1/workspaces", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("GET /v1/workspaces with a wrong token = %d, want 401", code)
	}
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("run exited %d, want 0; stderr:\n%s", code, stderr)
	}
	if strings.Contains(stderr, fake.Token()) || strings.Contains(stderr, "xoxb-not-a-valid-token") {
		t.Error("the log shows a token")
	}
}
