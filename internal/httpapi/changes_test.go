package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/changefeed"
	"github.com/slackpoll/slackpoll/internal/httpapi"
	"github.com/slackpoll/slackpoll/internal/metrics"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

type feedEnv struct {
	metrics  *metrics.Metrics
	store    *boltstore.Store
	notifier *changefeed.Notifier
	srv      *httptest.Server
	requeued int
}

func newFeedEnv(t *testing.T) *feedEnv {
	t.Helper()
	s := storetest.Open(t)
	e := &feedEnv{store: s, notifier: &changefeed.Notifier{}, metrics: metrics.New()}
	h := httpapi.New(httpapi.Options{Store: s, Notifier: e.notifier, OnRequeue: func() { e.requeued++ }, Metrics: e.metrics, Webhooks: []string{"app", "idle"}})
	e.srv = httptest.NewServer(h)
	t.Cleanup(e.srv.Close)
	return e
}

// add appends a change (with an outbox row for webhook "app" when parked is set,
// parked) and publishes it as the writer's commit hook does.
func (e *feedEnv) add(t *testing.T, kind, channel string, observed time.Time, parked bool) uint64 {
	t.Helper()
	c := rm.Change{ID: rm.NewEventID(), Kind: kind, Channel: channel, TS: "1.000001", ObservedAt: observed}
	err := e.store.Update(func(tx rm.Tx) error {
		if err := tx.AppendChange(&c); err != nil {
			return err
		}
		if parked {
			return tx.PutOutbox(rm.OutboxRow{Webhook: "app", Seq: c.Seq, Change: c, Parked: true, Attempts: 10, LastError: "HTTP 500"})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.notifier.Publish(c.Seq)
	return c.Seq
}

func (e *feedEnv) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(e.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func page(t *testing.T, b []byte) changefeed.Page {
	t.Helper()
	var p changefeed.Page
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return p
}

func TestChangesPagesAndFilters(t *testing.T) {
	e := newFeedEnv(t)
	now := time.Now()
	a := e.add(t, rm.ChangeReactionAdded, "C1", now, false)
	b := e.add(t, rm.ChangeMessageEdited, "C2", now, false)
	c := e.add(t, rm.ChangeReactionAdded, "C2", now, false)

	code, body := e.get(t, "/v1/changes?after=0&limit=2")
	p := page(t, body)
	if code != 200 || len(p.Changes) != 2 || p.Changes[0].Seq != a || p.Next != b || p.Last != c || p.Oldest != a {
		t.Errorf("first page: %d %s", code, body)
	}
	// The API's list shape: items and next_cursor (the seq, as a string), plus the
	// feed's bounds; next_cursor passed back as cursor goes on.
	var wire map[string]json.RawMessage
	_ = json.Unmarshal(body, &wire)
	if len(wire) != 4 || string(wire["next_cursor"]) != fmt.Sprintf("%q", fmt.Sprint(b)) || wire["items"] == nil || wire["oldest"] == nil || wire["last"] == nil {
		t.Errorf("first page is not {items, next_cursor, oldest, last}: %s", body)
	}
	if _, body := e.get(t, fmt.Sprintf("/v1/changes?cursor=%d&limit=2", b)); len(page(t, body).Changes) != 1 || page(t, body).Changes[0].Seq != c {
		t.Errorf("next_cursor passed back as cursor: %s, want change %d", body, c)
	}
	_, body = e.get(t, "/v1/changes?after=0&kind=reaction_added&channel=C2")
	if p := page(t, body); len(p.Changes) != 1 || p.Changes[0].Seq != c || p.Next != c {
		t.Errorf("filtered: %s", body)
	}
	for _, bad := range []string{"after=x", "cursor=x", "limit=0", "limit=5000", "wait=2h", "kind=nope", "own=maybe"} {
		if code, body := e.get(t, "/v1/changes?"+bad); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", bad, code, body)
		}
	}
}

func TestChangesLongPollReturnsWhenAChangeArrives(t *testing.T) {
	e := newFeedEnv(t)
	first := e.add(t, rm.ChangeMessageEdited, "C1", time.Now(), false)
	type answer struct {
		code int
		body []byte
	}
	done := make(chan answer)
	go func() {
		resp, err := http.Get(e.srv.URL + "/v1/changes?after=" + jsonNum(first) + "&wait=50s")
		if err != nil {
			done <- answer{0, []byte(err.Error())}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		done <- answer{resp.StatusCode, b}
	}()
	next := e.add(t, rm.ChangeReplyAdded, "C1", time.Now(), false)
	got := <-done
	if p := page(t, got.body); got.code != 200 || len(p.Changes) != 1 || p.Changes[0].Seq != next {
		t.Errorf("long poll answered %d %s, want the change %d", got.code, got.body, next)
	}
}

func jsonNum(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func TestChangesBehindRetentionIsGone(t *testing.T) {
	e := newFeedEnv(t)
	old := time.Now().Add(-8 * 24 * time.Hour)
	e.add(t, rm.ChangeMessageEdited, "C1", old, false)
	kept := e.add(t, rm.ChangeMessageEdited, "C1", time.Now(), false)
	if n, err := changefeed.Prune(e.store, time.Now(), 7*24*time.Hour, 100); n != 1 || err != nil {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	code, body := e.get(t, "/v1/changes?after=0")
	var gone struct {
		Error  string `json:"error"`
		Oldest uint64 `json:"oldest"`
	}
	_ = json.Unmarshal(body, &gone)
	if code != http.StatusGone || gone.Oldest != kept || gone.Error == "" {
		t.Errorf("after=0 behind retention: %d %s, want 410 with oldest %d", code, body, kept)
	}
}

func TestOutboxListsAndRequeuesParkedRows(t *testing.T) {
	e := newFeedEnv(t)
	seq := e.add(t, rm.ChangeMessageEdited, "C1", time.Now(), true)
	code, body := e.get(t, "/v1/outbox?parked=true")
	var l struct {
		Items []changefeed.RowSummary `json:"items"`
	}
	_ = json.Unmarshal(body, &l)
	if code != 200 || len(l.Items) != 1 || l.Items[0].Seq != seq || !l.Items[0].Parked || l.Items[0].LastError != "HTTP 500" {
		t.Fatalf("GET /v1/outbox?parked=true: %d %s", code, body)
	}
	post := func(body string, ct string) (int, string) {
		resp, err := http.Post(e.srv.URL+"/v1/outbox/requeue", ct, bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, b := post(`{"seqs": [1]}`, "application/json"); code != http.StatusBadRequest {
		t.Errorf("requeue without webhook: %d %s", code, b)
	}
	if code, b := post(`{"webhook": "ap"}`, "application/json"); code != http.StatusNotFound || !strings.Contains(b, "configured: app") {
		t.Errorf("requeue of an unknown webhook: %d %s, want 404 naming the configured ones", code, b)
	}
	if code, b := post(`{"webhook": "app"}`, "application/json"); code != 200 || b != "{\"requeued\":1}\n" || e.requeued != 1 {
		t.Errorf("requeue: %d %s (woken %d)", code, b, e.requeued)
	}
	_, body = e.get(t, "/v1/outbox?parked=true")
	_ = json.Unmarshal(body, &l)
	if len(l.Items) != 0 {
		t.Errorf("parked rows after requeue: %s", body)
	}
}

func TestFeedMetrics(t *testing.T) {
	e := newFeedEnv(t)
	e.metrics.SetWebhooks([]string{"app", "idle"})
	e.add(t, rm.ChangeMessageEdited, "C1", time.Now(), true)
	last := e.add(t, rm.ChangeMessageEdited, "C1", time.Now(), false)
	err := e.store.Update(func(tx rm.Tx) error {
		return tx.PutOutbox(rm.OutboxRow{Webhook: "app", Seq: last, Enqueued: time.Now().Add(-time.Minute)})
	})
	if err != nil {
		t.Fatal(err)
	}
	e.metrics.OnDelivery("app", changefeed.OutcomeDelivered)
	e.metrics.OnDelivery("app", changefeed.OutcomeFenced)
	code, body := e.get(t, "/metrics")
	fams := parseMetrics(t, code, body)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"slackpoll_changes_last_seq", nil, float64(last)},
		{"slackpoll_changes_oldest_seq", nil, 1},
		{"slackpoll_outbox_pending", map[string]string{"webhook": "app"}, 1},
		{"slackpoll_outbox_parked", map[string]string{"webhook": "app"}, 1},
		{"slackpoll_outbox_pending", map[string]string{"webhook": "idle"}, 0},
		{"slackpoll_webhook_deliveries_total", map[string]string{"webhook": "app", "outcome": changefeed.OutcomeDelivered}, 1},
		{"slackpoll_webhook_deliveries_total", map[string]string{"webhook": "idle", "outcome": changefeed.OutcomeParked}, 0},
		{"slackpoll_outbox_fence_refusals_total", map[string]string{"webhook": "app"}, 1},
	} {
		if got := value(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if age := value(t, fams, "slackpoll_outbox_oldest_pending_age_seconds", map[string]string{"webhook": "app"}); age < 59 {
		t.Errorf("oldest pending age = %v, want about 60", age)
	}
}

// A cursor this store never handed out (after > last: a cursor of another store, or
// of this one before it was restored from a backup) must not be served as if it were
// current: the consumer would silently skip every change up to its cursor.
func TestChangesAfterBeyondTheLastSeqIsAConflict(t *testing.T) {
	e := newFeedEnv(t)
	last := e.add(t, rm.ChangeMessageEdited, "C1", time.Now(), false)
	for _, after := range []string{jsonNum(last + 1), "18446744073709551615"} {
		code, body := e.get(t, "/v1/changes?after="+after)
		var ahead struct {
			Error string `json:"error"`
			Last  uint64 `json:"last"`
		}
		_ = json.Unmarshal(body, &ahead)
		if code != http.StatusConflict || ahead.Last != last || ahead.Error == "" {
			t.Errorf("after=%s with last seq %d: %d %s, want 409 naming the last seq", after, last, code, body)
		}
	}
	if code, body := e.get(t, "/v1/changes?after="+jsonNum(last)); code != http.StatusOK {
		t.Errorf("after=last: %d %s, want 200", code, body)
	}
}

// A long poll whose filter skips a long stretch of the feed reads on past the scan's
// bound (changefeed.MaxScan) rather than wait for a change that already arrived.
func TestChangesLongPollReadsOnPastTheScanBound(t *testing.T) {
	e := newFeedEnv(t)
	err := e.store.Update(func(tx rm.Tx) error {
		for range changefeed.MaxScan {
			c := rm.Change{ID: rm.NewEventID(), Kind: rm.ChangeMessageEdited, Channel: "C1", ObservedAt: time.Now()}
			if err := tx.AppendChange(&c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := e.add(t, rm.ChangeUserRenamed, "", time.Now(), false)
	code, body := e.get(t, "/v1/changes?after=0&wait=50s&kind=user_renamed")
	if p := page(t, body); code != 200 || len(p.Changes) != 1 || p.Changes[0].Seq != want {
		t.Errorf("long poll = %d %.300s, want the rename %d at once", code, body, want)
	}
}

// Rows dropped over a webhook's max_rows are counted where operators look: the
// status report and /metrics.
func TestDroppedOutboxRowsAreInStatusAndMetrics(t *testing.T) {
	e := newFeedEnv(t)
	e.metrics.SetWebhooks([]string{"app", "idle"})
	var seqs []uint64
	for range 3 {
		seqs = append(seqs, e.add(t, rm.ChangeMessageEdited, "C1", time.Now(), true))
	}
	if err := e.store.Update(func(tx rm.Tx) error { _, err := tx.TrimOutbox("app", 1); return err }); err != nil {
		t.Fatal(err)
	}
	code, mbody := e.get(t, "/metrics")
	fams := parseMetrics(t, code, mbody)
	if got := value(t, fams, "slackpoll_outbox_dropped_total", map[string]string{"webhook": "app"}); got != 2 {
		t.Errorf("slackpoll_outbox_dropped_total{webhook=app} = %v, want 2", got)
	}
	_, body := e.get(t, "/v1/status")
	var st struct {
		Feed struct {
			Outbox []struct {
				Webhook        string `json:"webhook"`
				Parked         int    `json:"parked"`
				Dropped        uint64 `json:"dropped"`
				LastDroppedSeq uint64 `json:"last_dropped_seq"`
			} `json:"outbox"`
		} `json:"feed"`
	}
	if err := json.Unmarshal(body, &st); err != nil || len(st.Feed.Outbox) == 0 {
		t.Fatalf("status %s: %v", body, err)
	}
	if o := st.Feed.Outbox[0]; o.Webhook != "app" || o.Parked != 1 || o.Dropped != 2 || o.LastDroppedSeq != seqs[1] {
		t.Errorf("status outbox %+v, want app: 1 parked, 2 dropped, the last %d", o, seqs[1])
	}
}
