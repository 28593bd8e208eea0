package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

const secretToken = "xoxb-1234-SECRET-abcd"

func TestSecretNeverPrinted(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", secretToken)
	t.Setenv("SLACKPOLL_HTTP_TOKEN", secretToken+"-http")
	c, err := Load(writeConfig(t, "http:\n  token: ${SLACKPOLL_HTTP_TOKEN}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Slack.Token.Reveal() != secretToken || c.HTTP.Token.Reveal() != secretToken+"-http" {
		t.Fatalf("tokens not loaded: %q %q", c.Slack.Token.Reveal(), c.HTTP.Token.Reveal())
	}
	var outputs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10.3s"} {
		outputs = append(outputs,
			fmt.Sprintf(verb, c), fmt.Sprintf(verb, *c), fmt.Sprintf(verb, c.Slack),
			fmt.Sprintf(verb, c.Slack.Token), fmt.Sprintf(verb, c.HTTP))
	}
	outputs = append(outputs, c.String(), fmt.Sprint(c), fmt.Sprintln(*c), c.Slack.Token.String(), c.Slack.Token.GoString())
	j, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	outputs = append(outputs, string(j))
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("x", "token", c.Slack.Token, "cfg", c.Slack)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "token", c.Slack.Token, "http", c.HTTP)
	outputs = append(outputs, buf.String())
	for _, o := range outputs {
		if strings.Contains(o, "SECRET") {
			t.Errorf("secret printed: %s", o)
		}
	}
	if !strings.Contains(c.String(), "token: '[redacted]'") || !strings.Contains(string(j), `"token":"[redacted]"`) {
		t.Errorf("redaction marker missing:\n%s\n%s", c.String(), j)
	}
}

func TestEmptySecretPrintsEmpty(t *testing.T) {
	var s Secret
	if got := fmt.Sprintf("%v|%s|%#v", s, s, s); got != `||""` {
		t.Errorf("empty secret prints %q", got)
	}
}

func TestSecretNotInErrors(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", secretToken+"\n")
	t.Setenv("T", secretToken)
	_, err := Load(writeConfig(t, "http:\n  token: ${T} x\nslack:\n  token:\n    - ${T}\n"))
	if err == nil {
		t.Fatal("want errors for whitespace in tokens")
	}
	msg := err.Error()
	if !strings.Contains(msg, "slack.token: want a string, not a list") || !strings.Contains(msg, "http.token: contains whitespace") {
		t.Errorf("missing token errors: %v", msg)
	}
	if strings.Contains(msg, "SECRET") {
		t.Errorf("secret in errors: %v", msg)
	}
	_, err = Load(writeConfig(t, "tick: {interval: 1m}\n"))
	if err == nil || !strings.Contains(err.Error(), "slack.token: contains whitespace") || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("token with newline from $SLACK_BOT_TOKEN: %v", err)
	}
}

// A webhook URL may carry credentials (user:password, a token in its query, a secret
// in its path, as Slack's and many other incoming-webhook URLs do): `slackpoll config`,
// JSON, fmt and logs show its scheme and host only.
func TestWebhookURLCredentialsNeverPrinted(t *testing.T) {
	c, err := Load(writeConfig(t, "webhooks:\n  - name: app\n    url: https://app:pw-SECRET@hooks.example:8443/in/T0/p-SECRET?token=q-SECRET\n    secret: s\n"))
	if err != nil {
		t.Fatal(err)
	}
	w := c.Webhooks[0]
	if w.URL.Reveal() != "https://app:pw-SECRET@hooks.example:8443/in/T0/p-SECRET?token=q-SECRET" {
		t.Fatalf("URL not loaded: %q", w.URL.Reveal())
	}
	j, _ := json.Marshal(c)
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "url", w.URL, "webhook", w)
	outputs := []string{c.String(), string(j), buf.String(), fmt.Sprintf("%v %+v %#v %s %q", w, w, w, w.URL, w.URL)}
	for _, o := range outputs {
		if strings.Contains(o, "SECRET") {
			t.Errorf("webhook URL credentials printed: %s", o)
		}
	}
	if !strings.Contains(c.String(), "url: https://hooks.example:8443\n") {
		t.Errorf("the redacted URL should still show where it points:\n%s", c.String())
	}
}
