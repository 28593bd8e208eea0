package installs

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackpoll/slackpoll/internal/slackapi"
	"github.com/slackpoll/slackpoll/internal/slackfake"
)

const (
	testClientID     = "1111.2222"
	testClientSecret = "client-secret-of-the-app"
	fakeURL          = "http://slack.fake/api/"
)

// rotatingSetup is a fake workspace with rotation on, its installation stored in a
// fresh Registry, and a Rotator over it (not running).
type rotatingSetup struct {
	fake *slackfake.Server
	reg  *Registry
	rot  *Rotator
}

func newRotatingSetup(t *testing.T, team string) *rotatingSetup {
	t.Helper()
	fake := slackfake.New(slackfake.Options{TeamID: team})
	access, refresh, expiresIn := fake.EnableRotation(testClientID, testClientSecret)
	k, _ := newTestKey(t)
	reg := openTestRegistry(t, filepath.Join(t.TempDir(), "installations.db"), k)
	err := reg.Put(Installation{TeamID: team, BotToken: Secret(access), RefreshToken: Secret(refresh),
		ExpiresAt: time.Now().Add(expiresIn), AddedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	rot, err := NewRotator(RotatorOptions{TeamID: team, Store: reg, OAuth: slackapi.OAuthOptions{
		APIURL: fakeURL, HTTPClient: fake.Client(), ClientID: testClientID, ClientSecret: testClientSecret}})
	if err != nil {
		t.Fatal(err)
	}
	return &rotatingSetup{fake: fake, reg: reg, rot: rot}
}

// client is a Slack client sending the Rotator's current token, unpaced for tests.
func (s *rotatingSetup) client(t *testing.T) *slackapi.Client {
	t.Helper()
	rates := map[string]float64{}
	for _, m := range slackapi.Methods {
		rates[m] = 6000
	}
	c, err := slackapi.New(slackapi.Options{TokenSource: s.rot.Token, APIURL: fakeURL, HTTPClient: s.fake.Client(), Rates: rates})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (s *rotatingSetup) refreshes() int {
	n := 0
	for _, r := range s.fake.Requests() {
		if r.Method == "oauth.v2.access" {
			n++
		}
	}
	return n
}

// TestRotation48Hours: a call every minute for 48 simulated hours with Run keeping the
// token fresh: no call meets token_expired (no gap in polling), and the token is
// refreshed every 6 h (half its 12 h life), so 8 times.
func TestRotation48Hours(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newRotatingSetup(t, "T0ROTATE")
		c := s.client(t)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- s.rot.Run(ctx) }()
		tokens := map[string]bool{}
		for minute := 0; minute <= 48*60; minute++ {
			if minute > 0 {
				time.Sleep(time.Minute)
				synctest.Wait() // a refresh due now is done before the call
			}
			id, err := c.AuthTest(ctx)
			if slackapi.IsTokenExpired(err) {
				t.Fatalf("minute %d: token_expired: %v", minute, err)
			}
			if err != nil || id.TeamID != "T0ROTATE" {
				t.Fatalf("minute %d: auth.test = %+v, %v", minute, id, err)
			}
			tokens[s.rot.Token()] = true
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		if n := s.refreshes(); n != 8 {
			t.Errorf("%d refreshes in 48 h, want 8 (one per 6 h)", n)
		}
		if len(tokens) != 9 {
			t.Errorf("%d tokens used, want 9 (the first and 8 refreshed)", len(tokens))
		}
		if st, reason := s.rot.State(); st != StateActive || reason != "" {
			t.Errorf("state %s %q", st, reason)
		}
		in, _, err := s.reg.Get("T0ROTATE")
		if err != nil || string(in.BotToken) != s.rot.Token() || in.Refresh != nil {
			t.Errorf("stored %v (err %v): want the token in use and no pending refresh", in, err)
		}
	})
}

// TestExpiredRefreshesOnce: a call met token_expired; Expired refreshes once and the
// call after succeeds. A second Expired for the same failed call, after the refresh,
// makes no request.
func TestExpiredRefreshesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newRotatingSetup(t, "T0EXPIRE")
		c := s.client(t)
		time.Sleep(slackfake.TokenLifetime + time.Second)
		_, err := c.AuthTest(t.Context())
		if !slackapi.IsTokenExpired(err) {
			t.Fatalf("auth.test after 12 h: %v, want token_expired", err)
		}
		at := time.Now()
		if err := s.rot.Expired(t.Context()); err != nil {
			t.Fatalf("Expired: %v", err)
		}
		if _, err := c.AuthTest(t.Context()); err != nil {
			t.Fatalf("auth.test after Expired: %v", err)
		}
		if n := s.refreshes(); n != 1 {
			t.Errorf("%d refreshes, want 1", n)
		}
		if got := s.rot.ExpiresAt(); !got.Equal(at.Add(slackfake.TokenLifetime)) {
			t.Errorf("ExpiresAt %v, want now + 12 h", got)
		}
	})
}

// TestRefreshFailedIsPerInstallation: Slack refusing the refresh marks this
// installation refresh_failed with Slack's code and the deadline, keeps the old token
// in use, and leaves another installation's refreshes alone.
func TestRefreshFailedIsPerInstallation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bad := newRotatingSetup(t, "T0BAD")
		good := newRotatingSetup(t, "T0GOOD")
		bad.rot.oauth.ClientSecret = "wrong"
		old := bad.rot.Token()
		err := bad.rot.Expired(t.Context())
		st, reason := bad.rot.State()
		if err == nil || st != StateRefreshFailed || !strings.Contains(reason, "bad_client_secret") ||
			!strings.Contains(reason, bad.rot.ExpiresAt().UTC().Format(time.RFC3339)) {
			t.Errorf("wrong secret: %v, state %s %q; want refresh_failed naming bad_client_secret and the deadline", err, st, reason)
		}
		if bad.rot.Token() != old {
			t.Error("the token in use changed after a failed refresh")
		}
		if _, err := bad.client(t).AuthTest(t.Context()); err != nil {
			t.Errorf("the old token stopped working: %v", err)
		}
		if in, _, _ := bad.reg.Get("T0BAD"); in.Refresh != nil {
			t.Error("a refused refresh left its pending record")
		}
		if err := good.rot.Expired(t.Context()); err != nil {
			t.Errorf("the other installation: %v", err)
		}
		if st, _ := good.rot.State(); st != StateActive {
			t.Errorf("the other installation is %s", st)
		}
	})
}

// TestTransientRefreshFailureRetries: a 5xx from oauth.v2.access leaves the state
// active (the token works) and Run tries again with backoff, with the same refresh
// token (its answer may have been lost), until it succeeds.
func TestTransientRefreshFailureRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newRotatingSetup(t, "T0FLAKY")
		s.fake.InjectFault(slackfake.Fault{Method: "oauth.v2.access", Kind: slackfake.Status5xx, Times: 3})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- s.rot.Run(ctx) }()
		time.Sleep(slackfake.TokenLifetime/2 + time.Second)
		synctest.Wait()
		if st, reason := s.rot.State(); st != StateActive || !strings.Contains(reason, "http_503") {
			t.Errorf("during the failures: %s %q; want active with the transient reason", st, reason)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if st, reason := s.rot.State(); st != StateActive || reason != "" {
			t.Errorf("after the retries: %s %q, want active", st, reason)
		}
		if n := s.refreshes(); n != 4 {
			t.Errorf("%d exchanges, want 3 failed and 1 good", n)
		}
		if _, err := s.client(t).AuthTest(ctx); err != nil {
			t.Errorf("auth.test with the refreshed token: %v", err)
		}
		cancel()
		<-done
	})
}

// TestStoredExpiryTooFarAheadRefreshesNow: an ExpiresAt more than 12 h ahead cannot
// be true (a wrong clock wrote it): Run refreshes at once.
func TestStoredExpiryTooFarAheadRefreshesNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newRotatingSetup(t, "T0CLOCK")
		err := s.reg.Update("T0CLOCK", func(in *Installation, _ bool) error {
			in.ExpiresAt = time.Now().Add(30 * 24 * time.Hour)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		rot, err := NewRotator(RotatorOptions{TeamID: "T0CLOCK", Store: s.reg, OAuth: s.rot.oauth})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- rot.Run(ctx) }()
		time.Sleep(time.Second)
		synctest.Wait()
		if n := s.refreshes(); n != 1 {
			t.Errorf("%d refreshes, want 1 at once", n)
		}
		if got := rot.ExpiresAt(); time.Until(got) > slackfake.TokenLifetime {
			t.Errorf("ExpiresAt still %v ahead", time.Until(got))
		}
		cancel()
		<-done
	})
}

// TestNoRotationRunWaits: an installation without a refresh token is never refreshed;
// Run only waits for its context.
func TestNoRotationRunWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, _ := newTestKey(t)
		reg := openTestRegistry(t, filepath.Join(t.TempDir(), "installations.db"), k)
		if err := reg.Put(Installation{TeamID: "T0PLAIN", BotToken: "xoxb-plain"}); err != nil {
			t.Fatal(err)
		}
		rot, err := NewRotator(RotatorOptions{TeamID: "T0PLAIN", Store: reg})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 48*time.Hour)
		defer cancel()
		if err := rot.Run(ctx); err != nil || rot.Token() != "xoxb-plain" {
			t.Errorf("Run = %v, token %q", err, rot.Token())
		}
		if err := rot.Expired(t.Context()); err == nil {
			t.Error("Expired without a refresh token succeeded")
		}
	})
}
