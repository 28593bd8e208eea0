// Package slackfake is a faithful, in-process fake of the Slack Web API, for
// slackpoll's tests, benchmarks and the `demo` command.
//
// A Server is one workspace (one installation of the app) and serves auth.test,
// conversations.history, conversations.replies, conversations.info, conversations.list,
// users.conversations, users.info, reactions.get and oauth.v2.access at /<method>, exactly as slack-go v0.35 calls them: form-encoded POST (token as a form
// field) or GET (token as a query field or an "Authorization: Bearer" header). It is
// an http.Handler, usable behind httptest.Server, and it offers an in-memory
// http.RoundTripper (Server.Transport, Server.Client) that opens no sockets and works
// inside testing/synctest bubbles.
//
// It reproduces the Slack behaviour that breaks real pollers (sources: Slack's method
// reference in testdata/slack-api-ref, and Slack's documentation at docs.slack.dev):
//
//   - history is newest first; oldest/latest are exclusive unless inclusive=1;
//     limit defaults to 100 (max 999) for history and 1000 (max 1000) for replies, and
//     Options.PageCap caps it server-side (15 for non-Marketplace apps);
//   - pagination ends on response_metadata.next_cursor == "" (the key is present on
//     the last page); a garbage cursor gets invalid_cursor;
//   - replies come parent first, then ascending; with Options.RepeatParentOnEveryPage
//     the parent repeats at the start of every continuation page;
//   - thread parents carry reply_count, reply_users, reply_users_count and
//     latest_reply, and latest_reply moves backwards when the newest reply is deleted;
//   - a deleted parent with live replies becomes a tombstone (subtype "tombstone",
//     hidden: true, user USLACKBOT, "This message was deleted."); when its last reply
//     goes too, the thread answers thread_not_found; other deleted messages vanish;
//   - reaction user lists are truncated to Options.ReactionUsersCap while count stays
//     exact (the token's own bot user is always kept); skin tones are separate names;
//     a message without reactions has no reactions key;
//   - errors come back as HTTP 200 {"ok":false,"error":…} (missing_scope with needed
//     and provided); rate limits as HTTP 429 with an integer Retry-After header;
//   - a deactivated user comes back with deleted: true and no top-level real_name.
//
// Many workspaces: Options.TeamID, TeamName, EnterpriseID (an org-wide install) and
// Token give a Server its own identity; the zero values keep the single fake workspace
// T0SLACKPL and its fixed token. Teams serves many Servers at one address, as Slack
// does, routing each request by its access token (oauth.v2.access by its refresh
// token) in one map look-up; each Server keeps its own data, rate limits (counted per
// workspace, as Slack counts per workspace and app), faults and request log.
//
// Token rotation follows Slack's rules (docs.slack.dev/authentication/using-token-rotation):
// after EnableRotation, access tokens ("xoxe.xoxb-1-…") expire Options.TokenLifetime
// (default TokenLifetime, 12 h) after issue on Options.Now and then answer token_expired; oauth.v2.access with
// grant_type=refresh_token exchanges the single-use refresh token ("xoxe-1-…") for a new
// pair, refusing a used one with invalid_refresh_token; the previous access token lives
// to its own expiry. RevokeToken is an uninstall: token_revoked for every token,
// invalid_refresh_token for the refresh token. oauth.v2.access is unlimited unless
// Options.RatePerMinute names it (Slack's Tier 4), and injected faults reach it like any
// method (a fault queued for Method "" or drawn by SetFaultRate may hit a refresh).
// Token values come from a generator seeded by Options.Seed and the team ID, apart from
// the fault generator, so faults stay the same for a seed with or without rotation.
//
// All time comes from Options.Now. Faults (5xx, reset connections, slow responses,
// malformed or truncated bodies, a wrongly typed message field, 429 without
// Retry-After, repeating or invalid cursors) are injected one by one (InjectFault)
// or at random from a seeded generator (SetFaultRate). Every request is logged
// (Requests). Truth renders the workspace in slackpoll's export format (README,
// "Commands"), and Generate and Mutator build a seeded, realistic workspace and stream of
// changes.
package slackfake
