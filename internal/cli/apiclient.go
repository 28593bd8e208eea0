package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/slackpoll/slackpoll/config"
)

// apiDialTimeout bounds the connection to the daemon's API, so that a read command
// against an address nobody answers on fails within about a second.
const apiDialTimeout = 700 * time.Millisecond

// apiTimeout bounds one whole API request (the daemon answers from its store).
const apiTimeout = 10 * time.Second

// apiClient reads the running daemon's HTTP read API (internal/httpapi), for the read
// commands while the daemon holds the store's lock.
type apiClient struct {
	store string // store.path, to say why the API is asked
	base  string // "http://127.0.0.1:8089"
	token string // http.token; sent as a bearer token, never printed
	hc    *http.Client
}

func newAPIClient(cfg *config.Config) *apiClient {
	return &apiClient{
		store: cfg.Store.Path,
		base:  apiBaseURL(cfg.HTTP.Listen) + cfg.HTTP.PathPrefix,
		token: cfg.HTTP.Token.Reveal(),
		hc: &http.Client{
			Timeout:   apiTimeout,
			Transport: &http.Transport{DialContext: (&net.Dialer{Timeout: apiDialTimeout}).DialContext},
		},
	}
}

// apiBaseURL turns http.listen into the URL a local client dials: a listen address
// without a host, or on all interfaces, is reached on loopback.
func apiBaseURL(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "http://" + listen
	}
	switch ip := net.ParseIP(host); {
	case host == "" || ip != nil && ip.IsUnspecified() && ip.To4() != nil:
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified():
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// errAPIUnreachable matches the error of a request the daemon's API did not answer
// (connection refused or cut): the daemon is stopped or restarting.
var errAPIUnreachable = errors.New("the daemon's HTTP API did not answer")

// unreachableError is a request the daemon's API did not answer; its message says
// what to check, and errors.Is matches errAPIUnreachable.
type unreachableError struct {
	msg string
	err error
}

func (e *unreachableError) Error() string        { return e.msg }
func (e *unreachableError) Unwrap() error        { return e.err }
func (e *unreachableError) Is(target error) bool { return target == errAPIUnreachable }

// errAPINotFound matches a 404 of the API: an unknown conversation, message, record
// or user.
var errAPINotFound = errors.New("not found")

// apiError is a 4xx/5xx answer of the daemon's API with its {"error": …} message,
// and the whole body (some errors carry more: the feed's bounds of a 410 or 409).
type apiError struct {
	code int
	msg  string
	body []byte
}

func (e *apiError) Error() string { return e.msg }

func (e *apiError) Is(target error) bool {
	return target == errAPINotFound && e.code == http.StatusNotFound
}

// get GETs path and decodes the JSON answer into v.
func (c *apiClient) get(path string, v any) error { return c.do(http.MethodGet, path, nil, v) }

// post POSTs body as JSON to path and decodes the JSON answer into v.
func (c *apiClient) post(path string, body, v any) error {
	return c.do(http.MethodPost, path, body, v)
}

func (c *apiClient) do(method, path string, body, v any) error {
	return c.doCtx(context.Background(), method, path, body, v)
}

// doCtx is do, ended early by ctx (a long poll interrupted by a signal).
func (c *apiClient) doCtx(ctx context.Context, method, path string, body, v any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is said below; the error alone is clearer
		}
		return &unreachableError{err: err, msg: fmt.Sprintf("store %s is locked by another process (is \"slackpoll run\" running?), and the daemon's HTTP API at %s did not answer (%v): is http.listen the address the daemon listens on?",
			c.store, c.base, err)}
	}
	defer func() { _ = resp.Body.Close() }() // read in full below
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return &unreachableError{err: err, msg: fmt.Sprintf("reading the answer of the daemon's HTTP API at %s: %v", c.base, err)}
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return &apiError{resp.StatusCode, fmt.Sprintf("the daemon's HTTP API at %s refused the token: set http.token to the daemon's http.token", c.base), nil}
	case resp.StatusCode >= 400:
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = resp.Status
		}
		return &apiError{resp.StatusCode, e.Error, data}
	}
	if v == nil {
		return nil // an answer without a body (204)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("the daemon's HTTP API at %s sent an answer this slackpoll does not understand (%v): are both the same version?", c.base, err)
	}
	return nil
}
