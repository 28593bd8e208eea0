package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/status"
)

// lockedBuffer is a bytes.Buffer a command writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startCLI runs a command line until ctx ends; the returned channel gets its exit status.
func startCLI(ctx context.Context, out, errOut io.Writer, args ...string) <-chan int {
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, args, Env{Stdout: out, Stderr: errOut, Getenv: func(string) string { return "" }})
	}()
	return done
}

// The README's quickstart: `demo --listen` serves a changing workspace and writes a
// config; `run` with that config polls it; status, export, track, backup and the API
// answer from "another terminal" while run holds the store.
func TestExplorableDemoWithRunAgainstIt(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dir := filepath.Join(t.TempDir(), "demo")
	api := freeAddr(t)
	var demoOut, demoErr, runOut, runErr lockedBuffer
	demoDone := startCLI(ctx, &demoOut, &demoErr, "demo", "--listen", "127.0.0.1:0", "--api", api, "--dir", dir, "--messages", "150", "--every", "20ms")
	cfg := filepath.Join(dir, "slackpoll.yaml")
	waitFor(t, "the demo's config", func() bool { _, err := os.Stat(cfg); return err == nil })
	// The guide is printed after the config is written: wait for its last line.
	waitFor(t, "the demo's guide", func() bool { return strings.Contains(demoOut.String(), "Changing the workspace every") })
	wantContains(t, "demo output", demoOut.String(), "export SLACKPOLL_CONFIG="+cfg, " run\n", " status\n", "track --record ticket-1 ")

	runDone := startCLI(ctx, &runOut, &runErr, "run", "--config", cfg)
	var rep status.Report
	waitFor(t, "a tick of run, in status", func() bool {
		code, out, _ := runCLI(ctx, "status", "--json", "--config", cfg)
		rep = status.Report{}
		return code == ExitOK && json.Unmarshal([]byte(out), &rep) == nil && rep.DaemonRunning && rep.LastTick != nil
	})
	if rep.Coverage.Tracked == 0 {
		t.Errorf("status after a tick: nothing tracked: %+v", rep.Coverage)
	}

	code, out, errOut := runCLI(ctx, "status", "--config", cfg)
	if code != ExitOK || !strings.Contains(out, "status of the running daemon at http://"+api) {
		t.Errorf("status = %d, %s (stderr %s)", code, out, errOut)
	}
	code, out, errOut = runCLI(ctx, "export", "--config", cfg)
	if code != ExitOK || !strings.Contains(out, `{"kind":"message"`) {
		t.Errorf("export = %d, stderr %s, %d bytes", code, errOut, len(out))
	}
	// The older message the demo suggests tracking can be tracked through the daemon.
	_, suggestion, _ := strings.Cut(demoOut.String(), "track --record ticket-1 ")
	if f := strings.Fields(suggestion); len(f) >= 2 {
		if code, out, errOut := runCLI(ctx, "track", "--config", cfg, "--record", "ticket-1", f[0], f[1]); code != ExitOK {
			t.Errorf("track %s %s = %d, %s %s", f[0], f[1], code, out, errOut)
		}
	} else {
		t.Errorf("no track suggestion in the demo's output:\n%s", demoOut.String())
	}
	backup := filepath.Join(t.TempDir(), "b.db")
	if code, _, errOut := runCLI(ctx, "backup", "--config", cfg, backup); code != ExitOK {
		t.Errorf("backup = %d, stderr %s", code, errOut)
	}
	resp, err := http.Get("http://" + api + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !bytes.Contains(metrics, []byte("slackpoll_ticks_total")) {
		t.Errorf("/metrics lacks slackpoll_ticks_total")
	}
	// The change lines name messages the user can show.
	waitFor(t, "a change line", func() bool { return strings.Contains(demoOut.String(), "post by ") })

	cancel()
	for what, done := range map[string]<-chan int{"run": runDone, "demo": demoDone} {
		select {
		case code := <-done:
			if code != ExitOK {
				t.Errorf("%s exited %d after the signal; stderr:\n%s%s", what, code, runErr.String(), demoErr.String())
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s did not stop within 10 s of the signal", what)
		}
	}
}

func TestExplorableDemoKeepsAConfigItDidNotWrite(t *testing.T) {
	dir := t.TempDir()
	mine := []byte("store: {path: precious.db}\n")
	if err := os.WriteFile(filepath.Join(dir, "slackpoll.yaml"), mine, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t.Context(), "demo", "--listen", "127.0.0.1:0", "--dir", dir)
	if code != ExitRuntime || !strings.Contains(errOut, "was not written by the demo") {
		t.Errorf("demo over a config of the user's = %d, %s", code, errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "slackpoll.yaml")); !bytes.Equal(got, mine) {
		t.Errorf("the user's config was changed to %s", got)
	}
}
