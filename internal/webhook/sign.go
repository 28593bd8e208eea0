// Package webhook delivers the change feed's outbox rows to HTTP receivers: one
// signed JSON POST per change, at least once, per conversation in seq order (README,
// "Webhooks"). The outbox's rules (claims, leases, the fence, backoff, parking) are
// internal/changefeed's; this package claims, POSTs and reports.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"time"
)

// Headers of a delivery.
const (
	HeaderEventID   = "X-Slackpoll-Event-Id"
	HeaderTimestamp = "X-Slackpoll-Timestamp"
	HeaderSignature = "X-Slackpoll-Signature"
)

// Sign returns the X-Slackpoll-Signature value of body sent at timestamp (unix
// seconds, as in X-Slackpoll-Timestamp): "v1=" + hex HMAC-SHA256(secret,
// "v1:" + timestamp + ":" + body).
func Sign(secret []byte, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("v1:" + strconv.FormatInt(timestamp, 10) + ":"))
	mac.Write(body)
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify checks a delivery as a receiver should: the signature matches (compared in
// constant time) and the timestamp is within tolerance of now, so a captured request
// cannot be replayed later. It returns an error saying which check failed.
func Verify(secret []byte, timestamp, signature string, body []byte, now time.Time, tolerance time.Duration) error {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return errors.New("webhook: malformed " + HeaderTimestamp)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return errors.New("webhook: " + HeaderTimestamp + " too far from now (replay?)")
	}
	if !hmac.Equal([]byte(Sign(secret, ts, body)), []byte(signature)) {
		return errors.New("webhook: signature mismatch")
	}
	return nil
}
