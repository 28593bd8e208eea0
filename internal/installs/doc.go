// Package installs keeps the app's installations (one per workspace: team ID, tokens,
// what to poll) sealed at rest, and keeps rotating tokens fresh without ever leaving a
// workspace locked out.
//
// # Keys and sealing
//
// Records are sealed with AES-256-GCM (crypto/cipher). The 32-byte key comes from
// SLACKPOLL_INSTALL_KEY (base64) or a key file (base64 or 32 raw bytes, mode 0600
// or stricter: a file group or others can read is refused). Without a key, LoadKey
// answers ErrNoKey, which says what to set: tokens given at run time are never kept in
// the clear. Each seal draws a fresh random 12-byte nonce, and the team ID is the
// additional data: a record copied under another team's key does not open. A record
// that does not open (wrong key, damaged byte, moved) is a *DamagedError naming the
// team; List still returns every other record.
//
// Tokens are of type Secret, which prints "[redacted]" through fmt (every verb), slog
// and encoding/json; only string(s) reads one. The Registry stores its own record type.
//
// # Token rotation, and a crash between Slack's answer and the write
//
// With rotation on, Slack's access token lives 12 h and each refresh token is
// single-use: oauth.v2.access spends it and answers a new pair. The previous access
// token stays valid until its own expiry. A Rotator refreshes when half the token's
// life is left (6 h), with this write-ahead protocol:
//
//  1. one fsynced transaction records PendingRefresh{StartedAt, Of: the refresh token
//     about to be spent};
//  2. oauth.v2.access (grant_type=refresh_token), one attempt;
//  3. on the answer, with no other I/O first, one fsynced transaction stores the new
//     access and refresh tokens and ExpiresAt, and clears PendingRefresh;
//  4. only then the new token replaces the old in memory (Token).
//
// A crash before 1 leaves nothing to do. A crash after 3 leaves the new tokens stored:
// the restarted process uses them. A crash between 1 and 3 leaves PendingRefresh: at
// start (Recover) the exchange is tried once more with the stored refresh token. If
// Slack never processed the first request (crash before it was sent, or it did not
// arrive), that token is unspent and this is simply the refresh.
//
// The one window no client can close is Slack having processed the request and the
// process dying before step 3 made the answer durable (killed while the answer was in
// flight, or after reading it and before the write). The refresh token is spent and
// the new one died with the process: Slack answers the retry invalid_refresh_token.
// That is why the refresh happens at half-life: the stored access token is still valid
// until its ExpiresAt, six hours or more away. The workspace keeps polling with it and
// its state becomes refresh_failed with the reason and the deadline ("… re-install the
// app in this workspace or PUT new tokens before <ExpiresAt>"). Strict single use makes
// this exact: with no way to ask Slack for the lost answer again, no ordering of writes
// can make a lost answer recoverable; the protocol makes it the only loss, makes it
// visible, and leaves hours to act.
//
// ExpiresAt is the time the request was sent (read before it, monotonic when Now is
// time.Now) plus expires_in: never later than Slack's own expiry. A stored ExpiresAt
// more than TokenLifetime ahead of now was written by a wrong clock and is not
// trusted: the token is refreshed at once.
//
// A refresh Slack refuses (any error code) marks only that installation
// refresh_failed, with the code; a transient failure (network, 5xx, 429) is retried
// with backoff while the state stays active, since the token still works. A call that
// meets token_expired calls Expired: one refresh now.
package installs
