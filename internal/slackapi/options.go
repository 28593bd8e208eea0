package slackapi

import (
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// DefaultAPIURL is Slack's Web API base URL. It ends in "/" because slack-go builds
// request URLs by plain concatenation (base + "conversations.history").
const DefaultAPIURL = "https://slack.com/api/"

// DefaultRequestTimeout bounds one HTTP attempt (not the pacing wait before it).
const DefaultRequestTimeout = 30 * time.Second

// Options configures New.
type Options struct {
	// Token is the bot token (xoxb-…). It is never logged nor put in an error.
	// Exactly one of Token and TokenSource is set.
	Token string
	// TokenSource, instead of Token, gives the token of each HTTP attempt: a rotated
	// token is sent from the next attempt on, without a new Client, and the pacing
	// state (limiters, Retry-After gates) carries on untouched. It is called once
	// per attempt, so it must be cheap and goroutine-safe (installs.Rotator.Token).
	// An empty answer fails the attempt as not_authed (ClassToken) without a request.
	TokenSource func() string
	// APIURL is the Web API base URL, e.g. "https://slack.com/api/" (the default when
	// empty). A missing trailing "/" is added; a URL that is not absolute http(s) is
	// rejected.
	APIURL string
	// HTTPClient performs the requests. nil means a new http.Client with
	// Timeout = RequestTimeout. Tests pass a client with an in-memory transport.
	HTTPClient *http.Client
	// RequestTimeout bounds each HTTP attempt (request and body read). It is applied
	// per attempt, never to the rate-limiter or Retry-After wait before it.
	// 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Rates is requests per minute per method name (readmodel.Method*), e.g.
	// {"conversations.history": 1}. Methods not listed get the non_marketplace
	// profile rate. Build it with ProfileRates and override keys as needed.
	Rates map[string]float64
	// Pacing persists the last call time and Retry-After gate per method; nil keeps
	// them in memory only (a restart may then fire one call early).
	Pacing PacingStore
	// Logger receives one debug line per HTTP attempt and a warn line per 429.
	// nil discards.
	Logger *slog.Logger
	// OnCall, if set, is called after every HTTP attempt with the method, the outcome
	// ("ok", "rate_limited", "retry", "canceled", or the final error class:
	// "transient", "item", "conversation", "token") and the time spent waiting for
	// pacing and backoff before that attempt. It must be cheap and goroutine-safe.
	OnCall func(method, outcome string, waited time.Duration)
	// OnClockSkew, if set, is called after every answer that carries a Date header
	// with Slack's clock minus ours (see Client.ClockSkew). It must be cheap and
	// goroutine-safe.
	OnClockSkew func(skew time.Duration)
}

// Methods lists the Slack methods the adapter calls, in a fixed order.
var Methods = readmodel.Methods()

// normalizeAPIURL returns u with a trailing "/", or an error if u is not an absolute
// http(s) URL.
func normalizeAPIURL(u string) (string, error) {
	if u == "" {
		return DefaultAPIURL, nil
	}
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return "", fmt.Errorf("slack api_url %q: want an absolute http(s) URL ending in \"/\", e.g. %s", u, DefaultAPIURL)
	}
	if strings.ContainsAny(u, "?#") {
		return "", fmt.Errorf("slack api_url %q: must not contain a query or fragment", u)
	}
	if !strings.HasSuffix(u, "/") {
		u += "/"
	}
	return u, nil
}

// resolveRates fills methods missing from rates with the non_marketplace profile and
// rejects unknown methods and non-positive rates.
func resolveRates(rates map[string]float64) (map[string]float64, error) {
	out, _ := readmodel.ProfileRates(readmodel.ProfileNonMarketplace)
	known := make(map[string]bool, len(Methods))
	for _, m := range Methods {
		known[m] = true
	}
	keys := make([]string, 0, len(rates))
	for k := range rates {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic error for several bad keys
	for _, m := range keys {
		r := rates[m]
		if !known[m] {
			return nil, fmt.Errorf("slack rates: unknown method %q: want one of %s", m, strings.Join(Methods, ", "))
		}
		if !(r >= readmodel.MinRatePerMinute) || math.IsInf(r, 0) {
			return nil, fmt.Errorf("slack rates: %s = %v: want requests per minute, at least %v (one call a day)", m, r, readmodel.MinRatePerMinute)
		}
		out[m] = r
	}
	return out, nil
}
