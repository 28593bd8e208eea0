// Package webhook delivers the change feed's outbox rows to HTTP receivers: one
// signed JSON POST per change, at least once, per conversation in seq order (README,
// "Webhooks"). Deliveries are signed as the Standard Webhooks spec says
// (https://www.standardwebhooks.com/), so a receiver verifies them with a stock
// library. The outbox's rules (claims, leases, the fence, backoff, parking) are
// internal/changefeed's; this package claims, signs, POSTs and reports.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
)

// Headers of a delivery, as the Standard Webhooks spec names them.
const (
	// HeaderID is the event's id (Change.ID): the same on every delivery of one
	// event, so a receiver dedupes on it. It is signed.
	HeaderID = "webhook-id"
	// HeaderTimestamp is when the delivery was signed, in unix seconds; a
	// receiver refuses one too far from its own clock (a replay).
	HeaderTimestamp = "webhook-timestamp"
	// HeaderSignature is "v1,<base64 HMAC-SHA256>" per signing key, space-separated.
	HeaderSignature = "webhook-signature"
)

// Deprecated headers of earlier releases, sent only for a webhook that still has a
// plain (non-whsec_) secret, signed with it as before (SignLegacy). They do not cover
// the event id. They go in a later minor release (CHANGELOG, "Upgrading").
const (
	LegacyHeaderEventID   = "X-Slackpoll-Event-Id"
	LegacyHeaderTimestamp = "X-Slackpoll-Timestamp"
	LegacyHeaderSignature = "X-Slackpoll-Signature"
)

// Sign returns the webhook-signature value of a delivery of event id, signed at
// timestamp (unix seconds, the webhook-timestamp sent with it), of body: for each key,
// "v1," + base64(HMAC-SHA256(key, id + "." + timestamp + "." + body)), joined by
// spaces. A receiver that knows any one of the keys accepts it, which is how a secret
// is rotated without a gap.
func Sign(keys [][]byte, id string, timestamp int64, body []byte) string {
	signed := id + "." + strconv.FormatInt(timestamp, 10) + "."
	sigs := make([]string, len(keys))
	for i, k := range keys {
		mac := hmac.New(sha256.New, k)
		mac.Write([]byte(signed))
		mac.Write(body)
		sigs[i] = "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	}
	return strings.Join(sigs, " ")
}

// SignLegacy returns the deprecated X-Slackpoll-Signature value of body sent at
// timestamp: "v1=" + hex HMAC-SHA256(key, "v1:" + timestamp + ":" + body).
func SignLegacy(key []byte, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("v1:" + strconv.FormatInt(timestamp, 10) + ":"))
	mac.Write(body)
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}
