package badinput

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackpoll/slackpoll/internal/cli"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// cliWorld is a fake Slack on loopback and a store that `slackpoll once` filled from it.
type cliWorld struct {
	fake  *slackfake.Server
	url   string // the fake's API base URL, without the trailing "/"
	store string
	convs []string
}

func newCLIWorld(t *testing.T) *cliWorld {
	t.Helper()
	fake := slackfake.New(slackfake.Options{OmitBlocks: true})
	slackfake.Generate(fake, 3, slackfake.GenSize{Conversations: 7, Messages: 100, Users: 6})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	w := &cliWorld{fake: fake, url: srv.URL + "/api", store: filepath.Join(t.TempDir(), "slackpoll.db"), convs: fake.ConversationIDs()}
	if code, _, stderr := w.run(t, w.config(t, ""), "once"); code != cli.ExitOK {
		t.Fatalf("once against the fake: exit %d\n%s", code, stderr)
	}
	return w
}

// config writes a config file: a working one for this world with extra YAML
// appended (a key given twice makes YAML fail, so cases replace whole sections
// through the replace markers).
func (w *cliWorld) config(t *testing.T, yaml string) string {
	t.Helper()
	var rates []string
	for _, m := range rm.Methods() {
		rates = append(rates, m+": 6000")
	}
	slack := fmt.Sprintf("slack:\n  token: %q\n  api_url: %q\n  rates: {%s}\n", w.fake.Token(), w.url+"/", strings.Join(rates, ", "))
	store := fmt.Sprintf("store:\n  path: %q\n", w.store)
	if s, ok := strings.CutPrefix(yaml, "slack:\n"); ok {
		slack, yaml = "slack:\n"+s, ""
	}
	if s, ok := strings.CutPrefix(yaml, "store:\n"); ok {
		store, yaml = "store:\n"+s, ""
	}
	text := slack + store + fmt.Sprintf("conversations: [%s]\n", strings.Join(w.convs, ", ")) + yaml
	path := filepath.Join(t.TempDir(), "slackpoll.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// run runs `slackpoll <cmd> --config cfg` with an empty environment.
func (w *cliWorld) run(t *testing.T, cfg string, cmd ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), append(cmd, "--config", cfg), cli.Env{
		Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }})
	return code, out.String(), errOut.String()
}

// export is the store's export through the CLI.
func (w *cliWorld) export(t *testing.T) string {
	t.Helper()
	code, out, stderr := w.run(t, w.config(t, ""), "export")
	if code != cli.ExitOK || out == "" {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	return out
}

// TestBadConfigs runs commands with bad configurations: each exits with the status of
// README, "Commands" and a message naming the problem, and the store is left as it was.
func TestBadConfigs(t *testing.T) {
	w := newCLIWorld(t)
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		cmd   string
		yaml  string
		code  int
		wants []string // in stderr
	}{
		{"unknown key", "once", "slack:\n  tokn: xoxb-1\n", cli.ExitUsage, []string{"slack.tokn"}},
		{"unknown section", "once", "ticks:\n  interval: 1m\n", cli.ExitUsage, []string{"ticks"}},
		{"bad duration", "once", "tick:\n  interval: 5 minutes\n", cli.ExitUsage, []string{"tick.interval", "5 minutes"}},
		{"negative duration", "once", "tick:\n  soft_deadline: -4m\n", cli.ExitUsage, []string{"tick.soft_deadline"}},
		{"duration is a number", "once", "window:\n  bulk: 72\n", cli.ExitUsage, []string{"window.bulk"}},
		{"budget is a string", "once", "budget:\n  history_pages: lots\n", cli.ExitUsage, []string{"budget.history_pages"}},
		{"unknown rate method", "once", "slack:\n  token: xoxb-1\n  rates: {chat.postMessage: 10}\n", cli.ExitUsage, []string{"chat.postMessage"}},
		{"unknown rate profile", "once", "slack:\n  token: xoxb-1\n  rate_profile: premium\n", cli.ExitUsage, []string{"slack.rate_profile", "premium"}},
		{"missing token for run", "run", "slack:\n  api_url: https://slack.com/api/\n", cli.ExitUsage, []string{"slack.token", "SLACK_BOT_TOKEN"}},
		{"missing token for once", "once", "slack:\n  token: ${SLACK_BOT_TOKEN}\n", cli.ExitUsage, []string{"slack.token", "SLACK_BOT_TOKEN"}},
		{"api_url without a scheme", "once", "slack:\n  token: xoxb-1\n  api_url: slack.com/api/\n", cli.ExitUsage, []string{"slack.api_url"}},
		{"not YAML", "once", "conversations: [C1, \n", cli.ExitUsage, []string{"slackpoll.yaml"}},
		{"http.token empty after ${VAR} expansion", "status", "http:\n  listen: 127.0.0.1:0\n  token: ${SLACKPOLL_TEST_UNSET_HTTP_TOKEN}\n", cli.ExitUsage,
			[]string{"http.token", "SLACKPOLL_TEST_UNSET_HTTP_TOKEN", "empty"}},
		{"slack.token tagged !!int", "once", "slack:\n  token: !!int " + w.fake.Token() + "\n", cli.ExitUsage, []string{"slack.token"}},
		{"http.token tagged !!bool", "status", "http:\n  token: !!bool " + w.fake.Token() + "\n", cli.ExitUsage, []string{"http.token"}},
		{"rate too small to represent", "once", "slack:\n  token: xoxb-1\n  rates: {conversations.history: 1e-9}\n", cli.ExitUsage, []string{"slack.rates.conversations.history", "1e-09"}},
		{"tick.interval under a second", "once", "tick:\n  interval: 1ms\n", cli.ExitUsage, []string{"tick.interval", "1s"}},
		{"http api_url to another host", "once", "slack:\n  token: xoxb-1\n  api_url: http://slack.example.com/api/\n", cli.ExitUsage, []string{"slack.api_url", "https://"}},
		{"config file over the size limit", "status", "# " + strings.Repeat("x", 2<<20) + "\n", cli.ExitUsage, []string{"larger than"}},
		{"unwritable store path", "once", "store:\n  path: " + filepath.Join(notADir, "slackpoll.db") + "\n", cli.ExitRuntime, []string{notADir}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := w.export(t)
			code, _, stderr := w.run(t, w.config(t, c.yaml), c.cmd)
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s", code, c.code, stderr)
			}
			for _, want := range c.wants {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not name %q:\n%s", want, stderr)
				}
			}
			t.Logf("exit %d: %s", code, strings.SplitN(stderr, "\n", 2)[0])
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, w.fake.Token()) {
				t.Errorf("stderr shows a panic or the token:\n%s", stderr)
			}
			if after := w.export(t); after != before {
				t.Error("the store changed")
			}
		})
	}
}

// An api_url without the trailing "/" slack-go needs is fixed up, not refused: once
// reads the workspace through it.
func TestAPIURLWithoutSlashWorks(t *testing.T) {
	w := newCLIWorld(t)
	w.fake.ResetRequests()
	cfg := w.config(t, fmt.Sprintf("slack:\n  token: %q\n  api_url: %q\n  rates: {conversations.history: 6000, conversations.replies: 6000, conversations.info: 6000, users.info: 6000}\n", w.fake.Token(), w.url))
	code, _, stderr := w.run(t, cfg, "once")
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	read := 0
	for _, r := range w.fake.Requests() {
		if r.Method == rm.MethodHistory && r.Status == 200 && r.Error == "" {
			read++
		}
	}
	if read == 0 {
		t.Fatalf("no history page read through api_url %s", w.url)
	}
}
