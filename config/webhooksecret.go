package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// WebhookSecretPrefix marks a Standard Webhooks secret: "whsec_" then the key in
// standard base64 (https://www.standardwebhooks.com/, "Signature scheme").
const WebhookSecretPrefix = "whsec_"

// Key lengths a whsec_ secret may decode to: the Standard Webhooks spec asks for 24
// to 64 bytes.
const (
	MinWebhookKeyLen = 24
	MaxWebhookKeyLen = 64
)

// Secrets are one or more secrets of one key, written as one value (secret: X) or as
// a list (secret: [X, Y]) while one replaces another. Each prints as a Secret does.
type Secrets []Secret

// IsSet reports whether there is at least one secret and none is empty.
func (s Secrets) IsSet() bool {
	if len(s) == 0 {
		return false
	}
	for _, x := range s {
		if !x.IsSet() {
			return false
		}
	}
	return true
}

// WebhookKey is the HMAC key a webhook secret stands for.
type WebhookKey struct {
	// Key is what the HMAC is keyed with: a whsec_ secret's decoded bytes, or a
	// plain secret's own bytes.
	Key []byte
	// Plain is set for a secret without the whsec_ prefix, the form earlier releases
	// took: a receiver verifies it with a Standard Webhooks library's raw-key form, or
	// as "whsec_" + base64 of the secret, which names the same key.
	Plain bool
}

// ParseWebhookSecret returns the key of a webhook secret. A whsec_ secret must decode
// (standard base64, padding optional) to MinWebhookKeyLen..MaxWebhookKeyLen bytes; any
// other non-empty value is a plain secret, used as it is. Errors never show the
// secret.
func ParseWebhookSecret(s Secret) (WebhookKey, error) {
	v := s.Reveal()
	if v == "" {
		return WebhookKey{}, errors.New("is empty")
	}
	enc, ok := strings.CutPrefix(v, WebhookSecretPrefix)
	if !ok {
		return WebhookKey{Key: []byte(v), Plain: true}, nil
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(enc)
	}
	switch {
	case err != nil:
		return WebhookKey{}, errors.New("starts with whsec_ but the rest is not standard base64: " + newSecretHint)
	case len(key) < MinWebhookKeyLen || len(key) > MaxWebhookKeyLen:
		return WebhookKey{}, fmt.Errorf("is a whsec_ secret of %d bytes: want %d to %d (%s)", len(key), MinWebhookKeyLen, MaxWebhookKeyLen, newSecretHint)
	}
	return WebhookKey{Key: key}, nil
}

// newSecretHint says how to make a secret.
const newSecretHint = `make one with: echo "whsec_$(head -c 32 /dev/urandom | base64)"`
