package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/slackpoll/slackpoll/internal/changefeed"
	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// Log levels and formats (log.level, log.format).
var (
	LogLevels  = []string{"debug", "info", "warn", "error"}
	LogFormats = []string{"text", "json"}
)

// MinTickInterval is the least tick.interval allowed.
const MinTickInterval = Duration(time.Second)

// Validate checks every value and reports all problems at once
// (errors.Join of *Error, each matching ErrInvalid). It also normalizes:
// a slack.api_url without a trailing "/" gets one, and a nil slack.rates
// becomes empty. It does not require a token: see RequireToken.
func (c *Config) Validate() error {
	v := &validator{c: c}
	v.slack()
	if c.Store.Path == "" {
		v.fail("store.path", `must not be empty: want a database file such as slackpoll.db`)
	}
	v.conversations()
	if c.Discover != "" && c.Discover != DiscoverMember {
		v.fail("discover", "%q is not allowed: want \"\" (only the listed conversations) or %q", c.Discover, DiscoverMember)
	}
	if c.Tick.Interval < MinTickInterval {
		v.fail("tick.interval", "%s is not allowed: want at least %s (e.g. 1m); a shorter interval only spins", c.Tick.Interval, MinTickInterval)
	}
	v.positive("tick.soft_deadline", c.Tick.SoftDeadline, "4m")
	v.count("budget.history_calls", c.Budget.HistoryCalls)
	v.count("budget.replies_calls", c.Budget.RepliesCalls)
	v.count("budget.users_info_calls", c.Budget.UsersInfoCalls)
	v.count("budget.reactions_calls", c.Budget.ReactionsCalls)
	v.nonNegative("tracking.horizon", c.Tracking.Horizon)
	v.nonNegative("tracking.head_max_age", c.Tracking.HeadMaxAge)
	if s := c.Tracking.WatchedShare; !(s >= 0 && s <= 1) {
		v.fail("tracking.watched_share", "%v is not allowed: want a fraction from 0 to 1, e.g. 0.5", s)
	}
	v.positive("window.bulk", c.Window.Bulk, "72h")
	v.positive("users.cache_ttl", c.Users.CacheTTL, "168h")
	v.listen()
	v.allowedHosts()
	v.secret("http.token", c.HTTP.Token)
	v.positive("changes.retention", c.Changes.Retention, "168h")
	v.webhooks()
	v.projection()
	v.workspaces()
	v.idList("mcp.conversations", c.MCP.Conversations)
	v.shard()
	v.oneOf("log.level", c.Log.Level, LogLevels)
	v.oneOf("log.format", c.Log.Format, LogFormats)
	return errors.Join(v.errs...)
}

// RequireToken reports an error unless slack.token is set. Commands that
// call Slack (run, once) need it; the message says how to set it.
func (c *Config) RequireToken() error {
	v := &validator{c: c}
	if !c.Slack.Token.IsSet() {
		v.fail("slack.token", "no Slack token: set SLACK_BOT_TOKEN in the environment, or slack.token in the config file (e.g. slack.token: ${MY_SLACK_TOKEN})")
		return v.errs[0]
	}
	// Slack answers another kind of token with invalid_auth or not_allowed_token_type,
	// which says nothing of the cause. Only the prefix is quoted, never the token.
	for _, t := range []struct{ prefix, kind string }{
		{"xoxp-", "a user token"}, {"xapp-", "an app-level token"}, {"xoxe-", "a refresh token"},
		{"xoxc-", "a browser session token"}, {"xoxs-", "a session token"},
	} {
		if strings.HasPrefix(c.Slack.Token.Reveal(), t.prefix) {
			v.fail("slack.token", "is %s (%s…): slackpoll needs a bot token (xoxb-…), the app's \"Bot User OAuth Token\" under OAuth & Permissions once it is installed to the workspace", t.kind, t.prefix)
			return v.errs[0]
		}
	}
	return nil
}

// RequireWebhookSecrets reports an error unless every webhook has its secret. Only
// the commands that deliver (run, once) need them: status, outbox and the other
// read commands work in a shell where the secret's variable is not set.
func (c *Config) RequireWebhookSecrets() error {
	v := &validator{c: c}
	for i, w := range c.Webhooks {
		if !w.Secret.IsSet() {
			v.fail("webhooks["+strconv.Itoa(i)+"].secret", "is empty: every delivery is signed; set e.g. secret: ${SLACKPOLL_WEBHOOK_SECRET} and export that variable (%s)", newSecretHint)
		}
	}
	return errors.Join(v.errs...)
}

type validator struct {
	c    *Config
	errs []error
}

func (v *validator) fail(key, format string, args ...any) {
	e := &Error{File: DefaultFile, Key: key, Msg: fmt.Sprintf(format, args...)}
	if s := v.c.src; s != nil {
		e.File = s.file
		e.Line = s.lines[key]
	}
	v.errs = append(v.errs, e)
}

func (v *validator) slack() {
	s := &v.c.Slack
	v.secret("slack.token", s.Token)
	v.apiURL()
	if _, ok := readmodel.ProfileRates(s.RateProfile); !ok {
		v.fail("slack.rate_profile", "unknown rate profile %q (allowed: %s)", s.RateProfile, strings.Join(Profiles(), ", "))
	}
	if s.Rates == nil {
		s.Rates = map[string]float64{}
	}
	keys := make([]string, 0, len(s.Rates))
	for m := range s.Rates {
		keys = append(keys, m)
	}
	slices.Sort(keys)
	for _, m := range keys {
		r := s.Rates[m]
		key := "slack.rates." + m
		switch {
		case !slices.Contains(methods, m):
			v.failAt(key, "slack.rates", "unknown method %q in slack.rates (allowed: %s)", m, strings.Join(methods, ", "))
		case !(r >= readmodel.MinRatePerMinute) || math.IsInf(r, 0):
			v.fail(key, "rate %v is not allowed: want requests per minute, at least %.6f (one call a day), e.g. 1, or 0.5 for one call every 2 minutes", r, readmodel.MinRatePerMinute)
		}
	}
	v.positive("slack.request_timeout", s.RequestTimeout, "30s")
}

// failAt reports under key, with a message that names key, using the line
// recorded for lineKey.
func (v *validator) failAt(lineKey, key, format string, args ...any) {
	v.fail(key, format, args...)
	e := v.errs[len(v.errs)-1].(*Error)
	e.keyInMsg = true
	if s := v.c.src; s != nil {
		e.Line = s.lines[lineKey]
	}
}

func (v *validator) apiURL() {
	s := &v.c.Slack
	u, err := url.Parse(s.APIURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		v.fail("slack.api_url", "%q is not an http:// or https:// base URL without query: want e.g. https://slack.com/api/", s.APIURL)
		return
	}
	if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		v.fail("slack.api_url", "%q would send the token unencrypted: want https://, or http:// only to localhost or a loopback address (a test server)", s.APIURL)
		return
	}
	if !strings.HasSuffix(s.APIURL, "/") {
		s.APIURL += "/" // slack-go appends method names directly
	}
}

func (v *validator) conversations() { v.idList("conversations", v.c.Conversations) }

// idList checks a list of conversation IDs: each valid, none twice.
func (v *validator) idList(name string, ids []string) {
	seen := map[string]int{}
	for i, id := range ids {
		key := name + "[" + strconv.Itoa(i) + "]"
		if !readmodel.ValidConversationID(id) {
			v.fail(key, "%q is not a Slack conversation ID: want C, G or D followed by uppercase letters and digits, e.g. C0123456789 (not the channel name)", id)
			continue
		}
		if j, dup := seen[id]; dup {
			v.fail(key, "%q is listed twice (also %s[%d])", id, name, j)
			continue
		}
		seen[id] = i
	}
}

func (v *validator) positive(key string, d Duration, example string) {
	if d <= 0 {
		v.fail(key, "%s is not allowed: want a duration > 0, e.g. %s", d, example)
	}
}

func (v *validator) count(key string, n int) {
	if n < 0 {
		v.fail(key, "%d is negative: want a whole number >= 0 (calls per tick; 0 = none)", n)
	}
}

func (v *validator) oneOf(key, val string, allowed []string) {
	if !slices.Contains(allowed, val) {
		v.fail(key, "%q is not allowed (allowed: %s)", val, strings.Join(allowed, ", "))
	}
}

func (v *validator) listen() {
	l := v.c.HTTP.Listen
	if l == "" {
		return
	}
	_, port, err := net.SplitHostPort(l)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		v.fail("http.listen", "%q is not host:port with a port number: want e.g. 127.0.0.1:8089 or :8089, or \"\" for no HTTP server", l)
	}
}

// allowedHosts checks http.allowed_hosts: host names, no port, no scheme, no
// wildcard (a wildcard would let any re-resolved name through, which the Host check
// exists to stop).
func (v *validator) allowedHosts() {
	for i, h := range v.c.HTTP.AllowedHosts {
		key := fmt.Sprintf("http.allowed_hosts[%d]", i)
		if h == "" || strings.ContainsAny(h, ":/*@ ") {
			v.fail(key, "%q is not a host name: want a name such as slackpoll or slackpoll.monitoring.svc, without a port or scheme", h)
		}
	}
}

// loopbackHost reports whether host is localhost or a loopback IP.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// secret rejects whitespace in a secret without showing the value.
func (v *validator) secret(key string, s Secret) {
	if strings.ContainsFunc(s.Reveal(), unicode.IsSpace) {
		v.fail(key, "contains whitespace (a stray newline or space from the environment?); the value is not shown")
	}
}

// webhookSecrets checks a webhook's secrets: each a whsec_ secret or a plain one
// (ParseWebhookSecret). An empty one is left to RequireWebhookSecrets: the read
// commands load a config whose secret is not in their environment.
func (v *validator) webhookSecrets(key string, ss Secrets) {
	for i, s := range ss {
		k := key
		if len(ss) > 1 {
			k += "[" + strconv.Itoa(i) + "]"
		}
		v.secret(k, s)
		if _, err := ParseWebhookSecret(s); err != nil && s.IsSet() {
			v.failAt(k, k, "%s %v; the value is not shown", k, err)
		}
	}
}

// nonNegative checks a duration where 0 has a meaning of its own.
func (v *validator) nonNegative(key string, d Duration) {
	if d.D() < 0 {
		v.fail(key, "%s is negative: want 0 or a positive duration", d.D())
	}
}

func (v *validator) webhooks() {
	seen := map[string]int{}
	for i := range v.c.Webhooks {
		w := &v.c.Webhooks[i]
		key := "webhooks[" + strconv.Itoa(i) + "]"
		switch j, dup := seen[w.Name]; {
		case w.Name == "":
			v.fail(key+".name", "is empty: want a unique name for the webhook, e.g. app")
		case dup:
			v.fail(key+".name", "%q is used twice (also webhooks[%d])", w.Name, j)
		case len(w.Name) > 200 || strings.ContainsFunc(w.Name, unicode.IsControl):
			v.fail(key+".name", "want a short name without control characters, e.g. app")
		}
		seen[w.Name] = i
		switch u, err := url.Parse(w.URL.Reveal()); {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			// The URL may carry credentials: it is not echoed.
			v.fail(key+".url", "is not an http:// or https:// URL: want e.g. https://app.internal/slackpoll-events")
		case u.Scheme == "http" && u.User != nil && !loopbackHost(u.Hostname()):
			v.fail(key+".url", "would send its user:password unencrypted: want https://, or http:// only to localhost or a loopback address")
		}
		v.webhookSecrets(key+".secret", w.Secret)
		for j, k := range w.Kinds {
			if !slices.Contains(readmodel.ChangeKinds(), k) {
				v.fail(key+".kinds["+strconv.Itoa(j)+"]", "unknown change kind %q (allowed: %s)", k, strings.Join(readmodel.ChangeKinds(), ", "))
			}
		}
		for j, id := range w.Channels {
			if !readmodel.ValidConversationID(id) {
				v.fail(key+".channels["+strconv.Itoa(j)+"]", "%q is not a Slack conversation ID: want e.g. C0123456789", id)
			}
		}
		v.nonNegative(key+".timeout", w.Timeout)
		v.nonNegative(key+".lease", w.Lease)
		// Zero takes the default; filled in so that `slackpoll config` shows the
		// values in effect.
		if w.Timeout == 0 {
			w.Timeout = Duration(changefeed.DefaultDeliveryTimeout)
		}
		leaseDefault := ""
		if w.Lease == 0 {
			w.Lease, leaseDefault = Duration(changefeed.DefaultLease), " (the default)"
		}
		// A claim must outlast the POST it is for: a completion after the lease is
		// refused (the fence) and the event sent again, and a claim over before the
		// POST starts is claimed again at once, a core spinning.
		switch {
		case w.Lease.D() > 0 && w.Lease.D() < changefeed.MinLease:
			v.fail(key+".lease", "%s is shorter than %s: a claim would end before its delivery starts, and be taken again at once; want e.g. 1m (the default), longer than timeout", w.Lease.D(), changefeed.MinLease)
		case w.Lease.D() > 0 && w.Timeout.D() > 0 && w.Lease.D() <= w.Timeout.D():
			v.fail(key+".lease", "%s%s is not longer than %s.timeout (%s): a receiver slower than the lease gets each event again, and its answers are refused; set lease above timeout, e.g. lease: %s",
				w.Lease.D(), leaseDefault, key, w.Timeout.D(), max(changefeed.DefaultLease, 2*w.Timeout.D()))
		}
		if w.MaxAttempts == 0 {
			w.MaxAttempts = changefeed.DefaultMaxAttempts
		}
		if w.MaxAttempts < 0 {
			v.fail(key+".max_attempts", "%d is negative: want a whole number >= 1, or 0 for the default (10)", w.MaxAttempts)
		}
		if w.MaxRows == 0 {
			w.MaxRows = changefeed.DefaultMaxRows
		}
		if w.MaxRows < 0 {
			v.fail(key+".max_rows", "%d is negative: want a whole number >= 1, or 0 for the default (%d)", w.MaxRows, changefeed.DefaultMaxRows)
		}
	}
}

// projection checks projection: the Postgres schema is a plain identifier (it is
// created and set as the connections' search_path); "" becomes the default.
func (v *validator) projection() {
	if v.c.Projection.Postgres.Schema == "" {
		v.c.Projection.Postgres.Schema = "slackpoll"
	}
	p := v.c.Projection
	for i, r := range p.Postgres.Schema {
		if ok := r == '_' || 'a' <= r && r <= 'z' || i > 0 && '0' <= r && r <= '9'; !ok {
			v.fail("projection.postgres.schema", "%q is not allowed: want lower-case letters, digits and _, starting with a letter (e.g. slackpoll)", p.Postgres.Schema)
			return
		}
	}
	if p.SQLite.Enabled && (p.SQLite.Path == v.c.Store.Path && p.SQLite.Path != "") {
		v.fail("projection.sqlite.path", "must not be the store's file (store.path)")
	}
	if p.Postgres.DSN.IsSet() {
		v.secret("projection.postgres.dsn", p.Postgres.DSN)
	}
}
