// Package slackapi implements readmodel.Source over github.com/slack-go/slack.
//
// It owns everything that is specific to talking to Slack's Web API:
//
//   - pacing: one golang.org/x/time/rate limiter per method (burst 1, evenly spaced)
//     plus a notBefore gate for Retry-After, both persisted through a PacingStore so a
//     restarted daemon never fires early (pacing.go);
//   - HTTP 429 in all the shapes slack-go returns, waited out inside the call, then the
//     same request repeated (ratelimit.go);
//   - transient failures retried up to 3 times with 1 s, 2 s, 4 s backoff (client.go);
//   - classification of every failure into *readmodel.APIError (errors.go);
//   - capture of the raw response body so that one undecodable message does not lose
//     the whole history/replies page (capture.go, decode.go);
//   - conversion of slack-go types into the domain model (convert.go);
//   - rotating tokens: Options.TokenSource gives each attempt the token of that moment
//     (the pacers stay), RefreshToken exchanges a refresh token through oauth.v2.access,
//     and TokenError tells token_expired (refresh) from a revoked token (oauth.go,
//     errors.go).
//
// The token is sent by slack-go as a form field and never appears in an error or a log
// line produced here.
package slackapi
