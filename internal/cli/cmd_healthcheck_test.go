package cli

import (
	"context"
	"testing"

	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

// `slackpoll healthcheck` is the distroless image's health check (no curl there):
// exit 0 while the daemon answers /readyz, 1 when it answers 503 or nothing, 2
// without http.listen.
func TestHealthcheck(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	addr := daemonAPI(t, f, "s3cret")
	cfg := writeConfig(t, cfgOpts{store: f.Store.Path(), listen: addr, token: "s3cret", convs: f.Configured})
	if code, out, errOut := runCLI(context.Background(), "healthcheck", "--config", cfg); code != ExitOK {
		t.Errorf("healthcheck of a ready daemon: exit %d: %s %s", code, out, errOut)
	}
	if code, _, errOut := runCLI(context.Background(), "healthcheck", "--live", "--config", cfg); code != ExitOK {
		t.Errorf("healthcheck --live: exit %d: %s", code, errOut)
	}
	wrong := writeConfig(t, cfgOpts{store: f.Store.Path(), listen: addr, token: "wrong", convs: f.Configured})
	if code, _, _ := runCLI(context.Background(), "healthcheck", "--config", wrong); code != ExitRuntime {
		t.Errorf("healthcheck with the wrong token: exit %d, want %d", code, ExitRuntime)
	}
	nobody := writeConfig(t, cfgOpts{store: f.Store.Path(), listen: freeAddr(t), convs: f.Configured})
	code, _, errOut := runCLI(context.Background(), "healthcheck", "--config", nobody)
	if code != ExitRuntime {
		t.Errorf("healthcheck with no daemon: exit %d, want %d", code, ExitRuntime)
	}
	wantContains(t, "healthcheck stderr", errOut, "did not answer")
	off := writeConfig(t, cfgOpts{store: f.Store.Path(), convs: f.Configured})
	if code, _, _ := runCLI(context.Background(), "healthcheck", "--config", off); code != ExitUsage {
		t.Errorf("healthcheck without http.listen: exit %d, want %d", code, ExitUsage)
	}
}
