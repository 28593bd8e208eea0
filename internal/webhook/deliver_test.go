package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/slackpoll/slackpoll/config"
	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/changefeed"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
	"github.com/slackpoll/slackpoll/internal/webhook"
)

// testSecret signs the tests' deliveries: the Standard Webhooks spec's example secret.
const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// testKey is testSecret's key.
var testKey = mustKey(testSecret)

func mustKey(secret string) []byte {
	k, err := config.ParseWebhookSecret(config.Secret(secret))
	if err != nil {
		panic(err)
	}
	return k.Key
}

// receiver is a test webhook receiver: it verifies every request as the README tells
// receivers to, and records what it got.
type receiver struct {
	t  *testing.T
	mu sync.Mutex
	// got lists the event IDs received, in order, and byChannel the seqs per
	// conversation; inFlight the IDs being handled, to catch two deliveries of one
	// row at once.
	got       []string
	byChannel map[string][]uint64
	inFlight  map[string]bool
	overlaps  int
	// handle, if set, decides the answer (after the checks).
	handle func(c rm.Change) int
}

func newReceiver(t *testing.T) (*receiver, *httptest.Server) {
	r := &receiver{t: t, byChannel: map[string][]uint64{}, inFlight: map[string]bool{}}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	wh, err := standardwebhooks.NewWebhook(testSecret)
	if err == nil {
		err = wh.Verify(body, req.Header)
	}
	if err != nil {
		r.t.Errorf("receiver: %v", err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var c rm.Change
	if err := json.Unmarshal(body, &c); err != nil || c.ID != req.Header.Get(webhook.HeaderID) {
		r.t.Errorf("receiver: body %s (err %v) does not match %s %q", body, err, webhook.HeaderID, req.Header.Get(webhook.HeaderID))
	}
	r.mu.Lock()
	if r.inFlight[c.ID] {
		r.overlaps++
	}
	r.inFlight[c.ID] = true
	r.mu.Unlock()
	code := http.StatusNoContent
	if r.handle != nil {
		code = r.handle(c)
	}
	r.mu.Lock()
	delete(r.inFlight, c.ID)
	if code/100 == 2 {
		r.got = append(r.got, c.ID)
		r.byChannel[c.Channel] = append(r.byChannel[c.Channel], c.Seq)
	}
	r.mu.Unlock()
	w.WriteHeader(code)
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func setup(t *testing.T, srv *httptest.Server, clock *fakeClock, channels ...string) (*boltstore.Store, webhook.Hook) {
	t.Helper()
	s := storetest.Open(t)
	err := s.Update(func(tx rm.Tx) error {
		for _, ch := range channels {
			c := rm.Change{ID: rm.NewEventID(), Kind: rm.ChangeReactionAdded, Channel: ch, TS: "1.000001", Reaction: "eyes", User: "U1"}
			if err := tx.AppendChange(&c); err != nil {
				return err
			}
			if err := tx.PutOutbox(rm.OutboxRow{Webhook: "app", Seq: c.Seq, Change: c}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.URL)
	now := time.Now
	if clock != nil {
		now = clock.Now
	}
	return s, webhook.Hook{Name: "app", URL: u, Keys: [][]byte{testKey}, Timeout: 5 * time.Second,
		Outbox: &changefeed.Outbox{Store: s, Now: now, Lease: 30 * time.Second, MaxAttempts: 3}}
}

func pending(t *testing.T, s rm.Store) changefeed.Stats {
	t.Helper()
	var st map[string]changefeed.Stats
	_ = s.View(func(tx rm.Tx) error {
		var err error
		st, err = changefeed.OutboxStats(tx)
		return err
	})
	return st["app"]
}

func TestDeliversSignedEventsInSeqOrderAndPrunesThem(t *testing.T) {
	r, srv := newReceiver(t)
	s, hook := setup(t, srv, nil, "C1", "C2", "C1", "C1", "C2")
	var outcomes []string
	d := &webhook.Deliverer{Hooks: []webhook.Hook{hook}, Batch: 2, OnOutcome: func(_, o string) { outcomes = append(outcomes, o) }}
	d.Sweep(context.Background())
	if len(r.got) != 5 || len(outcomes) != 5 {
		t.Fatalf("received %d, outcomes %v; want 5 delivered", len(r.got), outcomes)
	}
	for ch, seqs := range r.byChannel {
		for i := 1; i < len(seqs); i++ {
			if seqs[i] < seqs[i-1] {
				t.Errorf("%s received out of seq order: %v", ch, seqs)
			}
		}
	}
	if st := pending(t, s); st.Pending != 0 {
		t.Errorf("delivered rows left in the outbox: %+v", st)
	}
}

func TestAFailureHoldsBackItsConversationOnly(t *testing.T) {
	r, srv := newReceiver(t)
	s, hook := setup(t, srv, nil, "C1", "C1", "C2")
	failed := false
	r.handle = func(c rm.Change) int {
		if c.Channel == "C1" && !failed {
			failed = true
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}
	d := &webhook.Deliverer{Hooks: []webhook.Hook{hook}}
	d.Sweep(context.Background())
	if len(r.byChannel["C1"]) != 0 || len(r.byChannel["C2"]) != 1 {
		t.Errorf("received %v: want nothing of C1 after its first row failed, C2's row delivered", r.byChannel)
	}
	if st := pending(t, s); st.Pending != 2 {
		t.Errorf("outbox %+v, want C1's two rows pending", st)
	}
}

func TestTwoDeliverersNeverDeliverTheSameRowAtOnce(t *testing.T) {
	r, srv := newReceiver(t)
	channels := make([]string, 60)
	for i := range channels {
		channels[i] = []string{"C1", "C2", "C3"}[i%3]
	}
	s, hook := setup(t, srv, nil, channels...)
	r.handle = func(rm.Change) int { time.Sleep(2 * time.Millisecond); return http.StatusOK }
	var wg sync.WaitGroup
	for range 2 {
		d := &webhook.Deliverer{Hooks: []webhook.Hook{hook}, Batch: 5}
		wg.Go(func() { d.Sweep(context.Background()) })
	}
	wg.Wait()
	seen := map[string]int{}
	for _, id := range r.got {
		seen[id]++
	}
	if r.overlaps != 0 || len(seen) != 60 || len(r.got) != 60 {
		t.Errorf("overlapping deliveries %d, distinct %d, received %d; want 0, 60, 60", r.overlaps, len(seen), len(r.got))
	}
	if st := pending(t, s); st.Pending != 0 {
		t.Errorf("outbox %+v after both sweeps", st)
	}
}

func TestAReceiverSlowerThanTheLeaseIsFencedAndTheEventRedelivered(t *testing.T) {
	r, srv := newReceiver(t)
	clock := &fakeClock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	s, hook := setup(t, srv, clock, "C1")
	slow := true
	r.handle = func(rm.Change) int {
		if slow {
			slow = false
			clock.Advance(time.Minute) // longer than the 30s lease
		}
		return http.StatusOK
	}
	var outcomes []string
	d := &webhook.Deliverer{Hooks: []webhook.Hook{hook}, OnOutcome: func(_, o string) { outcomes = append(outcomes, o) }}
	d.Sweep(context.Background())
	if len(outcomes) == 0 || outcomes[0] != changefeed.OutcomeFenced {
		t.Fatalf("outcomes %v, want the first fenced", outcomes)
	}
	clock.Advance(6 * time.Second) // a fenced attempt backs off like a failure (5s)
	d.Sweep(context.Background())
	if len(r.got) != 2 || r.got[0] != r.got[1] {
		t.Errorf("received %v: want the same event twice (at least once; the receiver dedupes on the id)", r.got)
	}
	if st := pending(t, s); st.Pending != 0 {
		t.Errorf("outbox %+v, want empty once delivered within a lease", st)
	}
}

func TestParksAfterMaxAttempts(t *testing.T) {
	r, srv := newReceiver(t)
	clock := &fakeClock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	s, hook := setup(t, srv, clock, "C1")
	r.handle = func(rm.Change) int { return http.StatusBadGateway }
	var outcomes []string
	d := &webhook.Deliverer{Hooks: []webhook.Hook{hook}, OnOutcome: func(_, o string) { outcomes = append(outcomes, o) }}
	for range 5 {
		d.Sweep(context.Background())
		clock.Advance(time.Hour) // past any backoff
	}
	want := []string{changefeed.OutcomeFailed, changefeed.OutcomeFailed, changefeed.OutcomeParked}
	if len(outcomes) != 3 || outcomes[2] != want[2] || outcomes[0] != want[0] {
		t.Errorf("outcomes %v, want %v and no attempt after parking", outcomes, want)
	}
	if st := pending(t, s); st.Parked != 1 || st.Pending != 0 {
		t.Errorf("outbox %+v, want one parked row", st)
	}
}

// Sign computes the spec's own test vector (the Standard Webhooks library's
// TestWebhookSign), and with several keys, one signature each, in order.
func TestSignIsTheStandardWebhooksSignature(t *testing.T) {
	const want = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	got := webhook.Sign([][]byte{testKey}, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
	other := []byte("another key of at least 24 bytes")
	two := webhook.Sign([][]byte{other, testKey}, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if sigs := strings.Split(two, " "); len(sigs) != 2 || sigs[1] != want || !strings.HasPrefix(sigs[0], "v1,") {
		t.Errorf("Sign with two keys = %q, want a v1 signature of each, the second %s", two, want)
	}
}

// The deprecated X-Slackpoll-Signature is computed as earlier releases did.
func TestLegacySignatureIsHMACOfVersionTimestampAndBody(t *testing.T) {
	// Computed independently: printf 'v1:1700000000:{"a":1}' | openssl dgst -sha256 -hmac s3cret
	const want = "v1=5758379e1e2bd8ca5cbc893acda89dd28be628dc70c337e7943ddd194922a4bf"
	if got := webhook.SignLegacy([]byte("s3cret"), 1700000000, []byte(`{"a":1}`)); got != want {
		t.Fatalf("SignLegacy = %q, want %q", got, want)
	}
}

// A receiver's URL may carry credentials — user:password, a token in its query, or
// a secret in its path, as many receivers expect. A failure is logged and kept as the row's last_error
// (served by GET /v1/outbox): neither may show them.
func TestAFailureNamesTheURLWithoutItsCredentials(t *testing.T) {
	r, srv := newReceiver(t)
	s, hook := setup(t, srv, nil, "C1")
	r.handle = func(rm.Change) int { return http.StatusInternalServerError }
	hook.URL.User = url.UserPassword("app", "pw-SECRET")
	hook.URL.RawQuery = "token=q-SECRET"
	hook.URL.Path = "/hooks/T0/p-SECRET"
	var logs bytes.Buffer
	d := &webhook.Deliverer{Hooks: []webhook.Hook{hook}, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	d.Sweep(context.Background())
	var rows []changefeed.RowSummary
	_ = s.View(func(tx rm.Tx) error {
		var err error
		rows, err = changefeed.ListOutbox(tx, "app", false, time.Now(), 10)
		return err
	})
	if len(rows) != 1 || !strings.Contains(rows[0].LastError, "HTTP 500") {
		t.Fatalf("rows %+v, want one failed row", rows)
	}
	for what, text := range map[string]string{"last_error": rows[0].LastError, "log": logs.String()} {
		if strings.Contains(text, "SECRET") {
			t.Errorf("%s shows the URL's credentials: %s", what, text)
		}
	}
}

// Rows held back behind a failed row of their conversation are let go at once: when
// the failed row's backoff ends, the next sweep delivers the whole conversation in
// order, without waiting for the held rows' lease (a minute by default).
func TestRowsHeldBehindAFailureGoAsSoonAsItsBackoffEnds(t *testing.T) {
	r, srv := newReceiver(t)
	clock := &fakeClock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	s, hook := setup(t, srv, clock, "C1", "C1", "C1")
	fail := true
	r.handle = func(rm.Change) int {
		if fail {
			fail = false
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	}
	d := &webhook.Deliverer{Hooks: []webhook.Hook{hook}}
	d.Sweep(context.Background())
	clock.Advance(6 * time.Second) // past the first backoff (5s), well inside the 30s lease
	d.Sweep(context.Background())
	if got := r.byChannel["C1"]; len(got) != 3 || got[0] > got[1] || got[1] > got[2] {
		t.Errorf("C1 received %v after the backoff, want all three rows in seq order", got)
	}
	if st := pending(t, s); st.Pending != 0 {
		t.Errorf("outbox %+v", st)
	}
}

// A receiver that always answers after the lease: each completion was refused (the
// fence) and never counted, so the event was delivered again, for ever. Fenced
// attempts count toward max_attempts and back off: the row parks.
func TestAReceiverAlwaysSlowerThanTheLeaseParksTheRow(t *testing.T) {
	r, srv := newReceiver(t)
	clock := &fakeClock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	s, hook := setup(t, srv, clock, "C1") // max_attempts 3, lease 30s
	r.handle = func(rm.Change) int {
		clock.Advance(time.Minute) // every answer after the lease
		return http.StatusOK
	}
	var outcomes []string
	d := &webhook.Deliverer{Hooks: []webhook.Hook{hook}, OnOutcome: func(_, o string) { outcomes = append(outcomes, o) }}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // a sweep that never ends fails, not hangs
	defer cancel()
	for range 10 {
		d.Sweep(ctx)
		clock.Advance(time.Hour) // past any backoff
	}
	if len(r.got) != 3 {
		t.Errorf("delivered %d times, want max_attempts (3) times, then parked", len(r.got))
	}
	if st := pending(t, s); st.Parked != 1 {
		t.Errorf("outbox %+v after %d outcomes; want the row parked", st, len(outcomes))
	}
}

// A sweep whose claim delivered nothing claimed again at once: with a lease shorter
// than a POST (config refuses it now), one sweep spun, delivering the same event
// without end. A sweep that delivers nothing returns; the periodic one tries again.
func TestASweepThatDeliversNothingReturns(t *testing.T) {
	r, srv := newReceiver(t)
	_, hook := setup(t, srv, nil, "C1")
	hook.Outbox.Lease = time.Millisecond
	r.handle = func(rm.Change) int { time.Sleep(5 * time.Millisecond); return http.StatusOK }
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	d := &webhook.Deliverer{Hooks: []webhook.Hook{hook}}
	d.Sweep(ctx)
	if ctx.Err() != nil || len(r.got) > 1 {
		t.Errorf("one sweep delivered %d times (ran for %v)", len(r.got), ctx.Err())
	}
}
