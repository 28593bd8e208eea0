package crashtest

import (
	"testing"
	"time"
)

// TestSIGTERMWithCallInFlight stops `slackpoll run` with SIGTERM while a call is held
// in flight — a thread's second page, so that a thread sync is also cut short — and
// expects exit status 0 within 5 s (README, "Commands") and a store with nothing partial.
func TestSIGTERMWithCallInFlight(t *testing.T) {
	slackpollBinary(t)
	e := newEnv(t, 2)
	truth := TruthThreads(e.fake.Truth())
	held := e.aim(killPlan{kind: killMidThread})
	p := e.start(e.writeConfig("slackpoll.yaml", ""))
	select {
	case what := <-held:
		t.Logf("held in flight: %s", what)
	case <-time.After(30 * time.Second):
		p.kill(t)
		t.Fatalf("no thread's second page was requested within 30 s:\n%s", p.out.tail(3000))
	}
	code, took := p.terminate(5 * time.Second)
	if code != 0 {
		t.Fatalf("exit status %d after SIGTERM (%v), want 0 within 5 s:\n%s", code, took, p.out.tail(3000))
	}
	t.Logf("exit 0 in %v", took.Round(time.Millisecond))
	_, bad := e.checkStore(time.Now(), Threads{}, truth)
	failf(t, "after SIGTERM", bad)
}
