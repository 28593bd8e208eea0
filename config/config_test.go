package config

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// documented is config/slackpoll.yaml with an empty $SLACK_BOT_TOKEN.
func documented() Config {
	return Config{
		Slack: Slack{
			Token:          "",
			APIURL:         "https://slack.com/api/",
			RateProfile:    "non_marketplace",
			Rates:          map[string]float64{},
			RequestTimeout: Duration(30 * time.Second),
		},
		Store:         Store{Path: "slackpoll.db"},
		Conversations: []string{},
		Discover:      "",
		Tick:          Tick{Interval: Duration(time.Minute), SoftDeadline: Duration(4 * time.Minute)},
		Budget:        Budget{HistoryCalls: 250, RepliesCalls: 250, UsersInfoCalls: 100, ReactionsCalls: 250},
		Tracking:      Tracking{WatchedShare: 0.5},
		Window:        Window{Bulk: Duration(72 * time.Hour)},
		Users:         Users{CacheTTL: Duration(168 * time.Hour)},
		HTTP:          HTTP{Listen: "", Token: "", AllowedHosts: []string{}},
		Changes:       Changes{Retention: Duration(168 * time.Hour)},
		Webhooks:      []Webhook{},
		Projection:    Projection{SQLite: ProjectionSQLite{Enabled: true}, Postgres: ProjectionPostgres{Schema: "slackpoll"}},
		MCP:           MCP{Conversations: []string{}},
		Log:           Log{Level: "info", Format: "text"},
		Workspaces:    []Workspace{},
	}
}

// plain returns c without its source information, for comparisons.
func plain(c *Config) Config {
	x := *c
	// Load makes a relative store.path absolute in the config file's directory:
	// compare it as written.
	if x.src != nil {
		if dir, err := filepath.Abs(filepath.Dir(x.src.file)); err == nil {
			if rel, ok := strings.CutPrefix(x.Store.Path, dir+string(filepath.Separator)); ok {
				x.Store.Path = rel
			}
		}
	}
	x.src = nil
	return x
}

func TestDefaultIsDocumented(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "")
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := plain(c), documented(); !reflect.DeepEqual(got, want) {
		t.Errorf("Default() =\n%#v\nwant\n%#v", got, want)
	}
	if c.File() != "" {
		t.Errorf("File() = %q, want empty", c.File())
	}
	if err := c.RequireToken(); err == nil {
		t.Error("RequireToken with empty SLACK_BOT_TOKEN: want error")
	}
}

func TestDefaultTokenFromEnvironment(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-from-env")
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Slack.Token.Reveal(); got != "xoxb-from-env" {
		t.Errorf("token = %q, want xoxb-from-env", got)
	}
	if err := c.RequireToken(); err != nil {
		t.Errorf("RequireToken: %v", err)
	}
}

func TestEmbeddedIsFileOnDisk(t *testing.T) {
	disk, err := os.ReadFile("slackpoll.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(DefaultYAML(), disk) {
		t.Error("DefaultYAML() differs from config/slackpoll.yaml")
	}
	b := DefaultYAML()
	b[0] ^= 0xff
	if bytes.Equal(b, DefaultYAML()) {
		t.Error("DefaultYAML() does not return a copy")
	}
}

// keyPaths lists the dotted key paths of a YAML document, not descending
// into slack.rates (whose keys are method names, not fields).
func keyPaths(t *testing.T, data []byte) []string {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		if n.Kind != yaml.MappingNode || path == "slack.rates" {
			return
		}
		for i := 0; i < len(n.Content); i += 2 {
			p := join(path, n.Content[i].Value)
			out = append(out, p)
			walk(n.Content[i+1], p)
		}
	}
	walk(doc.Content[0], "")
	slices.Sort(out)
	return out
}

// fieldPaths lists the YAML key paths of the Config type.
func fieldPaths(t reflect.Type, path string) []string {
	var out []string
	for _, f := range yamlFields(t) {
		p := join(path, f.name)
		out = append(out, p)
		if ft := t.Field(f.index).Type; ft.Kind() == reflect.Struct {
			out = append(out, fieldPaths(ft, p)...)
		}
	}
	if path == "" {
		slices.Sort(out)
	}
	return out
}

func TestEmbeddedKeysAreExactlyConfigFields(t *testing.T) {
	inFile := keyPaths(t, DefaultYAML())
	inType := fieldPaths(reflect.TypeFor[Config](), "")
	if !slices.Equal(inFile, inType) {
		t.Errorf("keys in slackpoll.yaml:\n%v\nfields of Config:\n%v", inFile, inType)
	}
	for _, k := range []string{"slack.token", "slack.api_url", "slack.rate_profile", "slack.rates",
		"slack.request_timeout", "store.path", "conversations", "discover", "tick.interval",
		"tick.soft_deadline", "budget.history_calls", "budget.replies_calls",
		"budget.users_info_calls", "budget.reactions_calls", "window.bulk", "users.cache_ttl",
		"http.listen", "http.token", "log.level", "log.format"} {
		if !slices.Contains(inFile, k) {
			t.Errorf("documented key %s missing from slackpoll.yaml", k)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "")
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	c.Conversations = []string{"C0123456789", "D0AAAAAAA"}
	c.Slack.Rates = map[string]float64{"conversations.history": 0.5}
	c.Tick.Interval = Duration(90 * time.Second)
	out := c.String()
	path := writeConfig(t, out)
	back, err := Load(path)
	if err != nil {
		t.Fatalf("Load(String()): %v\n%s", err, out)
	}
	if !reflect.DeepEqual(plain(back), plain(c)) {
		t.Errorf("round trip changed the config:\n%s\nback:\n%s", c, back)
	}
	if got := keyPaths(t, []byte(out)); !slices.Equal(got, keyPaths(t, DefaultYAML())) {
		t.Errorf("String() keys %v differ from slackpoll.yaml", got)
	}
}

func TestDurationString(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Minute: "1m", 72 * time.Hour: "72h", 90 * time.Minute: "1h30m",
		30 * time.Second: "30s", 1500 * time.Millisecond: "1.5s", 0: "0s",
		time.Hour + time.Second: "1h0m1s",
	} {
		if got := Duration(d).String(); got != want {
			t.Errorf("Duration(%v).String() = %q, want %q", time.Duration(d), got, want)
		}
		back, err := ParseDuration(want)
		if err != nil || back.D() != d {
			t.Errorf("ParseDuration(%q) = %v, %v", want, back.D(), err)
		}
	}
}

func TestRates(t *testing.T) {
	if got := Profiles(); !slices.Equal(got, []string{"internal", "non_marketplace"}) {
		t.Errorf("Profiles() = %v", got)
	}
	nm, _ := ProfileRates(ProfileNonMarketplace)
	in, _ := ProfileRates(ProfileInternal)
	if nm[MethodConversationsHistory] != 1 || nm[MethodConversationsReplies] != 1 {
		t.Errorf("non_marketplace history/replies = %v/%v, want 1/1", nm[MethodConversationsHistory], nm[MethodConversationsReplies])
	}
	if in[MethodConversationsHistory] != 50 || in[MethodConversationsReplies] != 50 {
		t.Errorf("internal history/replies = %v, want 50", in)
	}
	for _, p := range []map[string]float64{nm, in} {
		for _, m := range Methods() {
			if !(p[m] > 0) {
				t.Errorf("profile has no rate for %s: %v", m, p)
			}
		}
	}
	s := Slack{RateProfile: ProfileNonMarketplace, Rates: map[string]float64{MethodConversationsHistory: 20}}
	r := s.RatesPerMinute()
	if r[MethodConversationsHistory] != 20 || r[MethodConversationsReplies] != 1 || len(r) != len(Methods()) {
		t.Errorf("RatesPerMinute() = %v", r)
	}
	r[MethodUsersInfo] = 1
	if again, _ := ProfileRates(ProfileNonMarketplace); again[MethodUsersInfo] != 100 {
		t.Error("RatesPerMinute shares the profile map")
	}
}
