package webhook_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/slackpoll/slackpoll/internal/changefeed"
	"github.com/slackpoll/slackpoll/internal/webhook"
)

// readmeReceiver is the receiver the README shows (section "Change feed and
// webhooks"), word for word but for handle, which the README leaves to you.
func readmeReceiver(wh *standardwebhooks.Webhook, seen map[string]bool, mu *sync.Mutex, handle func([]byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		// Checks the signature over webhook-id, webhook-timestamp and the body, and
		// refuses a timestamp more than 5 minutes from now (a replay).
		if err := wh.Verify(body, r.Header); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if id := r.Header.Get("webhook-id"); !seen[id] {
			handle(body) // your code: store it first, then answer
			seen[id] = true
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

func TestTheREADMEReceiverAcceptsDeliveriesAndDropsDuplicates(t *testing.T) {
	var (
		mu      sync.Mutex
		handled int
	)
	wh, err := standardwebhooks.NewWebhook(testSecret) // in the README: os.Getenv("SLACKPOLL_WEBHOOK_SECRET")
	if err != nil {
		t.Fatal(err)
	}
	rx := readmeReceiver(wh, map[string]bool{}, &mu, func([]byte) { handled++ })
	srv := httptest.NewServer(rx)
	defer srv.Close()
	clock := &fakeClock{t: time.Now()}
	_, hook := setup(t, srv, clock, "C1", "C2")
	// The first delivery of C1's event is answered after its lease: it is fenced and
	// delivered again after its backoff, and the receiver must handle it once.
	slow := true
	hook.URL, _ = url.Parse(srv.URL)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slow {
			slow = false
			clock.Advance(time.Minute)
		}
		rx(w, r)
	})
	var outcomes []string
	d := &webhook.Deliverer{Hooks: []webhook.Hook{hook}, OnOutcome: func(_, o string) { outcomes = append(outcomes, o) }}
	d.Sweep(context.Background())
	d.Sweep(context.Background())
	clock.Advance(6 * time.Second) // past the fenced attempt's backoff (5s)
	d.Sweep(context.Background())
	if handled != 2 || len(outcomes) != 3 || outcomes[0] != changefeed.OutcomeFenced {
		t.Errorf("handled %d events with outcomes %v; want 2 handled, the first delivery fenced and repeated", handled, outcomes)
	}
	// A forged request is refused.
	resp, err := http.Post(srv.URL, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unsigned request: %d, want 401", resp.StatusCode)
	}
}
