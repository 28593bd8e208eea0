package crashtest

import (
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/compliance"
)

// TestRestartCheckSeesLostPacingState shows that CheckRestarts, as TestCrashSafety
// runs it, would catch a daemon that forgets its pacing across a restart: the same
// kills, but with the store's pacing bucket emptied after each, make a restarted
// daemon call auth.test at once, less than a spacing after the previous process did.
func TestRestartCheckSeesLostPacingState(t *testing.T) {
	slackpollBinary(t)
	e := newEnv(t, 3)
	cfg := e.writeConfig("slackpoll.yaml", "")
	// auth.test at 6 a minute (10 s apart) rather than the harness's 120: a restarted
	// process reaches its first call in a few hundred ms on a loaded machine, which
	// at 500 ms apart fell within the arrival jitter and hid the lost state (the
	// check missed it 3 times in 4 on a 2-core machine at load average 15).
	const authRate = 6.0
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	slow := strings.Replace(string(b), fmt.Sprintf("%s: %g", rm.MethodAuthTest, clientRates[rm.MethodAuthTest]), fmt.Sprintf("%s: %g", rm.MethodAuthTest, authRate), 1)
	if slow == string(b) {
		t.Fatal("the harness's config does not set the auth.test rate as expected")
	}
	if err := os.WriteFile(cfg, []byte(slow), 0o600); err != nil {
		t.Fatal(err)
	}
	var restarts []time.Time
	for i := range 4 {
		sawAuth := make(chan struct{}, 1)
		e.setHook(func(method string, _ url.Values) {
			if method == rm.MethodAuthTest {
				select {
				case sawAuth <- struct{}{}:
				default:
				}
			}
		})
		p := e.start(cfg)
		if i > 0 {
			restarts = append(restarts, p.started)
		}
		select {
		case <-sawAuth:
		case <-time.After(10 * time.Second):
			p.kill(t)
			t.Fatalf("no auth.test within 10 s:\n%s", p.out.tail(3000))
		}
		time.Sleep(50 * time.Millisecond)
		p.kill(t)
		forgetPacing(t, e.storePath)
	}
	spacing := map[string]time.Duration{rm.MethodAuthTest: compliance.Spacing(authRate)}
	r := compliance.CheckRestarts(e.rec.Calls(), restarts, spacing, jitter)
	if len(r.Violations) == 0 {
		t.Fatalf("a daemon without its pacing state called auth.test on time after every restart? %+v", r)
	}
	t.Logf("caught: %s", r.Violations[0])
}

// forgetPacing empties the pacing bucket of a store (see internal/boltstore/doc.go).
func forgetPacing(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket([]byte("pacing")); err != nil {
			return err
		}
		_, err := tx.CreateBucket([]byte("pacing"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
