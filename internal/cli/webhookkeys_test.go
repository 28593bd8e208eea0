package cli

import (
	"encoding/base64"
	"testing"

	"github.com/slackpoll/slackpoll/config"
)

// A webhook's secrets become one signing key each, in order; the first plain secret
// also signs the deprecated headers, and a webhook of whsec_ secrets alone gets none.
func TestWebhookKeysSignWithEverySecret(t *testing.T) {
	key := []byte("twenty-four bytes of key")
	whsec := config.Secret("whsec_" + base64.StdEncoding.EncodeToString(key))
	keys, legacy := webhookKeys(config.Secrets{whsec, "plain-old"})
	if len(keys) != 2 || string(keys[0]) != string(key) || string(keys[1]) != "plain-old" || string(legacy) != "plain-old" {
		t.Errorf("keys %q, legacy %q; want the whsec_ key then the plain secret's bytes, legacy the plain one", keys, legacy)
	}
	if keys, legacy := webhookKeys(config.Secrets{whsec}); len(keys) != 1 || legacy != nil {
		t.Errorf("whsec_ alone: keys %q, legacy %q; want one key and no deprecated headers", keys, legacy)
	}
}
