package crashtest

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGHUP reloads `slackpoll run`'s config instead of killing it (it exited at once
// with status 129 and no log line): log.level takes effect, a setting that needs a
// restart is named, a config that no longer loads changes nothing, and the daemon
// goes on ticking and stops on SIGTERM as before.
func TestSIGHUPReloadsTheConfigAndTheDaemonGoesOn(t *testing.T) {
	slackpollBinary(t)
	e := newEnv(t, 3)
	cfg := e.writeConfig("slackpoll.yaml", "")
	p := e.start(cfg)
	defer func() {
		if !p.exited() {
			p.kill(t)
		}
	}()
	if !waitFor(30*time.Second, func() bool { _, err := os.Stat(e.storePath); return err == nil }) {
		t.Fatalf("no store after 30 s:\n%s", p.out.tail(3000))
	}
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(strings.Replace(string(b), "level: warn", "level: debug", 1), "interval: 1s", "interval: 2s", 1)
	if err := os.WriteFile(cfg, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	hup := func() { _ = p.cmd.Process.Signal(syscall.SIGHUP) }
	hup()
	if !waitFor(10*time.Second, func() bool { return strings.Contains(p.out.tail(1<<20), "msg=\"slack call\"") }) {
		t.Fatalf("no debug line within 10 s of SIGHUP with log.level: debug (exited: %v):\n%s", p.exited(), p.out.tail(3000))
	}
	out := p.out.tail(1 << 20)
	for _, want := range []string{"SIGHUP: config reloaded", `applied="log.level=debug"`, "take effect only at a restart", "settings=tick"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, p.out.tail(3000))
		}
	}
	if err := os.WriteFile(cfg, []byte(changed+"\nno_such_key: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hup()
	if !waitFor(10*time.Second, func() bool { return strings.Contains(p.out.tail(1<<20), "SIGHUP: config not reloaded") }) {
		t.Errorf("a config that no longer loads is not reported:\n%s", p.out.tail(3000))
	}
	time.Sleep(2 * time.Second)
	if p.exited() {
		t.Fatalf("the daemon exited after SIGHUP (%v):\n%s", p.cmd.ProcessState, p.out.tail(3000))
	}
	if code, took := p.terminate(5 * time.Second); code != 0 {
		t.Fatalf("exit status %d after SIGTERM (%v), want 0:\n%s", code, took, p.out.tail(3000))
	}
}
