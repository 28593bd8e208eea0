package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func equal(a, b Config) bool { return reflect.DeepEqual(a, b) }

func TestValidationErrors(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "")
	for _, tc := range []struct {
		name, content string
		key           string // Key of the first *Error
		want          []string
	}{
		{"bare number duration", "tick:\n  interval: 5\n", "tick.interval",
			[]string{`slackpoll.yaml: line 2: tick.interval: invalid duration "5": want a number with a unit (ms, s, m, h), e.g. 30s, 1m, 72h`}},
		{"bad duration", "window: {bulk: 3d}\n", "window.bulk", []string{`line 1: window.bulk: invalid duration "3d"`}},
		{"duration as list", "users:\n  cache_ttl: [1h]\n", "users.cache_ttl", []string{`line 2: users.cache_ttl: want a duration such as 30s, 1m or 72h, not a list`}},
		{"zero soft deadline", "tick:\n  soft_deadline: 0s\n", "tick.soft_deadline",
			[]string{`line 2: tick.soft_deadline: 0s is not allowed: want a duration > 0, e.g. 4m`}},
		{"negative soft deadline", "tick: {soft_deadline: -1m}\n", "tick.soft_deadline", []string{`-1m is not allowed: want a duration > 0`}},
		{"zero interval", "tick: {interval: 0}\n", "tick.interval", []string{`tick.interval: 0s is not allowed`}},
		{"zero request timeout", "slack: {request_timeout: 0s}\n", "slack.request_timeout", []string{`slack.request_timeout: 0s is not allowed: want a duration > 0, e.g. 30s`}},
		{"negative budget", "budget:\n  replies_calls: -1\n", "budget.replies_calls",
			[]string{`line 2: budget.replies_calls: -1 is negative: want a whole number >= 0 (calls per tick; 0 = none)`}},
		{"budget not a number", "budget: {history_calls: many}\n", "budget.history_calls", []string{`budget.history_calls: "many" is not a whole number`}},
		{"budget fraction", "budget: {users_info_calls: 1.5}\n", "budget.users_info_calls", []string{`"1.5" is not a whole number`}},
		{"unknown rate profile", "slack:\n  rate_profile: marketplace\n", "slack.rate_profile",
			[]string{`line 2: slack.rate_profile: unknown rate profile "marketplace" (allowed: internal, non_marketplace)`}},
		{"unknown method", "slack:\n  rates:\n    conversations.list: 20\n", "slack.rates",
			[]string{`line 3: unknown method "conversations.list" in slack.rates (allowed: auth.test, conversations.history, conversations.replies, conversations.info, users.info, users.conversations, reactions.get)`}},
		{"zero rate", "slack: {rates: {conversations.history: 0}}\n", "slack.rates.conversations.history",
			[]string{`slack.rates.conversations.history: rate 0 is not allowed: want requests per minute, at least`}},
		{"negative rate", "slack:\n  rates:\n    users.info: -5\n", "slack.rates.users.info", []string{`line 3: slack.rates.users.info: rate -5 is not allowed`}},
		{"infinite rate", "slack: {rates: {users.info: .inf}}\n", "slack.rates.users.info", []string{`rate +Inf is not allowed`}},
		{"rate not a number", "slack: {rates: {users.info: fast}}\n", "slack.rates.users.info", []string{`slack.rates.users.info: "fast" is not a number`}},
		{"rates as list", "slack: {rates: [1]}\n", "slack.rates", []string{`slack.rates: want a mapping of method to requests per minute, e.g. {conversations.history: 20}, not a list`}},
		{"api_url ftp", "slack: {api_url: 'ftp://slack.com/api/'}\n", "slack.api_url",
			[]string{`slack.api_url: "ftp://slack.com/api/" is not an http:// or https:// base URL without query: want e.g. https://slack.com/api/`}},
		{"api_url no scheme", "slack: {api_url: slack.com/api/}\n", "slack.api_url", []string{`"slack.com/api/" is not an http:// or https://`}},
		{"api_url query", "slack: {api_url: 'https://x/api/?a=1'}\n", "slack.api_url", []string{`is not an http:// or https://`}},
		{"log level", "log:\n  level: verbose\n", "log.level", []string{`line 2: log.level: "verbose" is not allowed (allowed: debug, info, warn, error)`}},
		{"log format", "log: {format: JSON}\n", "log.format", []string{`log.format: "JSON" is not allowed (allowed: text, json)`}},
		{"discover", "discover: all\n", "discover", []string{`line 1: discover: "all" is not allowed: want "" (only the listed conversations) or "member"`}},
		{"channel name", "conversations:\n  - C0123456789\n  - general\n", "conversations[1]",
			[]string{`line 3: conversations[1]: "general" is not a Slack conversation ID: want C, G or D followed by uppercase letters and digits, e.g. C0123456789`}},
		{"lowercase id", "conversations: [c0123456789]\n", "conversations[0]", []string{`"c0123456789" is not a Slack conversation ID`}},
		{"user id", "conversations: [U0123456789]\n", "conversations[0]", []string{`"U0123456789" is not a Slack conversation ID`}},
		{"hash name", "conversations: ['#general']\n", "conversations[0]", []string{`"#general" is not a Slack conversation ID`}},
		{"mcp channel name", "mcp:\n  conversations: [C0123456789, general]\n", "mcp.conversations[1]", []string{`line 2: mcp.conversations[1]: "general" is not a Slack conversation ID`}},
		{"mcp listed twice", "mcp:\n  conversations: [D0123456789, D0123456789]\n", "mcp.conversations[1]", []string{`"D0123456789" is listed twice (also mcp.conversations[0])`}},
		{"prefix only", "conversations: [C]\n", "conversations[0]", []string{`"C" is not a Slack conversation ID`}},
		{"duplicate id", "conversations: [C0AAAAAAA, G0BBBBBBB, C0AAAAAAA]\n", "conversations[2]",
			[]string{`conversations[2]: "C0AAAAAAA" is listed twice (also conversations[0])`}},
		{"conversations scalar", "conversations: C0123456789\n", "conversations", []string{`conversations: want a list of conversation IDs, e.g. [C0123456789, G0123456789], not "C0123456789"`}},
		{"listen port only", "http:\n  listen: \"8089\"\n", "http.listen",
			[]string{`line 2: http.listen: "8089" is not host:port with a port number: want e.g. 127.0.0.1:8089 or :8089, or "" for no HTTP server`}},
		{"listen no port", "http: {listen: localhost}\n", "http.listen", []string{`"localhost" is not host:port`}},
		{"listen named port", "http: {listen: 'localhost:http'}\n", "http.listen", []string{`"localhost:http" is not host:port`}},
		{"allowed host with a port", "http: {allowed_hosts: ['slackpoll:8089']}\n", "http.allowed_hosts[0]", []string{`"slackpoll:8089" is not a host name`}},
		{"allowed host wildcard", "http: {allowed_hosts: ['*']}\n", "http.allowed_hosts[0]", []string{`"*" is not a host name`}},
		{"listen big port", "http: {listen: ':70000'}\n", "http.listen", []string{`":70000" is not host:port`}},
		{"empty store path", "store: {path: ''}\n", "store.path", []string{`store.path: must not be empty`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(writeConfig(t, tc.content))
			if err == nil {
				t.Fatalf("no error; config:\n%s", c)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error does not match ErrInvalid: %v", err)
			}
			var e *Error
			if !errors.As(err, &e) || e.Key != tc.key {
				t.Errorf("first *Error key = %q, want %q (%v)", keyOf(e), tc.key, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n  %v\ndoes not contain\n  %s", err, w)
				}
			}
		})
	}
}

func keyOf(e *Error) string {
	if e == nil {
		return "<no *Error>"
	}
	return e.Key
}

func TestAllProblemsReportedTogether(t *testing.T) {
	_, err := Load(writeConfig(t, "tick:\n  interval: 5\nbudget:\n  reactions_calls: -2\nlog:\n  level: loud\nfoo: 1\n"))
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{"line 2: tick.interval", "line 4: budget.reactions_calls", "line 6: log.level", `line 7: unknown key "foo"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in\n%v", w, err)
		}
	}
}

func TestValidValues(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "")
	c := mustLoad(t, `
slack:
  rate_profile: internal
  rates: {auth.test: 0.5, conversations.history: 600, conversations.replies: 1, conversations.info: 2, users.info: 3, users.conversations: 4}
conversations: [C0123456789, G0123456789, D0123456789, C0AAAAAAA]
discover: member
budget: {history_calls: 0, replies_calls: 0, users_info_calls: 0, reactions_calls: 0}
http: {listen: '127.0.0.1:8089'}
log: {level: debug, format: json}
`)
	if c.Slack.RatesPerMinute()["auth.test"] != 0.5 || c.Discover != DiscoverMember {
		t.Errorf("got %s", c)
	}
	for _, l := range []string{":8089", "[::1]:0", "localhost:65535"} {
		mustLoad(t, "http: {listen: '"+l+"'}\n")
	}
	for _, l := range LogLevels {
		mustLoad(t, "log: {level: "+l+"}\n")
	}
}

func TestAPIURLTrailingSlash(t *testing.T) {
	for in, want := range map[string]string{
		"https://slack.com/api/":            "https://slack.com/api/",
		"https://slack.com/api":             "https://slack.com/api/",
		"http://127.0.0.1:8080/api":         "http://127.0.0.1:8080/api/",
		"http://127.0.0.1:8080":             "http://127.0.0.1:8080/",
		"http://127.0.0.1:8080/slack/api//": "http://127.0.0.1:8080/slack/api//",
	} {
		c := mustLoad(t, "slack:\n  api_url: '"+in+"'\n")
		if c.Slack.APIURL != want {
			t.Errorf("api_url %q → %q, want %q", in, c.Slack.APIURL, want)
		}
	}
	c := documented()
	c.Slack.APIURL = "http://localhost"
	if err := c.Validate(); err != nil || c.Slack.APIURL != "http://localhost/" {
		t.Errorf("Validate on a built Config: %v, %q", err, c.Slack.APIURL)
	}
}

func TestValidateBuiltConfig(t *testing.T) {
	c := documented()
	c.Slack.Rates = nil
	c.Budget.HistoryCalls = -1
	err := c.Validate()
	if c.Slack.Rates == nil {
		t.Error("Validate left nil rates")
	}
	if err == nil || err.Error() != "built-in defaults: budget.history_calls: -1 is negative: want a whole number >= 0 (calls per tick; 0 = none)" {
		t.Errorf("err = %v", err)
	}
}

func TestRequireToken(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "")
	c := mustLoad(t, "log: {level: info}\n")
	err := c.RequireToken()
	if err == nil || !errors.Is(err, ErrInvalid) {
		t.Fatalf("RequireToken = %v", err)
	}
	for _, w := range []string{"slackpoll.yaml: slack.token: ", "set SLACK_BOT_TOKEN", "slack.token in the config file"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%v: missing %q", err, w)
		}
	}
	c = mustLoad(t, "slack:\n  token: xoxb-literal\n")
	if err := c.RequireToken(); err != nil {
		t.Errorf("token set: %v", err)
	}
}

// A user or app-level token is refused with what to use instead, before any call:
// Slack answered invalid_auth, which does not say the kind of token is wrong. The
// token itself is never quoted.
func TestRequireTokenRefusesTokensThatAreNotBotTokens(t *testing.T) {
	for _, tok := range []string{"xoxp-1234-5678-abcdef", "xapp-1-A0123-456-abcdef"} {
		t.Setenv("SLACK_BOT_TOKEN", tok)
		c := mustLoad(t, "log: {level: info}\n")
		err := c.RequireToken()
		if err == nil || !errors.Is(err, ErrInvalid) {
			t.Fatalf("RequireToken(%s…) = %v, want a config error", tok[:5], err)
		}
		if !strings.Contains(err.Error(), "slackpoll needs a bot token (xoxb-…)") || strings.Contains(err.Error(), tok) {
			t.Errorf("RequireToken(%s…) = %v, want the bot token asked for, and the token not quoted", tok[:5], err)
		}
	}
}
