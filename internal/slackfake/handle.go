package slackfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

// maxBody bounds a request body; Slack rejects far smaller ones anyway.
const maxBody = 1 << 20

// call is one request being answered.
type call struct {
	method string
	params url.Values
	header http.Header
	token  string // the access token presented, "" if none
	now    time.Time
	fault  Fault
	issued []string // tokens oauth.v2.access issued, for Teams' index
}

// request is one parsed request, before it reaches a Server.
type request struct {
	method  string
	params  url.Values
	header  http.Header
	token   string
	badForm bool
}

// apiErr is an ok:false answer.
type apiErr struct {
	code, needed, provided string
}

// methodFunc answers one method: the JSON body of an ok:true answer, or an error.
type methodFunc func(s *Server, c *call) (segments, *apiErr)

// segments is a response body kept as the slices it was assembled from, so that
// cached message JSON is shared rather than copied. Slices are never modified once
// assembled (a stale message cache is replaced, not overwritten), so an answer stays
// valid after the lock is released.
type segments [][]byte

func (b segments) size() int {
	n := 0
	for _, s := range b {
		n += len(s)
	}
	return n
}

func (b segments) flat() []byte {
	out := make([]byte, 0, b.size())
	for _, s := range b {
		out = append(out, s...)
	}
	return out
}

// methods are the Slack Web API methods served, and the scopes Slack accepts for them
// (the X-Accepted-OAuth-Scopes header).
var methods = map[string]struct {
	fn       methodFunc
	accepted string
}{
	"auth.test":             {(*Server).authTest, ""},
	"conversations.history": {(*Server).history, "channels:history,groups:history,im:history,mpim:history"},
	"conversations.replies": {(*Server).replies, "channels:history,groups:history,im:history,mpim:history"},
	"conversations.info":    {(*Server).conversationsInfo, "channels:read,groups:read,im:read,mpim:read"},
	"conversations.list":    {(*Server).conversationsList, "channels:read,groups:read,im:read,mpim:read"},
	"users.conversations":   {(*Server).usersConversations, "channels:read,groups:read,im:read,mpim:read"},
	"users.info":            {(*Server).usersInfo, "users:read"},
	"reactions.get":         {(*Server).reactionsGet, "reactions:read"},
	// Slack's Tier 4; unlimited here unless Options.RatePerMinute names it.
	oauthMethod: {(*Server).oauthAccess, ""},
}

// oauthMethod is the one method that takes no access token: the app's credentials
// and a refresh token instead.
const oauthMethod = "oauth.v2.access"

// answer is a finished response before it is written to a connection.
type answer struct {
	status  int
	header  http.Header
	body    segments
	reset   bool          // drop the connection instead
	trunc   bool          // declare the full size, send half
	delay   time.Duration // wait first (Slow)
	errCode string
}

// parseParams reads Slack's arguments: the query string, plus a form-encoded or JSON
// body. Body values come first, as in net/http's Request.Form.
func parseParams(u *url.URL, header http.Header, body []byte) (url.Values, error) {
	q, qerr := url.ParseQuery(u.RawQuery)
	if len(body) == 0 {
		return q, qerr
	}
	ct, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	switch ct {
	case "application/json":
		var obj map[string]any
		d := json.NewDecoder(bytes.NewReader(body))
		d.UseNumber()
		if err := d.Decode(&obj); err != nil {
			return q, err
		}
		for k, v := range obj {
			switch v := v.(type) {
			case string:
				q.Set(k, v)
			case json.Number:
				q.Set(k, v.String())
			case bool:
				q.Set(k, strconv.FormatBool(v))
			}
		}
		return q, qerr
	default:
		f, ferr := url.ParseQuery(string(body))
		for k, v := range q {
			f[k] = append(f[k], v...)
		}
		if ferr != nil {
			return f, ferr
		}
		return f, qerr
	}
}

// bearer extracts the token of an "Authorization: Bearer …" header.
func bearer(header http.Header) string {
	v := header.Get("Authorization")
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return strings.TrimSpace(v[7:])
	}
	return ""
}

// parseRequest reads the method, arguments and access token of a request.
func parseRequest(u *url.URL, header http.Header, body []byte, bodyErr error) *request {
	params, perr := parseParams(u, header, body)
	if params == nil {
		params = url.Values{}
	}
	r := &request{method: path.Base(u.Path), params: params, header: header,
		badForm: perr != nil || bodyErr != nil}
	r.token = params.Get("token")
	if r.token == "" {
		r.token = bearer(header)
	}
	return r
}

// handle answers one request. It never panics on any input.
func (s *Server) handle(u *url.URL, header http.Header, body []byte, bodyErr error) *answer {
	return s.serve(parseRequest(u, header, body, bodyErr))
}

// serve answers one parsed request and logs it.
func (s *Server) serve(r *request) *answer {
	s.mu.Lock()
	c := &call{method: r.method, params: r.params, header: r.header, token: r.token, now: s.now()}
	a := s.respond(c, r.token, r.badForm)
	s.requests = append(s.requests, Request{
		Method: r.method, Params: withoutSecrets(r.params), Time: c.now,
		Status: a.status, Error: a.errCode, Fault: c.fault.Kind,
	})
	if a.reset {
		s.requests[len(s.requests)-1].Status = 0
	}
	teams := s.auth.teams
	s.mu.Unlock()
	if len(c.issued) == 2 {
		// Before the answer leaves, so the new tokens route by the time a client has them.
		teams.index(s, c.issued[0], c.issued[1])
	}
	return a
}

// respond decides the answer. Order: unknown method, injected transport faults, rate
// limit, authentication, bad form data, then the method itself. Callers hold s.mu.
func (s *Server) respond(c *call, token string, badForm bool) *answer {
	m, known := methods[c.method]
	if !known {
		return errorAnswer(&apiErr{code: "unknown_method"}, "")
	}
	c.fault = s.drawFault(c.method, c.params)
	switch c.fault.Kind {
	case Status5xx:
		st := c.fault.Status
		if st < 500 || st > 599 {
			st = http.StatusServiceUnavailable
		}
		h := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
		body := fmt.Sprintf("<html><head><title>%d %s</title></head><body><h1>%s</h1></body></html>\n",
			st, http.StatusText(st), http.StatusText(st))
		return &answer{status: st, header: h, body: segments{[]byte(body)}}
	case ConnReset:
		return &answer{reset: true}
	case RateLimitNoRetryAfter:
		a := s.errorAnswer(&apiErr{code: "ratelimited"}, m.accepted)
		a.status = http.StatusTooManyRequests
		return a
	}
	if ok, after := s.rateCheck(c.method, token, c.now); !ok {
		a := s.errorAnswer(&apiErr{code: "ratelimited"}, m.accepted)
		a.status = http.StatusTooManyRequests
		a.header.Set("Retry-After", strconv.Itoa(after))
		return a
	}
	var a *answer
	authErr := ""
	if c.method != oauthMethod {
		authErr = s.checkToken(token, c.now)
	}
	switch {
	case authErr != "":
		a = s.errorAnswer(&apiErr{code: authErr}, m.accepted)
	case badForm:
		a = s.errorAnswer(&apiErr{code: "invalid_form_data"}, m.accepted)
	default:
		out, e := m.fn(s, c)
		if e != nil {
			a = s.errorAnswer(e, m.accepted)
		} else {
			a = &answer{status: http.StatusOK, header: jsonHeader(m.accepted), body: out}
		}
		a.header.Set("X-OAuth-Scopes", s.scopeHeader())
	}
	switch c.fault.Kind {
	case Slow:
		a.delay = c.fault.Delay
		if a.delay <= 0 {
			a.delay = defaultSlowDelay
		}
	case MalformedJSON:
		a.body = segments{malformed(a.body.flat())}
	case TruncatedBody:
		a.trunc = true
	}
	return a
}

func jsonHeader(accepted string) http.Header {
	h := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	if accepted != "" {
		h.Set("X-Accepted-OAuth-Scopes", accepted)
	}
	return h
}

// errorAnswer renders {"ok":false,"error":code[,"needed","provided"]} with HTTP 200.
func (s *Server) errorAnswer(e *apiErr, accepted string) *answer { return errorAnswer(e, accepted) }

func errorAnswer(e *apiErr, accepted string) *answer {
	b := []byte(`{"ok":false,"error":`)
	b = appendString(b, e.code)
	if e.needed != "" {
		b = appendField(b, "needed", e.needed)
		b = appendField(b, "provided", e.provided)
	}
	b = append(b, '}')
	return &answer{status: http.StatusOK, header: jsonHeader(accepted), body: segments{b}, errCode: e.code}
}

// malformed corrupts a JSON body so that it no longer parses: the first ':' becomes
// '=' ({"ok"=true,…}).
func malformed(out []byte) []byte {
	if i := bytes.IndexByte(out, ':'); i >= 0 {
		out[i] = '='
		return out
	}
	return append([]byte("<html>"), out...)
}

// marshalOK renders v (a struct whose first field is `json:"ok"`) with encoding/json.
func marshalOK(v any) (segments, *apiErr) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &apiErr{code: "internal_error"}
	}
	return segments{b}, nil
}
