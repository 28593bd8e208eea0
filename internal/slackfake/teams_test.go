package slackfake

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slack-go/slack"
)

// teamServer returns a Server for team id with channel C1 holding n messages.
func teamServer(t testing.TB, id string, n int, opts Options) *Server {
	t.Helper()
	opts.TeamID = id
	if opts.Now == nil {
		c := &clock{t: t0}
		opts.Now = c.now
	}
	s := New(opts)
	if err := s.AddConversation(PublicChannel("C1", "general-"+strings.ToLower(id))); err != nil {
		t.Fatal(err)
	}
	if err := s.AddUser(User{ID: "U1", RealName: "Avery"}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := s.Post("C1", "U1", fmt.Sprintf("%s message %d", id, i)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func teamsWith(t testing.TB, servers ...*Server) *Teams {
	t.Helper()
	ts := NewTeams()
	for _, s := range servers {
		if err := ts.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	return ts
}

func apiFor(ts *Teams, token string) *slack.Client {
	return slack.New(token, slack.OptionAPIURL(apiURL), slack.OptionHTTPClient(ts.Client()))
}

func TestTeamsIsolation(t *testing.T) {
	rate := map[string]int{"conversations.history": 1}
	a := teamServer(t, "T0AAAAAAA", 2, Options{RatePerMinute: rate})
	b := teamServer(t, "T0BBBBBBB", 3, Options{RatePerMinute: rate})
	if a.Token() == b.Token() || !strings.HasPrefix(a.Token(), "xoxb-") {
		t.Fatalf("tokens %q and %q: want distinct xoxb- tokens", a.Token(), b.Token())
	}
	ts := teamsWith(t, a, b)
	for _, tc := range []struct {
		s    *Server
		msgs int
	}{{a, 2}, {b, 3}} {
		api := apiFor(ts, tc.s.Token())
		at, err := api.AuthTest()
		must(t, err)
		if at.TeamID != tc.s.TeamID() {
			t.Fatalf("auth.test with %s's token answers team %s", tc.s.TeamID(), at.TeamID)
		}
		h := history(t, api, slack.GetConversationHistoryParameters{})
		if len(h.Messages) != tc.msgs || !strings.HasPrefix(h.Messages[0].Text, tc.s.TeamID()) {
			t.Fatalf("team %s reads %d messages (%q), want its own %d", tc.s.TeamID(), len(h.Messages), h.Messages[0].Text, tc.msgs)
		}
	}
	// a's second history call is over its limit; b's limit is its own.
	_, err := apiFor(ts, a.Token()).GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1"})
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) {
		t.Fatalf("a's second history call: %v, want rate limited", err)
	}
	if n := len(a.Requests()); n != 3 {
		t.Fatalf("a logged %d requests, want its own 3", n)
	}
	if n := len(b.Requests()); n != 2 {
		t.Fatalf("b logged %d requests, want its own 2", n)
	}
	// An uninstall of a leaves b working.
	a.RevokeToken()
	_, err = apiFor(ts, a.Token()).AuthTest()
	wantCode(t, err, "token_revoked")
	_, err = apiFor(ts, b.Token()).AuthTest()
	must(t, err)
	if got := ts.TeamIDs(); len(got) != 2 || got[0] != "T0AAAAAAA" || ts.Server("T0BBBBBBB") != b || ts.Len() != 2 {
		t.Fatalf("TeamIDs = %v", got)
	}
}

func TestTeamsUnrouted(t *testing.T) {
	ts := teamsWith(t, teamServer(t, "T0AAAAAAA", 1, Options{}))
	for _, tc := range []struct {
		method string
		params url.Values
		want   string
	}{
		{"auth.test", url.Values{"token": {"xoxb-1-2-unknown"}}, "invalid_auth"},
		{"auth.test", nil, "not_authed"},
		{"no.such.method", url.Values{"token": {"xoxb-1-2-unknown"}}, "unknown_method"},
		{"oauth.v2.access", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"xoxe-1-unknown"}}, "invalid_refresh_token"},
		{"oauth.v2.access", url.Values{"grant_type": {"refresh_token"}}, "invalid_arguments"},
	} {
		req, _ := http.NewRequest(http.MethodPost, apiURL+tc.method, strings.NewReader(tc.params.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		got := doRaw(t, ts.Client(), req)
		if got.status != 200 || got.json["ok"] != false || got.json["error"] != tc.want {
			t.Fatalf("%s %v: %d %s, want %s", tc.method, tc.params, got.status, got.body, tc.want)
		}
	}
}

func TestTeamsAddRemove(t *testing.T) {
	ts := NewTeams()
	must(t, ts.Add(New(Options{})))
	if err := ts.Add(New(Options{})); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second default server: %v, want ErrDuplicate", err)
	}
	if err := ts.Add(New(Options{TeamID: "T0XXXXXXX", Token: botToken})); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("shared token: %v, want ErrDuplicate", err)
	}
	for _, o := range []Options{{TeamID: "t0lower"}, {TeamID: "X0ABCDEF"}, {TeamID: "T"}} {
		if err := ts.Add(New(o)); !errors.Is(err, ErrBadTeamID) {
			t.Fatalf("team %q: %v, want ErrBadTeamID", o.TeamID, err)
		}
	}
	if err := ts.Add(New(Options{TeamID: "T0GOOD001", EnterpriseID: "T0NOTANE"})); !errors.Is(err, ErrBadEntID) {
		t.Fatalf("bad enterprise: %v", err)
	}
	s := teamServer(t, "T0REMOVE1", 1, Options{})
	must(t, ts.Add(s))
	if err := NewTeams().Add(s); !errors.Is(err, ErrOtherTeams) {
		t.Fatalf("server in two Teams: %v", err)
	}
	tok := s.Token()
	_, err := apiFor(ts, tok).AuthTest()
	must(t, err)
	must(t, ts.Remove("T0REMOVE1"))
	_, err = apiFor(ts, tok).AuthTest()
	wantCode(t, err, "invalid_auth")
	if err := ts.Remove("T0REMOVE1"); !errors.Is(err, ErrUnknownTeam) {
		t.Fatalf("second Remove: %v", err)
	}
	// Removed, it may join again, and the direct handler never stopped working.
	must(t, ts.Add(s))
	_, err = apiFor(ts, tok).AuthTest()
	must(t, err)
}

// TestTeamsRouteAfterRotation: new access and refresh tokens route to their team as
// soon as oauth.v2.access answers; the exchanged refresh token no longer routes; the
// previous access token still does until it expires.
func TestTeamsRouteAfterRotation(t *testing.T) {
	a := teamServer(t, "T0AAAAAAA", 1, Options{})
	b := teamServer(t, "T0BBBBBBB", 2, Options{})
	ts := teamsWith(t, a, b)
	longLived := b.Token()
	oldB, rtB, _ := b.EnableRotation(testClientID, testClientSecret) // after Add
	_, err := apiFor(ts, longLived).AuthTest()
	wantCode(t, err, "invalid_auth")
	if n := len(b.Requests()); n != 0 {
		t.Fatalf("the replaced long-lived token still routes to b (%d requests logged)", n)
	}
	_, rtA, _ := a.EnableRotation(testClientID, testClientSecret)
	resp, err := refresh(ts.Client(), rtB)
	must(t, err)
	if resp.Team.ID != "T0BBBBBBB" {
		t.Fatalf("refresh routed to %s", resp.Team.ID)
	}
	for _, tok := range []string{oldB, resp.AccessToken} {
		at, err := apiFor(ts, tok).AuthTest()
		must(t, err)
		if at.TeamID != "T0BBBBBBB" {
			t.Fatalf("token routed to %s", at.TeamID)
		}
	}
	_, err = refresh(ts.Client(), rtB)
	wantCode(t, err, "invalid_refresh_token")
	respA, err := refresh(ts.Client(), rtA)
	must(t, err)
	if respA.Team.ID != "T0AAAAAAA" {
		t.Fatalf("a's refresh routed to %s", respA.Team.ID)
	}
	// Over a real socket too.
	srv := httptest.NewServer(ts)
	defer srv.Close()
	resp2, err := slack.RefreshOAuthV2Token(srv.Client(), testClientID, testClientSecret, resp.RefreshToken,
		slack.OAuthOptionAPIURL(srv.URL+"/api/"))
	must(t, err)
	at, err := slack.New(resp2.AccessToken, slack.OptionAPIURL(srv.URL+"/api/")).AuthTest()
	must(t, err)
	if at.TeamID != "T0BBBBBBB" {
		t.Fatalf("over HTTP routed to %s", at.TeamID)
	}
}

func TestTeamsThousand(t *testing.T) {
	ts, servers := thousandTeams(t)
	if ts.Len() != len(servers) {
		t.Fatalf("Len = %d", ts.Len())
	}
	c := ts.Client()
	for i, s := range servers {
		if i%7 != 0 && i != len(servers)-1 {
			continue
		}
		at, err := slack.New(s.Token(), slack.OptionAPIURL(apiURL), slack.OptionHTTPClient(c)).AuthTest()
		must(t, err)
		if at.TeamID != s.TeamID() {
			t.Fatalf("team %s's token routed to %s", s.TeamID(), at.TeamID)
		}
	}
}

func thousandTeams(t testing.TB) (*Teams, []*Server) {
	ts := NewTeams()
	servers := make([]*Server, 1000)
	for i := range servers {
		servers[i] = New(Options{TeamID: fmt.Sprintf("T%08d", i), Now: (&clock{t: t0}).now})
		if err := ts.Add(servers[i]); err != nil {
			t.Fatal(err)
		}
	}
	return ts, servers
}

// TestTeamsConcurrentRotation refreshes tokens while other goroutines call with the
// tokens they last saw and Add/Remove other teams; run with -race. Every call with a
// token its team issued is answered by that team.
func TestTeamsConcurrentRotation(t *testing.T) {
	const n = 8
	servers := make([]*Server, n)
	refreshTokens := make([]string, n)
	ts := NewTeams()
	for i := range servers {
		servers[i] = New(Options{TeamID: fmt.Sprintf("T0CONC%03d", i)}) // real clock: 12 h is far
		must(t, ts.Add(servers[i]))
		_, refreshTokens[i], _ = servers[i].EnableRotation(testClientID, testClientSecret)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*n)
	for i, s := range servers {
		wg.Add(2)
		go func() { // the rotating client
			defer wg.Done()
			rt := refreshTokens[i]
			for range 30 {
				resp, err := refresh(ts.Client(), rt)
				if err != nil {
					errs <- fmt.Errorf("team %d refresh: %w", i, err)
					return
				}
				rt = resp.RefreshToken
			}
		}()
		go func() { // a reader using whatever token is current
			defer wg.Done()
			for range 60 {
				at, err := apiFor(ts, s.Token()).AuthTest()
				if err != nil {
					errs <- fmt.Errorf("team %d auth.test: %w", i, err)
					return
				}
				if at.TeamID != s.TeamID() {
					errs <- fmt.Errorf("team %d routed to %s", i, at.TeamID)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // installs coming and going beside them
		defer wg.Done()
		for j := range 50 {
			id := fmt.Sprintf("T0CHURN%02d", j)
			extra := New(Options{TeamID: id})
			if err := ts.Add(extra); err != nil {
				errs <- err
				return
			}
			extra.EnableRotation(testClientID, testClientSecret)
			_ = ts.TeamIDs()
			if err := ts.Remove(id); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if ts.Len() != n {
		t.Fatalf("Len = %d after churn, want %d", ts.Len(), n)
	}
}

// BenchmarkTeamsRoute measures one auth.test through a Teams of 1,000 servers: the
// routing look-up plus the in-memory round trip.
func BenchmarkTeamsRoute(b *testing.B) {
	ts, servers := thousandTeams(b)
	c := ts.Client()
	reqs := make([]*http.Request, len(servers))
	for i, s := range servers {
		reqs[i], _ = http.NewRequest(http.MethodGet, apiURL+"auth.test", nil)
		reqs[i].Header.Set("Authorization", "Bearer "+s.Token())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		resp, err := c.Do(reqs[i%len(reqs)])
		if err != nil || resp.StatusCode != 200 {
			b.Fatal(err)
		}
		_ = resp.Body.Close()
	}
}

// TestTeamsExpiryInBubble: Teams' in-memory client works inside a synctest bubble, and
// a team's token expires on the bubble's clock while another team's long-lived one
// does not.
func TestTeamsExpiryInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := New(Options{TeamID: "T0BUBBLE1"}), New(Options{TeamID: "T0BUBBLE2"})
		ts := teamsWith(t, a, b)
		access, _, _ := a.EnableRotation(testClientID, testClientSecret)
		time.Sleep(TokenLifetime)
		_, err := apiFor(ts, access).AuthTest()
		wantCode(t, err, "token_expired")
		_, err = apiFor(ts, b.Token()).AuthTest()
		must(t, err)
	})
}
