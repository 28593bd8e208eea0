package cli

import (
	"testing"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

const newTS = "1790000000.000300"

func TestTrackThroughTheDaemonWhileItHoldsTheStore(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured, listen: daemonAPI(t, f, "t0k"), token: "t0k"})
	code, out, errOut := runCLI(t.Context(), "track", "--config", cfg, "--record", "ticket-7", readfixture.General, newTS)
	if code != ExitOK {
		t.Fatalf("track = %d, stderr %s", code, errOut)
	}
	wantContains(t, "track", out, "tracking C0GENERAL "+newTS+" as ticket-7")
	err := f.Store.View(func(tx rm.Tx) error {
		ref, ok, err := tx.Record("ticket-7")
		if err != nil {
			return err
		}
		m, mok, err := tx.Message(readfixture.General, newTS)
		if !ok || ref.TS != newTS || !mok || m.Record != "ticket-7" || m.LastPolledAt != nil {
			t.Errorf("after track: record %v %+v, message %v %+v; want both, never polled", ok, ref, mok, m)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Another record for a message that has one: exit 1, the daemon's reason.
	code, _, errOut = runCLI(t.Context(), "track", "--config", cfg, "--record", "ticket-8", readfixture.General, newTS)
	if code != ExitRuntime {
		t.Errorf("conflicting track = %d, want %d", code, ExitRuntime)
	}
	wantContains(t, "stderr", errOut, "track:", `already tracked as record "ticket-7"`)
}

func TestTrackFailsAtOnceWhenLockedWithoutAPI(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured})
	code, _, errOut := runCLI(t.Context(), "track", "--config", cfg, readfixture.General, newTS)
	if code != ExitRuntime {
		t.Fatalf("track on a locked store = %d, want %d", code, ExitRuntime)
	}
	wantContains(t, "stderr", errOut, "is locked by another process", "set http.listen")
}

// Without http.listen, export cannot reach the daemon that holds the store; with it,
// export reads through the API (TestBackupAndExportThroughTheDaemonWhileItHoldsTheStore).
func TestExportWhileLockedWithoutAPISaysWhy(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured})
	code, out, errOut := runCLI(t.Context(), "export", "--config", cfg)
	if code != ExitRuntime || out != "" {
		t.Fatalf("export on a locked store = %d with %d bytes out, want %d and nothing", code, len(out), ExitRuntime)
	}
	wantContains(t, "stderr", errOut, "is locked by another process", "set http.listen")
}

func TestExportReadsTheStore(t *testing.T) {
	f := closedStore(t)
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured})
	code, out, errOut := runCLI(t.Context(), "export", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("export = %d, stderr %s", code, errOut)
	}
	wantContains(t, "export", out, `"record":"ticket-42"`, `"kind":"user","team_id":"T0SLACKPL","id":"U0BEE0000"`)
}

func TestAPIBaseURLAndLoopback(t *testing.T) {
	for _, tc := range []struct {
		listen, url string
		loopback    bool
	}{
		{"127.0.0.1:8089", "http://127.0.0.1:8089", true},
		{"localhost:8089", "http://localhost:8089", true},
		{"[::1]:8089", "http://[::1]:8089", true},
		{":8089", "http://127.0.0.1:8089", false},
		{"0.0.0.0:8089", "http://127.0.0.1:8089", false},
		{"[::]:8089", "http://[::1]:8089", false},
		{"10.1.2.3:8089", "http://10.1.2.3:8089", false},
		{"slackpoll.internal:8089", "http://slackpoll.internal:8089", false},
	} {
		if got := apiBaseURL(tc.listen); got != tc.url {
			t.Errorf("apiBaseURL(%q) = %q, want %q", tc.listen, got, tc.url)
		}
		if got := isLoopback(tc.listen); got != tc.loopback {
			t.Errorf("isLoopback(%q) = %v, want %v", tc.listen, got, tc.loopback)
		}
	}
}
