package config

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// writeConfig writes content to slackpoll.yaml in a new temporary directory.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "slackpoll.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustLoad(t *testing.T, content string) *Config {
	t.Helper()
	c, err := Load(writeConfig(t, content))
	if err != nil {
		t.Fatalf("Load: %v\n%s", err, content)
	}
	return c
}

func TestLoadKeepsDefaultsForMissingKeys(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "")
	c := mustLoad(t, "tick:\n  interval: 30s\nbudget:\n  reactions_calls: 0\nconversations: [C0123456789]\nslack:\n  rates: {users.info: 10}\n")
	want := documented()
	want.Tick.Interval = Duration(30 * time.Second)
	want.Budget.ReactionsCalls = 0
	want.Conversations = []string{"C0123456789"}
	want.Slack.Rates = map[string]float64{"users.info": 10}
	if got := plain(c); !equal(got, want) {
		t.Errorf("got\n%#v\nwant\n%#v", got, want)
	}
	if c.File() == "" || filepath.Base(c.File()) != "slackpoll.yaml" {
		t.Errorf("File() = %q", c.File())
	}
}

func TestLoadEmptyAndNullValues(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "")
	for _, content := range []string{"", "# only a comment\n", "slack:\ntick:\n  interval:\n", "---\n"} {
		c := mustLoad(t, content)
		if got := plain(c); !equal(got, documented()) {
			t.Errorf("%q: got %#v", content, got)
		}
	}
}

func TestExpansion(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-default")
	t.Setenv("DATA", "/var/lib/slackpoll")
	t.Setenv("PAGES", "3")
	t.Setenv("EVERY", "2m")
	t.Setenv("CHAN", "C0123456789")
	t.Setenv("SLACKPOLL_TEST_UNSET", "")
	os.Unsetenv("SLACKPOLL_TEST_UNSET") // restored by t.Setenv's cleanup
	c := mustLoad(t, `
slack:
  token: ${SLACKPOLL_TEST_UNSET}
store:
  path: "${DATA}/db-${PAGES}.bolt"
budget:
  history_calls: ${PAGES}
tick:
  interval: ${EVERY}
conversations: ["${CHAN}", "D${PAGES}A"]
http:
  listen: ${SLACKPOLL_TEST_UNSET}
`)
	if c.Slack.Token.IsSet() {
		t.Errorf("unset variable: token = %v set, want empty (not the default)", c.Slack.Token)
	}
	if c.Store.Path != "/var/lib/slackpoll/db-3.bolt" {
		t.Errorf("store.path = %q", c.Store.Path)
	}
	if c.Budget.HistoryCalls != 3 || c.Tick.Interval.D() != 2*time.Minute {
		t.Errorf("typed expansion: pages %d interval %v", c.Budget.HistoryCalls, c.Tick.Interval)
	}
	if strings.Join(c.Conversations, ",") != "C0123456789,D3A" {
		t.Errorf("conversations = %v", c.Conversations)
	}
	if c.HTTP.Listen != "" {
		t.Errorf("http.listen = %q", c.HTTP.Listen)
	}
	// Only ${NAME} is expanded: $DATA, ${1} and "${ x}" stay as written (and fail validation here).
	_, err := Load(writeConfig(t, "log:\n  format: '$DATA ${1} ${ x}'\n"))
	if err == nil || !strings.Contains(err.Error(), `"$DATA ${1} ${ x}" is not allowed`) {
		t.Errorf("non-variable text: %v", err)
	}
}

func TestExpansionCannotInjectStructure(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "")
	for _, inj := range []string{
		"x\nfoo: bar",
		"x\nslack:\n  api_url: http://evil.example/\n",
		"\"\n  api_url: http://evil.example/\nfoo: [1",
		"'}\ndiscover: member\n#",
		"{a: 1}",
		"*alias",
		"x # comment",
	} {
		t.Setenv("INJ", inj)
		for _, content := range []string{
			"store:\n  path: ${INJ}\n",
			"store:\n  path: \"${INJ}\"\n",
			"store: {path: '${INJ}'}\n",
			"store:\n  path: |\n    ${INJ}\n",
		} {
			c := mustLoad(t, content)
			want := documented()
			want.Store.Path = inj
			if strings.Contains(content, "|") {
				want.Store.Path += "\n"
			}
			want.Store.Path = filepath.Clean(want.Store.Path) // joined to the config's directory
			if got := plain(c); !equal(got, want) {
				t.Errorf("INJ=%q in %q: got\n%s", inj, content, c)
			}
		}
	}
	t.Setenv("INJ3", "C0123456789, C0AAAAAAA]\ndiscover: member #")
	_, err := Load(writeConfig(t, "conversations: ['${INJ3}']\n"))
	var e *Error
	if !errors.As(err, &e) || e.Key != "conversations[0]" || strings.Contains(err.Error(), "\n") {
		t.Errorf("INJ3: want one error about conversations[0], got %v", err)
	}
	// Keys are never expanded.
	t.Setenv("K", "discover")
	_, err = Load(writeConfig(t, "${K}: member\n"))
	if err == nil || !strings.Contains(err.Error(), `unknown key "${K}"`) {
		t.Errorf("expanded key: %v", err)
	}
}

func TestUnknownKeys(t *testing.T) {
	for _, tc := range []struct{ content, want string }{
		{"tick:\n  interval: 1m\n\n\n\n\n  intervall: 2m\n",
			`slackpoll.yaml: line 7: unknown key "tick.intervall" (known keys under tick: interval, soft_deadline)`},
		{"# c\nslak:\n  token: x\n",
			`slackpoll.yaml: line 2: unknown key "slak" (known top-level keys: slack, store, conversations, discover, tick, budget, tracking, window, users, http, changes, webhooks, projection, mcp, log, workspaces, install, shard)`},
		{"slack: {token: x, rate: 3}\n", `line 1: unknown key "slack.rate" (known keys under slack: token, api_url, rate_profile, rates, request_timeout, client_id, client_secret)`},
		{"http:\n  listen: ''\n  listen: ':1'\n", `line 3: key "http.listen" appears twice (first on line 2)`},
		{"slack:\n  rates:\n    users.info: 1\n    users.info: 2\n", `line 4: "users.info" appears twice in slack.rates (first on line 3)`},
		{"log: {<<: {level: info}}\n", `unknown key "log.<<"`},
	} {
		_, err := Load(writeConfig(t, tc.content))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %s", tc.content, err, tc.want)
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: error does not match ErrInvalid", tc.content)
		}
	}
}

func TestAnchorsAndAliases(t *testing.T) {
	c := mustLoad(t, "tick:\n  interval: &d 2m\n  soft_deadline: *d\n")
	if c.Tick.SoftDeadline.D() != 2*time.Minute {
		t.Errorf("alias: %v", c.Tick.SoftDeadline)
	}
}

func TestLoadFileErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := Load(missing)
	if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, ErrInvalid) {
		t.Errorf("missing file: %v", err)
	}
	if err == nil || !strings.HasPrefix(err.Error(), missing+": cannot read config file: no such file") || !strings.Contains(err.Error(), "SLACKPOLL_CONFIG") {
		t.Errorf("missing file message: %v", err)
	}
	for content, want := range map[string]string{
		"slack: [\n":   "slackpoll.yaml: not valid YAML: line",
		"hello\n":      `the file must be a mapping with the keys slack, store,`,
		"- a\n- b\n":   `the file must be a mapping with the keys`,
		"tick: 1m\n":   `line 1: tick must be a mapping with the keys interval, soft_deadline, not "1m"`,
		"\tslack: 1\n": "not valid YAML",
	} {
		_, err := Load(writeConfig(t, content))
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: got %v, want %q", content, err, want)
		}
	}
}

func TestLoadEnvOrDefault(t *testing.T) {
	t.Setenv(EnvConfig, "")
	if got := LoadEnvOrDefault(""); got != "slackpoll.yaml" {
		t.Errorf("no flag, no env: %q", got)
	}
	t.Setenv(EnvConfig, "/etc/slackpoll.yaml")
	if got := LoadEnvOrDefault(""); got != "/etc/slackpoll.yaml" {
		t.Errorf("env: %q", got)
	}
	if got := LoadEnvOrDefault("my.yaml"); got != "my.yaml" {
		t.Errorf("flag: %q", got)
	}
}

// A config file written for the release before budget.history_calls (that release's
// whole default file, with the old budget keys) loads: the renamed key's value is
// taken as the new key's, the removed key is ignored, and each is a warning naming
// what to write instead.
func TestAConfigOfThePreviousReleaseLoadsWithWarnings(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-test")
	old, err := os.ReadFile("testdata/previous-release.yaml")
	if err != nil {
		t.Fatal(err)
	}
	old = bytes.Replace(old, []byte("history_pages: 8"), []byte("history_pages: 7"), 1)
	c, err := Load(writeConfig(t, string(old)))
	if err != nil {
		t.Fatalf("a config of the previous release fails to load: %v", err)
	}
	if c.Budget.HistoryCalls != 7 {
		t.Errorf("budget.history_calls = %d, want 7 from budget.history_pages", c.Budget.HistoryCalls)
	}
	var got []string
	for _, w := range c.Warnings() {
		got = append(got, w.String())
	}
	want := []string{
		"line 82: budget.history_pages: renamed to budget.history_calls: its value is used as budget.history_calls; write budget.history_calls instead",
		"line 88: budget.tail_fetches: no longer used and ignored: remove it",
	}
	if len(got) != len(want) {
		t.Fatalf("warnings %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("warning %q lacks %q", got[i], want[i])
		}
	}
}

// The old key's value is checked as the new key's, and errors name the key as
// written; setting both names is an error, not a silent choice.
func TestRenamedKeyErrors(t *testing.T) {
	for content, want := range map[string]string{
		"budget:\n  history_pages: lots\n":                       `line 2: budget.history_pages: "lots" is not a whole number`,
		"budget:\n  history_pages: -1\n":                         "budget.history_calls",
		"budget:\n  history_pages: 8\n  history_calls: 9\n":      "line 2: both budget.history_pages (line 2) and the key it was renamed to, history_calls, are set: remove budget.history_pages",
		"budget:\n  history_calls: 9\n  history_pages: 8\n":      "line 3: both budget.history_pages (line 3)",
		"budget:\n  tail_fetches: {not: a number}\n  bogus: 1\n": `unknown key "budget.bogus"`,
	} {
		_, err := Load(writeConfig(t, content))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to contain %q", content, err, want)
		}
	}
}

// Every entry of the table names a key that no longer exists, and a renamed one a key
// that does, in the same mapping; a list index in a key is written "[]".
func TestKeyChangesNameRealKeys(t *testing.T) {
	known := map[string]bool{}
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		for t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer {
			if t.Kind() == reflect.Slice {
				path += "[]"
			}
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for _, f := range yamlFields(t) {
			p := join(path, f.name)
			known[p] = true
			walk(t.Field(f.index).Type, p)
		}
	}
	walk(reflect.TypeFor[Config](), "")
	for _, kc := range keyChanges {
		if known[kc.key] {
			t.Errorf("%s is still a key of Config: it cannot be renamed or removed", kc.key)
		}
		if kc.note == "" {
			t.Errorf("%s: no note for the operator", kc.key)
		}
		if kc.to == "" {
			continue
		}
		if !known[kc.to] {
			t.Errorf("%s: renamed to %s, which is not a key of Config", kc.key, kc.to)
		}
		if parent(kc.key) != parent(kc.to) {
			t.Errorf("%s: renamed to %s in another mapping; the decoder reads a new name in the same mapping only", kc.key, kc.to)
		}
	}
}

func parent(key string) string {
	if i := strings.LastIndex(key, "."); i >= 0 {
		return key[:i]
	}
	return ""
}

func TestRelativeStorePathIsInTheConfigFilesDirectory(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	t.Chdir(other) // a command run from elsewhere (cron, a second terminal, systemd)
	for content, want := range map[string]string{
		"":                               filepath.Join(dir, "slackpoll.db"),
		"store: {path: data/sp.db}\n":    filepath.Join(dir, "data", "sp.db"),
		"store: {path: ../sp.db}\n":      filepath.Join(filepath.Dir(dir), "sp.db"),
		"store: {path: /var/lib/x.db}\n": "/var/lib/x.db",
	} {
		p := filepath.Join(dir, "slackpoll.yaml")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		if c.Store.Path != want {
			t.Errorf("%q: store.path = %s, want %s", content, c.Store.Path, want)
		}
	}
	// A config named relative to the working directory resolves from there.
	if err := os.WriteFile(filepath.Join(other, "rel.yaml"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load("rel.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(other, "slackpoll.db"); c.Store.Path != want {
		t.Errorf("config rel.yaml: store.path = %s, want %s", c.Store.Path, want)
	}
}
