package installs

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/slackapi"
	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// The kill test's child "daemon" is this test binary run again with these variables
// (TestMain): it opens the Registry, builds a Rotator against the parent's fake and
// either refreshes (killing itself at SLACKPOLL_TEST_KILL_AT) or recovers, then prints
// its state as JSON.
const (
	envChild  = "SLACKPOLL_TEST_INSTALLS_CHILD" // "refresh" or "recover"
	envKillAt = "SLACKPOLL_TEST_KILL_AT"        // a step name; "" = no kill
	envDB     = "SLACKPOLL_TEST_INSTALLS_DB"
	envURL    = "SLACKPOLL_TEST_INSTALLS_URL"
	envTeam   = "SLACKPOLL_TEST_INSTALLS_TEAM"
)

// stepSent is the kill point between sending the request and reading the answer. It
// is not a hook of refresh: the child's connection kills the process right after the
// request's bytes are written to the socket.
const stepSent = "sent"

func TestMain(m *testing.M) {
	if mode := os.Getenv(envChild); mode != "" {
		os.Exit(childMain(mode))
	}
	os.Exit(m.Run())
}

// childResult is what a child prints.
type childResult struct {
	State, Reason, Err string
}

func killSelf() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}

// killConn kills the process right after writing a request to oauth.v2.access.
type killConn struct{ net.Conn }

func (c killConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if bytes.Contains(p, []byte("oauth.v2.access")) {
		killSelf()
	}
	return n, err
}

func childMain(mode string) int {
	fail := func(err error) int {
		_ = json.NewEncoder(os.Stdout).Encode(childResult{Err: err.Error()})
		return 2
	}
	key, err := LoadKey(os.Getenv, "")
	if err != nil {
		return fail(err)
	}
	reg, err := OpenRegistry(os.Getenv(envDB), key)
	if err != nil {
		return fail(err)
	}
	defer func() { _ = reg.Close() }()
	killAt := os.Getenv(envKillAt)
	testHook = func(step string) {
		if step == killAt {
			killSelf()
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if killAt == stepSent {
		d := &net.Dialer{}
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return killConn{c}, nil
		}
	}
	rot, err := NewRotator(RotatorOptions{TeamID: os.Getenv(envTeam), Store: reg, OAuth: slackapi.OAuthOptions{
		APIURL: os.Getenv(envURL), HTTPClient: &http.Client{Transport: tr, Timeout: 10 * time.Second},
		ClientID: testClientID, ClientSecret: testClientSecret}})
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	var res childResult
	if err := rot.Recover(ctx); err != nil {
		res.Err = err.Error()
	}
	if mode == "refresh" && res.Err == "" {
		if err := rot.Expired(ctx); err != nil {
			res.Err = err.Error()
		}
	}
	res.State, res.Reason = rot.State()
	_ = json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

// killHarness is the parent's side: the fake on 127.0.0.1, the key, the registry path.
type killHarness struct {
	t    *testing.T
	fake *slackfake.Server
	srv  *httptest.Server
	key  string // base64
	db   string
	team string
}

// run starts a child in mode and waits for it. killAt != "" expects it to die of
// SIGKILL; otherwise it must exit 0 with a result.
func (h *killHarness) run(mode, killAt string) childResult {
	h.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+mode, envKillAt+"="+killAt, envDB+"="+h.db,
		envURL+"="+h.srv.URL+"/api/", envTeam+"="+h.team, KeyEnv+"="+h.key)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if killAt != "" {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			h.t.Fatalf("child with kill at %s: %v, want death by SIGKILL; out %s err %s", killAt, err, out.String(), stderr.String())
		}
		return childResult{}
	}
	var res childResult
	if err != nil || json.Unmarshal(out.Bytes(), &res) != nil {
		h.t.Fatalf("child %s: %v; out %s err %s", mode, err, out.String(), stderr.String())
	}
	return res
}

// stored reads the installation as the parent (the child has exited: no lock).
func (h *killHarness) stored() Installation {
	h.t.Helper()
	k, err := LoadKey(func(string) string { return h.key }, "")
	if err != nil {
		h.t.Fatal(err)
	}
	reg, err := OpenRegistry(h.db, k)
	if err != nil {
		h.t.Fatal(err)
	}
	defer func() { _ = reg.Close() }()
	in, found, err := reg.Get(h.team)
	if err != nil || !found {
		h.t.Fatalf("stored installation: %v, %v", found, err)
	}
	return in
}

// reinstall is the documented remedy: new tokens from a re-install, PUT into the
// registry.
func (h *killHarness) reinstall() {
	h.t.Helper()
	access, refresh, expiresIn := h.fake.EnableRotation(testClientID, testClientSecret)
	k, _ := LoadKey(func(string) string { return h.key }, "")
	reg, err := OpenRegistry(h.db, k)
	if err != nil {
		h.t.Fatal(err)
	}
	defer func() { _ = reg.Close() }()
	err = reg.Put(Installation{TeamID: h.team, BotToken: Secret(access), RefreshToken: Secret(refresh), ExpiresAt: time.Now().Add(expiresIn)})
	if err != nil {
		h.t.Fatal(err)
	}
}

// authOK checks that Slack (the fake) accepts token.
func (h *killHarness) authOK(token Secret, what string) {
	h.t.Helper()
	c, err := slackapi.New(slackapi.Options{Token: string(token), APIURL: h.srv.URL + "/api/"})
	if err != nil {
		h.t.Fatal(err)
	}
	id, err := c.AuthTest(context.Background())
	if err != nil || id.TeamID != h.team {
		h.t.Errorf("%s: auth.test = %+v, %v; want the workspace's identity", what, id, err)
	}
}

// TestKillDuringRefresh SIGKILLs a child daemon at every step of a refresh, six times
// each in a chain of consecutive refreshes (36 kills), restarts it without the kill
// and checks that the workspace is never locked out.
//
// Every step but two is recovered in full: before the intent nothing happened; after
// it, the restarted child retries the exchange with the unspent refresh token; after
// the write the new tokens are stored. The two others are the same window: Slack has
// processed the exchange (spent the single-use refresh token and issued a new one) and
// the answer dies with the process, either still in flight ("sent": the request's
// bytes reached the socket before the kill, and the fake on loopback always processes
// them) or read and not yet written ("answered"). Strict single use makes this the one
// window no client can close: the new refresh token exists only in the lost answer,
// and Slack will not answer the spent one again. What the protocol guarantees there
// is the documented fallback: the old access token still works (refreshes happen at
// half-life, so it has hours left), the state is refresh_failed with the deadline, and
// a re-install (new tokens PUT) restores the rotation.
func TestKillDuringRefresh(t *testing.T) {
	if testing.Short() {
		t.Skip("starts about 100 child processes")
	}
	raw := make([]byte, KeySize)
	_, _ = rand.Read(raw)
	fake := slackfake.New(slackfake.Options{TeamID: "T0KILL"})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	h := &killHarness{t: t, fake: fake, srv: srv, key: base64.StdEncoding.EncodeToString(raw),
		db: filepath.Join(t.TempDir(), "installations.db"), team: "T0KILL"}
	h.reinstall()

	steps := []string{stepBeforeIntent, stepAfterIntent, stepSent, stepAnswered, stepWritten, stepSwapped}
	kills := 0
	for round := range 6 {
		for _, step := range steps {
			what := fmt.Sprintf("round %d, kill at %s", round, step)
			before := h.stored()
			h.run("refresh", step)
			kills++
			res := h.run("recover", "")
			after := h.stored()
			h.authOK(after.BotToken, what+": the stored token after restart")
			if res.Err != "" && res.State == StateActive {
				t.Errorf("%s: recovery error %s", what, res.Err)
			}
			// Slack's one live refresh token is not the stored one: an answer was lost.
			lost := fake.RefreshToken() != string(after.RefreshToken)
			switch step {
			case stepSent, stepAnswered:
				deadline := before.ExpiresAt.UTC().Format(time.RFC3339)
				if !lost || res.State != StateRefreshFailed || !strings.Contains(res.Reason, deadline) ||
					!strings.Contains(res.Reason, "re-install") || !strings.Contains(res.Reason, "invalid_refresh_token") {
					t.Errorf("%s: lost %v, state %s %q; want refresh_failed with invalid_refresh_token and the deadline %s",
						what, lost, res.State, res.Reason, deadline)
				}
				if after.BotToken != before.BotToken || !after.ExpiresAt.Equal(before.ExpiresAt) {
					t.Errorf("%s: the stored access token changed", what)
				}
				h.authOK(before.BotToken, what+": the old access token")
				h.reinstall()
			default:
				if lost || res.State != StateActive || res.Reason != "" {
					t.Errorf("%s: lost %v, state %s %q; want active", what, lost, res.State, res.Reason)
				}
				if after.Refresh != nil {
					t.Errorf("%s: a pending refresh left after recovery", what)
				}
				if step == stepWritten || step == stepSwapped || step == stepAfterIntent {
					if after.RefreshToken == before.RefreshToken {
						t.Errorf("%s: no refresh happened", what)
					}
				}
			}
			// Never locked out: the next refresh succeeds.
			cur := h.stored()
			next := h.run("refresh", "")
			got := h.stored()
			if next.State != StateActive || next.Err != "" || got.RefreshToken == cur.RefreshToken {
				t.Errorf("%s: the next refresh: %+v", what, next)
			}
			h.authOK(got.BotToken, what+": the token of the next refresh")
			if t.Failed() {
				t.FailNow()
			}
		}
	}
	if kills < 30 {
		t.Errorf("%d kills, want at least 30", kills)
	}
}
