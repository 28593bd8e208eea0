package crashtest

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
	"github.com/slackpoll/slackpoll/internal/webhook"
)

var flagDeliveryKills = flag.Int("crash.delivery-kills", 50, "SIGKILLs of TestWebhookDeliveryAtLeastOnce")

// webhookSecret signs the test receiver's deliveries (a Standard Webhooks secret).
const webhookSecret = "whsec_a2lsbC10ZXN0LXNlY3JldCBvZiAyNCBieXRlcw=="

// failedAttempt is what the daemon logs when a delivery attempt fails, e.g. at its
// timeout (internal/webhook, Deliverer.attempt).
const failedAttempt = "webhook: delivery failed"

// Where a kill lands relative to one delivery, chosen per kill from the seed.
type deliveryKill int

const (
	// killBeforeAnswer: the receiver got the event and the daemon dies before the
	// answer: the row must be delivered again (a duplicate).
	killBeforeAnswer deliveryKill = iota
	// killAfterAnswer: the daemon dies right after the 2xx, before or after it
	// recorded the completion.
	killAfterAnswer
	// killAfterSlowAnswer: the receiver handles the event but answers after the
	// delivery's timeout: the daemon gave up on it (a failed attempt), and the event
	// is delivered again. (An answer after the lease, which the fence refuses, cannot
	// happen: a lease must be longer than the timeout; the outbox tests cover the
	// fence.)
	killAfterSlowAnswer
	deliveryKillKinds
)

func (k deliveryKill) String() string {
	return [...]string{"before the answer", "right after the answer", "after an answer slower than the timeout"}[k]
}

// killReceiver is the webhook receiver of the kill test: it checks every delivery's
// signature, counts each event ID, and at the armed delivery asks the test to kill
// the daemon.
type killReceiver struct {
	t  *testing.T
	mu sync.Mutex
	// got counts deliveries per event ID; kinds the first delivery of each per kind.
	got      map[string]int
	requests int
	// armAt is the request number at which to kill (0: none); mode how; kill is
	// signalled on killNow, and the handler of killBeforeAnswer waits for killed.
	armAt   int
	mode    deliveryKill
	killNow chan deliveryKill
	killed  chan struct{}
	slow    time.Duration
}

func (r *killReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	wh, err := standardwebhooks.NewWebhook(webhookSecret)
	if err == nil {
		err = wh.Verify(body, req.Header)
	}
	if err != nil {
		r.t.Errorf("receiver: %v", err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var c rm.Change
	if err := json.Unmarshal(body, &c); err != nil || c.ID == "" || c.ID != req.Header.Get(webhook.HeaderID) {
		r.t.Errorf("receiver: bad body %s: %v", body, err)
		return
	}
	r.mu.Lock()
	r.requests++
	r.got[c.ID]++
	armed := r.armAt > 0 && r.requests >= r.armAt
	mode := r.mode
	if armed {
		r.armAt = 0
	}
	r.mu.Unlock()
	if !armed {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	switch mode {
	case killBeforeAnswer:
		r.killNow <- mode
		<-r.killed
		w.WriteHeader(http.StatusNoContent) // to a dead connection
	case killAfterAnswer:
		w.WriteHeader(http.StatusNoContent)
		_ = http.NewResponseController(w).Flush()
		r.killNow <- mode
	case killAfterSlowAnswer:
		time.Sleep(r.slow) // the delivery's timeout passes meanwhile
		w.WriteHeader(http.StatusNoContent)
		_ = http.NewResponseController(w).Flush()
		r.killNow <- mode // the test waits for the daemon's failed attempt
	}
}

func (r *killReceiver) arm(after int, mode deliveryKill) {
	r.mu.Lock()
	r.armAt, r.mode = r.requests+after, mode
	r.mu.Unlock()
}

// TestWebhookDeliveryAtLeastOnce SIGKILLs the real binary at seeded points of its
// webhook deliveries — before the receiver's answer, right after it, after an answer
// slower than the delivery's timeout — changing the workspace between restarts, then lets it
// deliver everything: every change in the feed must have reached the receiver at
// least once (none lost); duplicates are counted and reported.
func TestWebhookDeliveryAtLeastOnce(t *testing.T) {
	slackpollBinary(t)
	seed, kills := *flagSeed, *flagDeliveryKills
	t.Logf("seed %d, %d kills; replay: go test ./internal/testsupport/crashtest -run 'TestWebhookDeliveryAtLeastOnce$' -v -crash.seed %d -crash.delivery-kills %d",
		seed, kills, seed, kills)
	e := newEnv(t, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eb4))
	mut := slackfake.NewMutator(e.fake, seed)
	const timeout, lease = time.Second, 2 * time.Second
	recv := &killReceiver{t: t, got: map[string]int{}, killNow: make(chan deliveryKill), killed: make(chan struct{}), slow: timeout + 500*time.Millisecond}
	rsrv := httptest.NewServer(recv)
	defer rsrv.Close()

	listen := freePort(t)
	cfg := e.writeConfig("webhook.yaml", listen)
	extra := fmt.Sprintf(`changes:
  backfill: true
webhooks:
  - name: receiver
    url: %s/events
    secret: %s
    timeout: %s
    lease: %s
    max_attempts: 1000
`, rsrv.URL, webhookSecret, timeout, lease)
	appendFile(t, cfg, extra)

	byKind := map[string]int{}
	notReached := 0
	start := time.Now()
	for i := range kills {
		// The first start delivers the backlog of the whole workspace; later ones
		// what the changes in between produced, a few events each.
		reach := 40
		if i > 0 {
			reach = 3
			for range 4 + rng.IntN(12) {
				mut.Step()
			}
		}
		mode := deliveryKill(rng.IntN(int(deliveryKillKinds)))
		recv.arm(1+rng.IntN(reach), mode)
		p := e.start(cfg)
		select {
		case <-recv.killNow:
			if mode == killAfterSlowAnswer {
				// The daemon gave up on the delivery at its timeout and records the
				// failed attempt, and says so: the kill comes after that.
				if !waitFor(10*time.Second, func() bool { return p.out.contains(failedAttempt) }) {
					t.Errorf("kill %d: no failed attempt logged within 10 s of an answer slower than the timeout", i)
				}
			}
			p.kill(t)
			if mode == killBeforeAnswer {
				recv.killed <- struct{}{}
			}
			byKind[mode.String()]++
		case <-time.After(5 * time.Second):
			// Nothing left to deliver: kill anyway, and disarm.
			recv.arm(1<<30, mode)
			p.kill(t)
			notReached++
		}
		if t.Failed() {
			t.Fatalf("after kill %d:\n%s", i, p.out.tail(3000))
		}
	}
	killPhase := time.Since(start)

	// Let the daemon deliver everything, then stop it.
	recv.arm(1<<30, killBeforeAnswer)
	p := e.start(cfg)
	ok := waitFor(2*time.Minute, func() bool {
		if p.exited() {
			return true
		}
		st, err := feedStatus(listen)
		if err != nil || st.Feed.LastSeq == 0 {
			return false
		}
		for _, o := range st.Feed.Outbox { // a webhook with no row left is not listed
			if o.Pending > 0 || o.Parked > 0 {
				return false
			}
		}
		return true
	})
	if !ok || p.exited() {
		t.Fatalf("the outbox did not drain within 2 min (exited %v):\n%s", p.exited(), p.out.tail(3000))
	}
	if code, _ := p.terminate(5 * time.Second); code != 0 {
		t.Fatalf("slackpoll run exited %d on SIGTERM:\n%s", code, p.out.tail(3000))
	}

	s := storetest.OpenAt(t, e.storePath, boltstore.Options{ReadOnly: true})
	var feed []rm.Change
	queued := map[string]bool{} // still in the outbox: delivered by the next start
	if err := s.View(func(tx rm.Tx) error {
		if err := tx.Outbox("", func(r rm.OutboxRow) error { queued[r.Change.ID] = true; return nil }); err != nil {
			return err
		}
		return tx.Changes(0, func(c rm.Change) error { feed = append(feed, c); return nil })
	}); err != nil {
		t.Fatal(err)
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	lost, dups := 0, 0
	inFeed := map[string]bool{}
	for _, c := range feed {
		inFeed[c.ID] = true
		switch n := recv.got[c.ID]; {
		case n == 0 && queued[c.ID]:
		case n == 0:
			lost++
			if lost <= 5 {
				t.Errorf("change %d (%s %s/%s) was never delivered", c.Seq, c.Kind, c.Channel, c.TS)
			}
		case n > 1:
			dups += n - 1
		}
	}
	for id := range recv.got {
		if !inFeed[id] {
			t.Errorf("the receiver got event %s, which is not in the feed", id)
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d changes lost", lost, len(feed))
	}
	if byKind[killBeforeAnswer.String()] > 0 && dups == 0 {
		t.Errorf("kills before the answer gave no duplicate: the row was completed without an answer?")
	}
	if kills >= 10 && notReached > kills/2 {
		t.Errorf("%d of %d kills found nothing to deliver: the workspace changes no longer reach the feed", notReached, kills)
	}
	t.Logf("%d kills in %v (%v; %d with nothing in flight): %d changes, %d deliveries, %d lost, %d duplicates (%.1f%%), %d still queued at the end",
		kills, killPhase.Round(time.Millisecond), byKind, notReached, len(feed), recv.requests, lost, dups, 100*float64(dups)/float64(max(1, len(feed))), len(queued))
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// feedReport is the part of GET /v1/status that says how far delivery got.
type feedReport struct {
	Feed struct {
		LastSeq uint64 `json:"last_seq"`
		Outbox  []struct {
			Pending int `json:"pending"`
			Parked  int `json:"parked"`
		} `json:"outbox"`
	} `json:"feed"`
}

func feedStatus(listen string) (feedReport, error) { return getStatus[feedReport](listen) }
