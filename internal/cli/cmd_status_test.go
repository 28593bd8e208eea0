package cli

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/status"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

func TestStatusReadsTheStoreWhenNoDaemonHoldsIt(t *testing.T) {
	f := closedStore(t)
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured})
	code, out, errOut := runCLI(t.Context(), "status", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("status = %d, stderr %s", code, errOut)
	}
	wantContains(t, "status", out,
		"status of store "+f.Path+" (no daemon holds it)",
		"C0GENERAL  general  public   ok",
		"G0SECRET0: missing_scope: add scope groups:history",
		"C0OUTSIDE: not_in_channel: invite the bot",
		"tracked: 4 messages (1 never polled)",
		"last tick: 2026-11-30T10:00:01Z",
		"next tick: none scheduled",
	)
}

func TestStatusJSON(t *testing.T) {
	f := closedStore(t)
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured})
	code, out, errOut := runCLI(t.Context(), "status", "--json", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("status --json = %d, stderr %s", code, errOut)
	}
	var r status.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("status --json is not a report: %v\n%s", err, out)
	}
	if len(r.Conversations) != 3 || r.Coverage.Tracked != 4 || r.DaemonRunning || r.IntervalSeconds != 60 {
		t.Errorf("report = %+v, want 3 conversations, 4 tracked, no daemon, 60 s interval", r)
	}
}

func TestStatusAsksTheDaemonWhileItHoldsTheStore(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{}) // keeps the store locked
	addr := daemonAPI(t, f, "tok-123")
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured, listen: addr, token: "tok-123"})
	code, out, errOut := runCLI(t.Context(), "status", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("status = %d, stderr %s", code, errOut)
	}
	wantContains(t, "status", out, "status of the running daemon at http://"+addr, "G0SECRET0: missing_scope: add scope groups:history", "next tick: 2026-11-30T10:01:01Z")
}

func TestStatusFailsAtOnceWhenLockedWithoutAPI(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured})
	code, _, errOut := runCLI(t.Context(), "status", "--config", cfg)
	if code != ExitRuntime {
		t.Fatalf("status on a locked store = %d, want %d", code, ExitRuntime)
	}
	wantContains(t, "stderr", errOut, "is locked by another process", "slackpoll run", "set http.listen")
}

func TestStatusSaysWhenTheDaemonsAPIDoesNotAnswer(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody listens there now
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured, listen: addr, token: "tok-123"})
	code, _, errOut := runCLI(t.Context(), "status", "--config", cfg)
	if code != ExitRuntime {
		t.Fatalf("status = %d, want %d", code, ExitRuntime)
	}
	wantContains(t, "stderr", errOut, "is locked by another process", "did not answer", "http://"+addr)
	if strings.Contains(errOut, "tok-123") {
		t.Errorf("stderr reveals the http token: %s", errOut)
	}
}

func TestStatusWithAWrongToken(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	addr := daemonAPI(t, f, "right-token")
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured, listen: addr, token: "wrong-token"})
	code, out, errOut := runCLI(t.Context(), "status", "--config", cfg)
	if code != ExitRuntime {
		t.Fatalf("status = %d, want %d", code, ExitRuntime)
	}
	wantContains(t, "stderr", errOut, "refused the token", "http.token")
	if strings.Contains(errOut+out, "right-token") || strings.Contains(errOut+out, "wrong-token") {
		t.Errorf("output reveals a token: %s %s", out, errOut)
	}
}

// With http.listen set, a read command asks the running daemon as soon as it finds the
// store locked: it does not first wait for the lock (here made to wait an hour, so that
// a wait would show as a hang, reported after a minute).
func TestReadCommandsAskTheDaemonWithoutWaitingForTheLock(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{}) // keeps the store locked
	addr := daemonAPI(t, f, "tok-123")
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured, listen: addr, token: "tok-123"})
	old := readLockTimeout
	readLockTimeout = time.Hour
	t.Cleanup(func() { readLockTimeout = old })
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runCLI(t.Context(), "status", "--config", cfg)
		done <- result{code, out, errOut}
	}()
	select {
	case r := <-done:
		if r.code != ExitOK {
			t.Fatalf("status = %d, stderr %s", r.code, r.errOut)
		}
		wantContains(t, "status", r.out, "status of the running daemon at http://"+addr)
	case <-time.After(time.Minute):
		t.Fatal("status waited for the store's lock instead of asking the daemon's API")
	}
}
