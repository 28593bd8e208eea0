package slackapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/slack-go/slack"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// Transport-level codes put in readmodel.APIError.Code when Slack sent no error code.
const (
	CodeTimeout           = "timeout"              // an attempt exceeded RequestTimeout
	CodeConnection        = "connection_error"     // reset, refused, DNS, EOF…
	CodeMalformed         = "malformed_response"   // not JSON, truncated, or no valid envelope
	CodeUndecodable       = "undecodable_response" // valid JSON of an unexpected shape
	CodeUnexpected        = "unexpected_error"     // anything else
	CodeRedirect          = "redirect_refused"     // a redirect to another host (sameHostRedirect)
	codeHTTPStatusPattern = "http_%d"              // non-200 status without a Slack code
)

// errMalformed marks a body whose envelope (ok, error, response_metadata) could not
// be decoded: an HTML error page, a truncated body.
var errMalformed = errors.New("response body is not a Slack API JSON envelope")

// codeClass maps Slack error codes to their class (README, "Replace on read"). Codes
// absent here are ClassTransient.
var codeClass = map[string]readmodel.ErrorClass{
	// The token is rejected: the tick stops.
	"invalid_auth":     readmodel.ClassToken,
	"not_authed":       readmodel.ClassToken,
	"token_revoked":    readmodel.ClassToken,
	"token_expired":    readmodel.ClassToken,
	"account_inactive": readmodel.ClassToken,
	// One conversation cannot be read: the sweep goes on.
	"not_in_channel":                        readmodel.ClassConversation,
	"missing_scope":                         readmodel.ClassConversation,
	"channel_not_found":                     readmodel.ClassConversation,
	"is_archived":                           readmodel.ClassConversation,
	"method_not_supported_for_channel_type": readmodel.ClassConversation,
	// conversations.history: "channel is limited access" — per conversation too.
	"channel_is_limited_access": readmodel.ClassConversation,
	// One item is gone: Slack's final answer for a thread.
	"thread_not_found":  readmodel.ClassItem,
	"message_not_found": readmodel.ClassItem,
}

// retryableCodes are Slack error codes that describe a momentary server failure: the
// call retries them with backoff. invalid_cursor is transient but not retried — the
// same cursor would fail again; the caller restarts its walk.
var retryableCodes = map[string]bool{
	"service_unavailable": true,
	"fatal_error":         true,
	"request_timeout":     true,
	"internal_error":      true,
}

// classify turns a failed attempt's error into an APIError and says whether the
// attempt may be retried (transient failures only). Rate limits are handled before
// classify (asRateLimit). The result's Err never contains token.
func classify(method string, err error, token string) (ae *readmodel.APIError, retry bool) {
	ae = &readmodel.APIError{Method: method, Class: readmodel.ClassTransient, Err: redact(err, token)}
	var ser slack.SlackErrorResponse
	var sce slack.StatusCodeError
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var nerr net.Error
	var uerr *url.Error
	switch {
	case errors.As(err, &ser):
		ae.Code = ser.Err
		if c, ok := codeClass[ser.Err]; ok {
			ae.Class = c
		}
		if ser.Err == "missing_scope" {
			ae.Needed = ser.Needed
		}
		return ae, retryableCodes[ser.Err]
	case errors.As(err, &sce):
		ae.Code = fmt.Sprintf(codeHTTPStatusPattern, sce.Code)
		if sce.Code == 404 {
			ae.Err = fmt.Errorf("%w (no such API method here: check slack.api_url)", ae.Err)
		}
		return ae, sce.Code >= 500
	case errors.Is(err, errRedirect):
		// Deterministic: the same request is redirected the same way.
		ae.Code = CodeRedirect
		return ae, false
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		ae.Code = CodeTimeout
		return ae, true
	case errors.As(err, &uerr), errors.As(err, &nerr), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED):
		// Errors of http.Client.Do come as *url.Error; the body is read inside Do
		// (captureDoer), so a reset mid-body lands here too.
		ae.Code = CodeConnection
		return ae, true
	case errors.Is(err, errMalformed), errors.As(err, &syn), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		// HTML error pages, truncated and empty bodies are what a struggling proxy
		// or Slack edge sends; the next attempt usually gets JSON. (io.EOF outside a
		// *url.Error is json's answer to an empty body.)
		ae.Code = CodeMalformed
		return ae, true
	case errors.As(err, &typ):
		// Deterministic: the same body would fail the same way.
		ae.Code = CodeUndecodable
		return ae, false
	}
	ae.Code = CodeUnexpected
	return ae, false
}

// redact returns err, or a copy of its text with the token replaced when the text
// contains it. slack-go sends the token as a form field, so it should never reach an
// error text; this is the belt to that pair of braces.
func redact(err error, token string) error {
	if err == nil || token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "[token]"))
}

// Slack's codes for a token it refuses. TokenError tells them apart: an expired token
// of a rotating installation is refreshed, the others are not.
const (
	CodeTokenExpired    = "token_expired"    // a rotating token past its expires_in: refresh
	CodeInvalidAuth     = "invalid_auth"     // unknown token: most likely uninstalled
	CodeTokenRevoked    = "token_revoked"    // revoked (auth.revoke, uninstall)
	CodeAccountInactive = "account_inactive" // the bot user or workspace is deactivated
	CodeNotAuthed       = "not_authed"       // no token sent
)

// TokenError reports whether err is a refused token (readmodel.ClassToken) and
// Slack's code for it: CodeTokenExpired means "refresh and call again"; every other
// code (CodeInvalidAuth, CodeTokenRevoked, CodeAccountInactive, CodeNotAuthed) means
// no refresh will help. ok is false for any other error.
func TokenError(err error) (code string, ok bool) {
	var ae *readmodel.APIError
	if !errors.As(err, &ae) || ae.Class != readmodel.ClassToken {
		return "", false
	}
	return ae.Code, true
}

// IsTokenExpired reports whether err is Slack's token_expired: the access token of
// a rotating installation outlived its expires_in.
func IsTokenExpired(err error) bool {
	code, ok := TokenError(err)
	return ok && code == CodeTokenExpired
}
