package config

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
)

// Redacted is what a non-empty Secret prints as, in every format.
const Redacted = "[redacted]"

// Secret is a credential (the Slack token, the HTTP bearer token). It never
// prints its value: fmt (all verbs, including %#v), JSON, YAML, text and slog
// all show Redacted, or "" for an empty Secret so that "unset" stays visible.
// Use Reveal to get the value where it is actually needed.
type Secret string

// Reveal returns the secret value. Call it only where the value is sent to
// its destination (an Authorization header), never for logging.
func (s Secret) Reveal() string { return string(s) }

// IsSet reports whether the secret is non-empty.
func (s Secret) IsSet() bool { return s != "" }

func (s Secret) redacted() string {
	if s == "" {
		return ""
	}
	return Redacted
}

// String returns Redacted, or "" when the secret is empty.
func (s Secret) String() string { return s.redacted() }

// GoString returns the redacted form quoted, for %#v.
func (s Secret) GoString() string { return fmt.Sprintf("%q", s.redacted()) }

// Format implements fmt.Formatter so that no verb (%s, %v, %x, %d, …) can
// print the value.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') || verb == 'q' {
		io.WriteString(f, s.GoString())
		return
	}
	io.WriteString(f, s.redacted())
}

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.redacted()) }

// MarshalText implements encoding.TextMarshaler with the redacted form.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.redacted()), nil }

// MarshalJSON implements json.Marshaler with the redacted form.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.redacted()) }

// MarshalYAML implements yaml.Marshaler with the redacted form.
func (s Secret) MarshalYAML() (any, error) { return s.redacted(), nil }
