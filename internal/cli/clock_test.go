package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/status"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

// slackBehind is the local clock's lead on Slack's in these tests: the host's clock
// jumped 8 days ahead (a wrong RTC, a resumed VM), past changes.retention (7 days).
const slackBehind = 8 * 24 * time.Hour

// skewedDaemon is generalDaemon with a fake Slack whose answers are dated
// slackBehind before the local clock, as Slack's are when ours is that far ahead.
func skewedDaemon(t *testing.T, o cfgOpts) (*slackfake.Server, string, string) {
	t.Helper()
	return generalDaemonBehind(t, o, func(fake http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Date", time.Now().Add(-slackBehind).UTC().Format(http.TimeFormat))
			fake.ServeHTTP(w, r)
		})
	})
}

// runDaemon starts `slackpoll run` and returns the function that stops it and waits.
func runDaemon(t *testing.T, cfg string) (stop func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan string, 1)
	go func() {
		_, _, errOut := runCLI(ctx, "run", "--config", cfg)
		done <- errOut
	}()
	return func() string { cancel(); return <-done }
}

func statusOf(base string) (status.Report, bool) {
	code, b := get(base+"/v1/status", "")
	var r status.Report
	return r, code == http.StatusOK && json.Unmarshal(b, &r) == nil
}

// The daemon pruned the change feed by the local clock, at its start, before any
// Slack answer: with the clock 8 days ahead, every change was past retention and the
// whole feed went (consumers got 410). It prunes by Slack's time, once an answer has
// told it: a change observed an hour ago by Slack's clock stays; one observed 8 days
// ago by it goes.
func TestAClockJumpAheadDoesNotPruneTheFeed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "slackpoll.db")
	s := storetest.OpenAt(t, path, boltstore.Options{})
	slackNow := time.Now().Add(-slackBehind)
	err := s.Update(func(tx rm.Tx) error {
		for i := range 20 {
			at := slackNow.Add(-time.Hour) // recent, by Slack's clock
			if i < 10 {
				at = slackNow.Add(-8 * 24 * time.Hour) // past retention, by Slack's clock too
			}
			c := rm.Change{ID: rm.NewEventID(), Kind: rm.ChangeMessageEdited, Channel: "C0GENERAL", TS: rm.TS(fmt.Sprintf("1700000000.%06d", i)), ObservedAt: at}
			if err := tx.AppendChange(&c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	storetest.Close(t, s)
	_, base, cfg := skewedDaemon(t, cfgOpts{store: path, extra: "tick:\n  interval: 1h\n"})
	stop := runDaemon(t, cfg)
	waitFor(t, "the changes past retention by Slack's clock to be pruned", func() bool {
		r, ok := statusOf(base)
		return ok && (r.Feed.OldestSeq > 10 || r.Feed.OldestSeq > r.Feed.LastSeq)
	})
	r, _ := statusOf(base)
	log := stop()
	if r.Feed.OldestSeq != 11 {
		t.Errorf("oldest seq held %d, last %d: want 11, the ten changes of the last hour by Slack's clock kept\n%s", r.Feed.OldestSeq, r.Feed.LastSeq, log)
	}
}

// A receiver that checks webhook-timestamp against its clock (5 minutes, as the
// Standard Webhooks libraries do) rejected every delivery while the local clock was
// off: the timestamp is Slack's time, once an answer has told it.
func TestWebhookTimestampsAreSlacksTime(t *testing.T) {
	var mu sync.Mutex
	var verdicts []error
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		// The receiver's clock is right: it agrees with Slack's.
		err := verifyAt(r.Header, body, time.Now().Add(-slackBehind))
		mu.Lock()
		verdicts = append(verdicts, err)
		mu.Unlock()
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	extra := fmt.Sprintf("tick:\n  interval: 1h\nchanges:\n  backfill: true\nwebhooks:\n  - name: app\n    url: %s/in\n    secret: %s\n", recv.URL, clockTestSecret)
	fake, _, cfg := skewedDaemon(t, cfgOpts{store: filepath.Join(t.TempDir(), "slackpoll.db"), extra: extra})
	if _, err := fake.Post("C0GENERAL", fake.BotUserID(), "hello"); err != nil {
		t.Fatal(err)
	}
	stop := runDaemon(t, cfg)
	waitFor(t, "a delivery", func() bool { mu.Lock(); defer mu.Unlock(); return len(verdicts) > 0 })
	log := stop()
	mu.Lock()
	defer mu.Unlock()
	if verdicts[0] != nil {
		t.Errorf("the receiver refused the delivery: %v\n%s", verdicts[0], log)
	}
}

// clockTestSecret is the Standard Webhooks spec's example secret.
const clockTestSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// verifyAt verifies a delivery as a stock Standard Webhooks receiver whose clock reads
// now would: the library checks the signature, and the timestamp must be within its
// 5 minutes of now (the library itself can only compare with time.Now).
func verifyAt(h http.Header, body []byte, now time.Time) error {
	wh, err := standardwebhooks.NewWebhook(clockTestSecret)
	if err != nil {
		return err
	}
	if err := wh.VerifyIgnoringTimestamp(body, h); err != nil {
		return err
	}
	ts, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	if err != nil {
		return fmt.Errorf("webhook-timestamp: %w", err)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("timestamp %d is %s from the receiver's clock", ts, d)
	}
	return nil
}
