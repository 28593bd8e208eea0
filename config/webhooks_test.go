package config

import (
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
	if w.Name != "app" || w.Secret.Reveal() != "shh-its-a-secret" || len(w.Kinds) != 2 || w.Own == nil || *w.Own || w.Timeout.D() != 5*time.Second || w.Lease.D() != time.Minute || w.MaxAttempts != 10 {
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
