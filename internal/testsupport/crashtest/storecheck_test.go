package crashtest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/compliance"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

// afterKill is what checkStore learned from a store left by a dead process.
type afterKill struct {
	threads Threads
	// lost are indices (in the Recorder's log) of 429s the dead process never acted on.
	lost []int
}

// checkStore opens the store a killed daemon left behind, exactly as the next daemon
// will, and checks it: it opens (the flock died with the process), bbolt's check
// passes, the thread invariants hold, and every reply set is before or truth whole.
// Read-only, so the check changes nothing the next process sees.
func (e *env) checkStore(killAt time.Time, before, truth Threads) (afterKill, []string) {
	e.t.Helper()
	if _, err := os.Stat(e.storePath); errors.Is(err, fs.ErrNotExist) {
		return afterKill{threads: before}, nil // killed before it created the store
	}
	s, err := boltstore.Open(e.storePath, boltstore.Options{ReadOnly: true, LockTimeout: 2 * time.Second})
	if errors.Is(err, boltstore.ErrLocked) {
		return afterKill{}, []string{"store still locked after the daemon died: " + err.Error()}
	}
	if err != nil {
		return afterKill{}, []string{"store does not open after a kill: " + err.Error()}
	}
	defer s.Close()
	var bad []string
	for _, p := range storetest.Check(s.DB()) {
		bad = append(bad, "bbolt check: "+p)
	}
	threads, tbad, err := CheckThreads(s)
	if err != nil {
		return afterKill{}, append(bad, "reading the store: "+err.Error())
	}
	bad = append(bad, tbad...)
	bad = append(bad, CheckWholeSets(before, threads, truth)...)
	lost, err := e.lostRateLimits(s, killAt)
	if err != nil {
		bad = append(bad, err.Error())
	}
	return afterKill{threads: threads, lost: lost}, bad
}

// lostRateLimits finds, per method, a 429 that was the last call before the kill and
// whose wait the store does not hold: the server answered, but the process died
// before it saw or saved the answer, so no one could honour it. A 429 whose wait was
// saved is not lost — the next process must honour it, and CheckRetryAfter holds it
// to that.
func (e *env) lostRateLimits(s *boltstore.Store, killAt time.Time) ([]int, error) {
	calls := e.rec.Calls()
	var lost []int
	err := s.View(func(tx rm.Tx) error {
		for m, rate := range clientRates {
			i := len(calls) - 1
			for i >= 0 && (calls[i].Method != m || !calls[i].Time.Before(killAt)) {
				i--
			}
			if i < 0 || !calls[i].RateLimited() {
				continue
			}
			c := calls[i]
			wait := max(compliance.Spacing(rate), time.Second)
			if c.HasRetryAfter {
				wait = c.RetryAfter
			}
			st, ok, err := tx.MethodState(m)
			if err != nil {
				return fmt.Errorf("pacing state of %s: %w", m, err)
			}
			if !ok || st.NotBefore.Before(c.Time.Add(wait)) {
				lost = append(lost, i)
			}
		}
		return nil
	})
	return lost, err
}

// failf reports store violations with what the test was doing.
func failf(t *testing.T, what string, bad []string) {
	t.Helper()
	if len(bad) == 0 {
		return
	}
	if len(bad) > 20 {
		bad = append(bad[:20], fmt.Sprintf("… and %d more", len(bad)-20))
	}
	t.Errorf("%s: %d violation(s):", what, len(bad))
	for _, b := range bad {
		t.Errorf("  %s", b)
	}
}
