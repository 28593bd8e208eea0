package slackapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackpoll/slackpoll/internal/ctxsleep"
	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// retryBackoff is the wait before each retry of a transient failure (README, "How it works":
// up to 3 retries, 1 s, 2 s, 4 s). Each retry also passes the method's limiter.
var retryBackoff = []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second}

// Client is a paced, classifying Slack Web API client implementing readmodel.Source.
// It is safe for concurrent use; calls of one method are serialised by its limiter.
type Client struct {
	// token gives the token of the next attempt: Options.Token, or
	// Options.TokenSource for a rotating token.
	token    func() string
	slackOpt []slack.Option
	// api is the slack-go client of the last token seen; a new token builds a new
	// one (a struct, no connection) while the pacers, which hold all the state that
	// matters, stay.
	api     atomic.Pointer[tokenAPI]
	timeout time.Duration
	pacers  map[string]*pacer
	log     *slog.Logger
	onCall  func(method, outcome string, waited time.Duration)
	onSkew  func(time.Duration)
	skew    skewMeter
}

var _ readmodel.Source = (*Client)(nil)

// tokenAPI is a slack-go client and the token it sends.
type tokenAPI struct {
	token string
	api   *slack.Client
}

// New builds a Client. It fails when neither or both of Token and TokenSource are
// set, the token is empty, the API URL is not an
// absolute http(s) URL, a rate is unknown or not positive, or the PacingStore cannot
// load a method's state. It restores the persisted pacing state of every method, so
// no call is made before a method's LastCall + spacing nor before its NotBefore.
// New makes no request.
func New(opts Options) (*Client, error) {
	var token func() string
	switch {
	case opts.Token != "" && opts.TokenSource != nil:
		return nil, errors.New("slack options: both Token and TokenSource are set: want exactly one")
	case opts.TokenSource != nil:
		token = opts.TokenSource
	case opts.Token == "":
		return nil, errors.New("slack token is empty: set slack.token (default ${SLACK_BOT_TOKEN})")
	default:
		static := opts.Token
		token = func() string { return static }
	}
	apiURL, err := normalizeAPIURL(opts.APIURL)
	if err != nil {
		return nil, err
	}
	rates, err := resolveRates(opts.Rates)
	if err != nil {
		return nil, err
	}
	timeout := opts.RequestTimeout
	if timeout < 0 {
		return nil, fmt.Errorf("slack request_timeout %v: want > 0", timeout)
	}
	if timeout == 0 {
		timeout = DefaultRequestTimeout
	}
	hc := opts.HTTPClient
	if hc == nil {
		// slack-go's default client has no timeout at all (slack-go v0.35).
		hc = &http.Client{Timeout: timeout}
	}
	// A copy, so the caller's client keeps its own redirect policy.
	hcopy := *hc
	hcopy.CheckRedirect = sameHostRedirect
	hc = &hcopy
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{
		token: token,
		// No OptionRetry: it would sleep inside Do, out of sight of our limiters.
		slackOpt: []slack.Option{slack.OptionAPIURL(apiURL), slack.OptionHTTPClient(captureDoer{client: hc})},
		timeout:  timeout,
		pacers:   make(map[string]*pacer, len(rates)),
		log:      log,
		onCall:   opts.OnCall,
		onSkew:   opts.OnClockSkew,
	}
	for _, m := range Methods {
		p, err := newPacer(m, rates[m], opts.Pacing, log, c.slackSkew)
		if err != nil {
			return nil, err
		}
		c.pacers[m] = p
	}
	return c, nil
}

// Spacing returns the minimum time between two calls of method, or 0 for an unknown
// method. For status output ("history: 1 call per 1m0s").
func (c *Client) Spacing(method string) time.Duration {
	if p, ok := c.pacers[method]; ok {
		return p.spacing
	}
	return 0
}

// attemptFunc performs one HTTP attempt of a call through api (which sends the
// token current at that attempt) with the attempt's ctx (which carries the capture c
// and the per-attempt timeout) and stores its result in the caller's variables.
type attemptFunc func(ctx context.Context, api *slack.Client, c *capture) error

// errEmptyToken is the cause of the not_authed error of an attempt whose
// TokenSource gave "": no request is sent without a token.
var errEmptyToken = errors.New("the token source gave an empty token")

// current returns the slack-go client for the token of this moment, building one
// when the token changed since the last call (a rotation). Concurrent callers may
// both build one; either is right.
func (c *Client) current() *tokenAPI {
	tok := c.token()
	if t := c.api.Load(); t != nil && t.token == tok {
		return t
	}
	t := &tokenAPI{token: tok, api: slack.New(tok, c.slackOpt...)}
	c.api.Store(t)
	return t
}

// call runs one Source call: wait for the method's pacer, attempt, then on a rate
// limit wait Retry-After (+ margin) and repeat the same request, on a transient
// failure retry up to len(retryBackoff) times, else return a classified
// *readmodel.APIError. Only ctx ends the waits; the ctx error is returned as is.
func (c *Client) call(ctx context.Context, method string, attempt attemptFunc) error {
	p := c.pacers[method]
	retries := 0
	var backoff time.Duration
	for n := 1; ; n++ {
		waited, err := p.acquire(ctx)
		waited += backoff
		if err != nil {
			c.report(method, "canceled", waited)
			return err
		}
		cp := &capture{}
		actx, cancel := context.WithTimeout(withCapture(ctx, cp), c.timeout)
		start := time.Now()
		cp.sent = start
		api := c.current()
		if api.token == "" {
			err = slack.SlackErrorResponse{Err: "not_authed", ResponseMetadata: slack.ResponseMetadata{Messages: []string{errEmptyToken.Error()}}}
		} else {
			err = attempt(actx, api.api, cp)
		}
		if err == nil && cp.got && !envelopeOK(cp.body) {
			// slack-go's SlackResponse.Err() is nil for "ok": false without an error
			// code, and the call would pass for an empty answer: an empty reply set
			// would then replace a whole thread.
			err = fmt.Errorf("%w: ok is false without an error code", errMalformed)
		}
		cancel()
		took := time.Since(start)
		if skew, ok := c.observeDate(cp); ok && c.onSkew != nil {
			c.onSkew(skew)
		}
		if err == nil {
			p.answered()
			c.log.Debug("slack call", "method", method, "outcome", "ok", "duration", took, "waited", waited, "attempt", n)
			c.report(method, "ok", waited)
			return nil
		}
		if ctx.Err() != nil {
			c.log.Debug("slack call", "method", method, "outcome", "canceled", "duration", took, "waited", waited, "attempt", n)
			c.report(method, "canceled", waited)
			return ctx.Err()
		}
		if rl, ok := asRateLimit(err, cp, p.spacing); ok {
			arrived := cp.arrived
			if !cp.got {
				arrived = time.Now()
			}
			next, before, after := p.pushBack(arrived.Add(rl.wait + retryAfterMargin))
			c.log.Debug("slack call", "method", method, "outcome", "rate_limited", "duration", took, "waited", waited, "attempt", n)
			// wait is what the next attempt will really wait: the 429 counted as a
			// call, so the method's spacing runs from it, often past Retry-After.
			c.log.Warn("slack rate limited; waiting, then repeating the same request",
				"method", method, "wait", time.Until(next).Round(time.Millisecond), "retry_after", rl.wait, "source", rl.source,
				"margin", fmt.Sprintf("%.0f%% (was %.0f%%)", after*100, before*100))
			c.report(method, "rate_limited", waited)
			backoff = 0
			continue
		}
		ae, retry := classify(method, err, api.token)
		if retry && retries < len(retryBackoff) {
			backoff = retryBackoff[retries]
			retries++
			c.log.Debug("slack call", "method", method, "outcome", "retry", "code", ae.Code, "duration", took, "waited", waited, "attempt", n)
			c.log.Warn("slack call failed; retrying", "method", method, "code", ae.Code, "backoff", backoff, "retry", retries)
			c.report(method, "retry", waited)
			if err := ctxsleep.Sleep(ctx, backoff); err != nil {
				c.report(method, "canceled", backoff)
				return err
			}
			continue
		}
		c.log.Debug("slack call", "method", method, "outcome", ae.Class.String(), "code", ae.Code, "duration", took, "waited", waited, "attempt", n)
		c.report(method, ae.Class.String(), waited)
		return ae
	}
}

func (c *Client) report(method, outcome string, waited time.Duration) {
	if c.onCall != nil {
		c.onCall(method, outcome, waited)
	}
}

// errRedirect refuses a redirect to another host: slack-go sends the token in the
// POST body, which a 307 or 308 sends on to wherever the answer points.
var errRedirect = errors.New("redirect to another host refused (the token is never sent there)")

// sameHostRedirect is the client's CheckRedirect: a redirect within the API host is
// followed (up to 10, as net/http's default), one to another host is refused.
func sameHostRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if req.URL.Host != via[0].URL.Host || req.URL.Scheme != via[0].URL.Scheme {
		return fmt.Errorf("%w: %s", errRedirect, req.URL.Host)
	}
	return nil
}
