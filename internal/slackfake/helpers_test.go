package slackfake

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// apiURL is any URL ending in "/": the in-memory transport ignores the host.
const apiURL = "http://slack.fake/api/"

// t0 is a fixed clock for tests that do not run in a synctest bubble.
var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// clock is a settable clock for Options.Now.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// newFake returns a fake on a fixed clock (unless opts.Now is set) with the public
// channel C1 ("general") and users U1 and U2, and a slack-go client driving it through
// the in-memory transport.
func newFake(t *testing.T, opts Options) (*Server, *slack.Client) {
	t.Helper()
	if opts.Now == nil {
		c := &clock{t: t0}
		opts.Now = c.now
	}
	s := New(opts)
	must(t, s.AddConversation(PublicChannel("C1", "general")))
	must(t, s.AddUser(User{ID: "U1", DisplayName: "avery", RealName: "Avery Example"}))
	must(t, s.AddUser(User{ID: "U2", RealName: "Bee Example"}))
	return s, clientFor(s)
}

func clientFor(s *Server) *slack.Client {
	return slack.New(s.Token(), slack.OptionAPIURL(apiURL), slack.OptionHTTPClient(s.Client()))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// mustTS wraps a call returning (ts, error): mustTS(t)(s.Post(…)).
func mustTS(t *testing.T) func(readmodel.TS, error) readmodel.TS {
	return func(ts readmodel.TS, err error) readmodel.TS {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
}

// post posts n messages by U1 in C1 and returns their ts, oldest first.
func post(t *testing.T, s *Server, channel string, n int) []readmodel.TS {
	t.Helper()
	out := make([]readmodel.TS, n)
	for i := range out {
		out[i] = mustTS(t)(s.Post(channel, "U1", "message "+strconv.Itoa(i)))
	}
	return out
}

// slackErr returns the Slack error code of err ("" if err is not a SlackErrorResponse).
func slackErr(err error) slack.SlackErrorResponse {
	var e slack.SlackErrorResponse
	errors.As(err, &e)
	return e
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := slackErr(err).Err; got != code {
		t.Fatalf("error = %v, want Slack error %q", err, code)
	}
}

// raw is an answer read without slack-go.
type raw struct {
	status int
	header http.Header
	body   []byte
	json   map[string]any
}

// rawCall POSTs a form to method through the in-memory transport, with the valid token
// unless params sets one.
func rawCall(t *testing.T, s *Server, method string, params url.Values) raw {
	t.Helper()
	p := url.Values{"token": {s.Token()}}
	for k, v := range params {
		p[k] = v
	}
	req, _ := http.NewRequest(http.MethodPost, apiURL+method, strings.NewReader(p.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return doRaw(t, s.Client(), req)
}

func doRaw(t *testing.T, c *http.Client, req *http.Request) raw {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := raw{status: resp.StatusCode, header: resp.Header, body: body}
	_ = json.Unmarshal(body, &r.json)
	return r
}

// history reads one history page through slack-go.
func history(t *testing.T, api *slack.Client, p slack.GetConversationHistoryParameters) *slack.GetConversationHistoryResponse {
	t.Helper()
	if p.ChannelID == "" {
		p.ChannelID = "C1"
	}
	resp, err := api.GetConversationHistory(&p)
	if err != nil {
		t.Fatalf("history %+v: %v", p, err)
	}
	return resp
}

func tsList(msgs []slack.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Timestamp
	}
	return out
}
