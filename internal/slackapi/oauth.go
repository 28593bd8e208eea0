package slackapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/slack-go/slack"
)

// OAuthOptions configures RefreshToken: the app's credentials and where Slack is.
type OAuthOptions struct {
	// APIURL is the Web API base URL as in Options.APIURL ("" = DefaultAPIURL).
	APIURL string
	// HTTPClient performs the request; nil means an http.Client with
	// DefaultRequestTimeout. Redirects to another host are refused (the client
	// secret and refresh token are in the body).
	HTTPClient *http.Client
	// ClientID and ClientSecret are the app's credentials (Basic Information page).
	ClientID, ClientSecret string
}

// Refreshed is Slack's answer to a refresh: a new access token valid for ExpiresIn
// (12 h at Slack) and the refresh token to spend next time (the one spent is dead).
type Refreshed struct {
	AccessToken, RefreshToken string
	ExpiresIn                 time.Duration
	TeamID, EnterpriseID      string
}

// OAuthError is a failed refresh. Code is Slack's error code ("invalid_refresh_token",
// "invalid_client_id", "bad_client_secret", "invalid_grant_type", …) or one of the
// transport codes of this package (CodeTimeout, CodeConnection, CodeMalformed, "http_503",
// "ratelimited"). Transient says whether the same exchange may succeed later (network,
// 5xx, 429, a malformed answer); a Slack error code is final for that refresh token and
// those credentials. Err never contains the refresh token or the client secret.
type OAuthError struct {
	Code       string
	Transient  bool
	RetryAfter time.Duration // Slack's Retry-After of a 429, else 0
	Err        error
}

func (e *OAuthError) Error() string {
	msg := "oauth.v2.access: " + e.Code
	if e.Err != nil && e.Err.Error() != e.Code {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *OAuthError) Unwrap() error { return e.Err }

// CodeInvalidRefreshToken is Slack's answer to a refresh token that is unknown or
// already spent: refresh tokens are single-use.
const CodeInvalidRefreshToken = "invalid_refresh_token"

// RefreshToken exchanges refreshToken for a new access token and refresh token through
// oauth.v2.access (grant_type=refresh_token), in one HTTP attempt: no retry here, since
// a retried exchange that Slack already processed would spend a token whose answer was
// lost. Errors are *OAuthError; ctx's error is returned as is.
func RefreshToken(ctx context.Context, opts OAuthOptions, refreshToken string) (Refreshed, error) {
	apiURL, err := normalizeAPIURL(opts.APIURL)
	if err != nil {
		return Refreshed{}, err
	}
	if refreshToken == "" || opts.ClientID == "" {
		return Refreshed{}, &OAuthError{Code: "invalid_arguments", Err: errors.New("refresh token or client id is empty")}
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: DefaultRequestTimeout}
	}
	hcopy := *hc
	hcopy.CheckRedirect = sameHostRedirect
	cp := &capture{}
	resp, err := slack.RefreshOAuthV2TokenContext(withCapture(ctx, cp), captureDoer{client: &hcopy},
		opts.ClientID, opts.ClientSecret, refreshToken, slack.OAuthOptionAPIURL(apiURL))
	if err == nil && cp.got && !envelopeOK(cp.body) {
		err = fmt.Errorf("%w: ok is false without an error code", errMalformed)
	}
	if err == nil && (resp.AccessToken == "" || resp.RefreshToken == "" || resp.ExpiresIn <= 0) {
		err = fmt.Errorf("%w: the answer lacks access_token, refresh_token or a positive expires_in", errMalformed)
	}
	if err != nil {
		if ctx.Err() != nil {
			return Refreshed{}, ctx.Err()
		}
		return Refreshed{}, classifyOAuth(err, cp, refreshToken, opts.ClientSecret)
	}
	return Refreshed{
		AccessToken:  resp.AccessToken,
		RefreshToken: resp.RefreshToken,
		ExpiresIn:    time.Duration(resp.ExpiresIn) * time.Second,
		TeamID:       resp.Team.ID,
		EnterpriseID: resp.Enterprise.ID,
	}, nil
}

// classifyOAuth turns a failed exchange into an *OAuthError with both secrets redacted.
func classifyOAuth(err error, cp *capture, refreshToken, secret string) *OAuthError {
	if rl, ok := asRateLimit(err, cp, minRateLimitWait); ok {
		return &OAuthError{Code: "ratelimited", Transient: true, RetryAfter: rl.wait, Err: redact(redact(err, refreshToken), secret)}
	}
	ae, retry := classify("oauth.v2.access", err, refreshToken)
	oe := &OAuthError{Code: ae.Code, Transient: retry, Err: redact(ae.Err, secret)}
	var ser slack.SlackErrorResponse
	if errors.As(err, &ser) {
		// Slack's own answer: final, except its momentary server failures.
		oe.Transient = retryableCodes[ser.Err]
	}
	return oe
}
