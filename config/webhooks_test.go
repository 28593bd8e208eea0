package config

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func TestWebhooksDecodeWithTheirFilters(t *testing.T) {
	t.Setenv("HOOK_SECRET", "shh-its-a-secret")
	c := mustLoad(t, `
webhooks:
  - name: app
    url: https://app.internal/events
    secret: ${HOOK_SECRET}
    kinds: [reaction_added, reply_added]
    channels: [C0123456789]
    own: false
    timeout: 5s
`)
	if len(c.Webhooks) != 1 {
		t.Fatalf("webhooks = %+v", c.Webhooks)
	}
	w := c.Webhooks[0]
	if w.Name != "app" || len(w.Secret) != 1 || w.Secret[0].Reveal() != "shh-its-a-secret" || len(w.Kinds) != 2 || w.Own == nil || *w.Own || w.Timeout.D() != 5*time.Second || w.Lease.D() != time.Minute || w.MaxAttempts != 10 {
		t.Errorf("webhook = %+v", w)
	}
	if strings.Contains(c.String(), "shh-its-a-secret") {
		t.Error("the printed config shows the webhook secret")
	}
}

func TestWebhookErrorsNameTheKeyAndHideTheSecret(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"webhooks:\n  - url: https://x/\n    secret: s\n", "webhooks[0].name: is empty"},
		{"webhooks:\n  - name: a\n    url: ftp://user:pw@x/\n    secret: s\n", "webhooks[0].url: is not an http:// or https:// URL"},
		{"webhooks:\n  - name: a\n    url: https://x/\n    secret: s\n    kinds: [reaction]\n", `webhooks[0].kinds[0]: unknown change kind "reaction"`},
		{"webhooks:\n  - name: a\n    url: https://x/\n    secret: s\n  - name: a\n    url: https://y/\n    secret: s\n", `webhooks[1].name: "a" is used twice`},
		{"webhooks:\n  - name: a\n    url: https://x/\n    secret: s\n    retries: 3\n", `unknown key "webhooks[0].retries"`},
		{"webhooks:\n  - name: a\n    url: http://user:pw@hooks.example/in\n    secret: s\n", "webhooks[0].url: would send its user:password unencrypted"},
		{"changes:\n  retention: 0s\n", "changes.retention: 0s is not allowed"},
		// A claim that ends before its POST can: every completion is refused, and the
		// event sent again for ever.
		{"webhooks:\n  - name: a\n    url: https://x/\n    secret: s\n    lease: 10s\n", "webhooks[0].lease: 10s is not longer than webhooks[0].timeout (10s)"},
		{"webhooks:\n  - name: a\n    url: https://x/\n    secret: s\n    timeout: 2m\n", "webhooks[0].lease: 1m0s (the default) is not longer than webhooks[0].timeout (2m0s)"},
		// A claim that ends at once: the deliverer claimed again at once, a core spinning.
		{"webhooks:\n  - name: a\n    url: https://x/\n    secret: s\n    lease: 1ms\n    timeout: 1ms\n", "webhooks[0].lease: 1ms is shorter than 1s"},
	} {
		_, err := Load(writeConfig(t, c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want it to contain %q", c.yaml, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw@") {
			t.Errorf("%q: the error shows the URL's credentials: %v", c.yaml, err)
		}
	}
}

// Only run and once deliver: the read commands load a config whose webhook secret is
// not in their environment; run and once refuse it, saying what to set.
func TestWebhookSecretIsRequiredOnlyToDeliver(t *testing.T) {
	c := mustLoad(t, "webhooks:\n  - name: a\n    url: https://x/\n    secret: ${UNSET_SECRET_VAR}\n")
	err := c.RequireWebhookSecrets()
	if err == nil || !strings.Contains(err.Error(), "webhooks[0].secret: is empty") {
		t.Errorf("RequireWebhookSecrets = %v", err)
	}
	t.Setenv("SET_SECRET_VAR", "s")
	c = mustLoad(t, "webhooks:\n  - name: a\n    url: https://x/\n    secret: ${SET_SECRET_VAR}\n")
	if err := c.RequireWebhookSecrets(); err != nil {
		t.Errorf("RequireWebhookSecrets with the secret set = %v", err)
	}
}

// A webhook's secret is a Standard Webhooks whsec_ secret, or a plain one as earlier
// releases took; a list while one replaces another. A malformed whsec_ secret is an
// error that does not show it.
func TestWebhookSecretsWhsecPlainAndLists(t *testing.T) {
	const key = "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // 24 bytes, base64
	t.Setenv("NEW", "whsec_"+key)
	t.Setenv("OLD", "plain-old-secret")
	c := mustLoad(t, "webhooks:\n  - name: a\n    url: https://x/\n    secret: [\"${NEW}\", \"${OLD}\"]\n")
	ss := c.Webhooks[0].Secret
	if len(ss) != 2 || !ss.IsSet() {
		t.Fatalf("secrets = %v", ss)
	}
	k, err := ParseWebhookSecret(ss[0])
	if want, _ := base64.StdEncoding.DecodeString(key); err != nil || k.Plain || !bytes.Equal(k.Key, want) {
		t.Errorf("whsec_ secret: key %x plain %v err %v, want %x", k.Key, k.Plain, err, want)
	}
	if k, err := ParseWebhookSecret(ss[1]); err != nil || !k.Plain || string(k.Key) != "plain-old-secret" {
		t.Errorf("plain secret: key %q plain %v err %v", k.Key, k.Plain, err)
	}
	if strings.Contains(c.String(), "plain-old") || strings.Contains(c.String(), key) {
		t.Errorf("the printed config shows a secret:\n%s", c)
	}
	for _, tc := range []struct{ secret, want string }{
		{"whsec_not*base64", "webhooks[0].secret starts with whsec_ but the rest is not standard base64"},
		{"whsec_c2hvcnQ=", "webhooks[0].secret is a whsec_ secret of 5 bytes: want 24 to 64"},
		{"[whsec_" + key + ", whsec_c2hvcnQ=]", "webhooks[0].secret[1] is a whsec_ secret of 5 bytes"},
	} {
		_, err := Load(writeConfig(t, "webhooks:\n  - name: a\n    url: https://x/\n    secret: "+tc.secret+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "line 4") {
			t.Errorf("secret %s: err %v, want %q on line 4", tc.secret, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "c2hvcnQ") || strings.Contains(err.Error(), "not*base64")) {
			t.Errorf("the error shows the secret: %v", err)
		}
	}
	c = mustLoad(t, "webhooks:\n  - name: a\n    url: https://x/\n    secret: [\"${NEW}\", \"${UNSET_SECRET_VAR}\"]\n")
	if err := c.RequireWebhookSecrets(); err == nil {
		t.Error("a rotation list with an unset variable is accepted for delivery")
	}
}
