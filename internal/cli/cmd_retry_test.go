package cli

import (
	"context"
	"testing"

	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

// `slackpoll retry` makes the conversations waiting after an error due at the next
// tick, from the store file and through the daemon's API; one that waits for
// nothing is an error that says so.
func TestRetryFromTheFileAndThroughTheAPI(t *testing.T) {
	f := closedStore(t)
	cfg := writeConfig(t, cfgOpts{store: f.Store.Path(), convs: f.Configured})
	code, out, errOut := runCLI(context.Background(), "retry", "--config", cfg, "G0SECRET0")
	if code != ExitOK {
		t.Fatalf("retry: exit %d: %s", code, errOut)
	}
	wantContains(t, "retry stdout", out, "retrying at the next tick: G0SECRET0")
	code, _, errOut = runCLI(context.Background(), "retry", "--config", cfg, readfixture.General)
	if code != ExitRuntime {
		t.Errorf("retry of an ok conversation: exit %d, want %d", code, ExitRuntime)
	}
	wantContains(t, "retry stderr", errOut, "not waiting for a retry: "+readfixture.General)

	g := readfixture.New(t, readfixture.Options{})
	addr := daemonAPI(t, g, "")
	cfg = writeConfig(t, cfgOpts{store: g.Store.Path(), listen: addr, convs: g.Configured})
	code, out, errOut = runCLI(context.Background(), "retry", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("retry through the API: exit %d: %s", code, errOut)
	}
	wantContains(t, "retry stdout", out, "G0SECRET0", "C0OUTSIDE")
}
