package config

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
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

// SecretURL is a URL that may carry credentials: a webhook's user:password, a token
// in its query, or a secret in its path, as many receivers expect. Like Secret, it
// never prints them: fmt, JSON, YAML, text and slog all show RedactURL's form, its
// scheme and host, which still says where it points. Use Reveal to get the URL to send to.
type SecretURL string

// Reveal returns the URL with its credentials. Call it only to send a request.
func (s SecretURL) Reveal() string { return string(s) }

func (s SecretURL) redacted() string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(string(s))
	if err != nil {
		return Redacted // not a URL (Validate says so): nothing of it is shown
	}
	return RedactURL(u)
}

// RedactURL returns u's scheme and host only ("https://app.internal:8443"): a
// receiver's URL may carry a secret in its user:password, its query, or its path (an
// incoming-webhook URL is often a bearer capability: https://hooks.example/T0/B0/xyz),
// and no part of it but where it points can be shown safely.
func RedactURL(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}

// String returns the redacted URL.
func (s SecretURL) String() string { return s.redacted() }

// GoString returns the redacted URL quoted, for %#v.
func (s SecretURL) GoString() string { return fmt.Sprintf("%q", s.redacted()) }

// Format implements fmt.Formatter so that no verb can print the credentials.
func (s SecretURL) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') || verb == 'q' {
		io.WriteString(f, s.GoString())
		return
	}
	io.WriteString(f, s.redacted())
}

// LogValue implements slog.LogValuer.
func (s SecretURL) LogValue() slog.Value { return slog.StringValue(s.redacted()) }

// MarshalText implements encoding.TextMarshaler with the redacted URL.
func (s SecretURL) MarshalText() ([]byte, error) { return []byte(s.redacted()), nil }

// MarshalJSON implements json.Marshaler with the redacted URL.
func (s SecretURL) MarshalJSON() ([]byte, error) { return json.Marshal(s.redacted()) }

// MarshalYAML implements yaml.Marshaler with the redacted URL.
func (s SecretURL) MarshalYAML() (any, error) { return s.redacted(), nil }
