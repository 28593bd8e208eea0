package badinput

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/converge"
	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackapi"
	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

// budget is generous: every bad answer the catalog serves is met, and a loop is
// stopped by the budget at the latest.
var budget = poller.Budget{HistoryCalls: 100, RepliesCalls: 60, UsersInfoCalls: 40, ReactionsCalls: 60}

// world is a fake workspace and a store that has polled it: data to lose.
type world struct {
	fake  *slackfake.Server
	store *boltstore.Store
	convs []string
}

// newWorld generates a small workspace, tracks some messages older than the bulk
// window (so the tail reads them), and polls it twice through a well-behaved
// transport. Call it inside a synctest bubble.
func newWorld(t *testing.T) *world {
	t.Helper()
	fake := slackfake.New(slackfake.Options{OmitBlocks: true, PageCap: 15, Seed: 1})
	slackfake.Generate(fake, 7, slackfake.GenSize{Conversations: 7, Messages: 200, Users: 8})
	store := storetest.Open(t)
	w := &world{fake: fake, store: store, convs: fake.ConversationIDs()}
	cut := rm.TSFromUnix(time.Now().Add(-72 * time.Hour).Unix())
	n := 0
	for _, m := range fake.Truth().Messages {
		if m.TS.Before(cut) && (m.ThreadTS == "" || m.ThreadTS == m.TS) && n < 20 {
			if err := rm.Track(store, m.Channel, m.TS, ""); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	for range 2 {
		if sum, p, err := w.tick(fake.Transport()); err != nil || p != nil {
			t.Fatalf("polling the well-behaved fake: %v, panic %v (%+v)", err, p, sum)
		}
		time.Sleep(time.Minute)
	}
	return w
}

// tick runs one tick of a fresh client and poller against Slack behind rt, and
// returns what the tick returned, or what it panicked with.
func (w *world) tick(rt http.RoundTripper) (sum rm.TickSummary, panicked any, err error) {
	rates := map[string]float64{}
	for _, m := range rm.Methods() {
		rates[m] = 6000
	}
	src, err := slackapi.New(slackapi.Options{Token: w.fake.Token(), APIURL: "http://slack.fake/api/",
		HTTPClient: &http.Client{Transport: rt}, RequestTimeout: 5 * time.Second, Rates: rates})
	if err != nil {
		return sum, nil, err
	}
	// Users and conversations.info are re-read every tick (newWorld ticks a minute
	// apart), so that their bad answers are met too.
	// Heads are read on every tick too (a bound of one interval), so that a bad
	// answer to a head read is met, not only to the tail's ranges.
	p := poller.New(w.store, src, poller.Config{Conversations: w.convs, Budget: budget, Interval: time.Minute,
		UserCacheTTL: time.Minute, InfoRefresh: time.Minute, Tracking: poller.TrackingPolicy{HeadMaxAge: time.Minute}})
	defer func() { panicked = recover() }()
	sum, err = p.Tick(context.Background())
	return sum, nil, err
}

// export reads the store's export without the times of our own (last_polled_at,
// last_swept_at, fetched_at), which every read moves: what is left is what Slack
// said, and must not change when Slack says nothing readable.
func (w *world) export(t *testing.T) converge.Lines {
	t.Helper()
	l, err := converge.ModelLines(w.store, w.convs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range l.Conversations {
		l.Conversations[i].LastSweptAt = nil
	}
	for i := range l.Messages {
		l.Messages[i].LastPolledAt = nil
		for j := range l.Messages[i].Replies {
			l.Messages[i].Replies[j].LastPolledAt = nil
		}
	}
	for i := range l.Users {
		l.Users[i].FetchedAt = nil
	}
	return l
}

// sameData reports the differences of after from before, "" if none.
func sameData(before, after converge.Lines) string { return cmp.Diff(before, after) }

// rewriter is an in-memory transport in front of the fake: for the requests of
// method it lets fn see the request's form and the fake's answer, and answers what fn
// returns instead. fn may change the form before the fake sees it (e.g. drop a cursor
// the fake does not know).
type rewriter struct {
	fake   *slackfake.Server
	method string
	before func(form url.Values)
	after  func(form url.Values, status int, body []byte) (int, []byte)
}

func (r rewriter) RoundTrip(req *http.Request) (*http.Response, error) {
	next := r.fake.Transport()
	if path.Base(req.URL.Path) != r.method {
		return next.RoundTrip(req)
	}
	raw, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(raw))
	if err != nil {
		return nil, err
	}
	asked := url.Values{}
	for k, v := range form {
		asked[k] = v
	}
	if r.before != nil {
		r.before(form)
	}
	enc := form.Encode()
	fwd := req.Clone(req.Context())
	fwd.Body, fwd.ContentLength = io.NopCloser(strings.NewReader(enc)), int64(len(enc))
	resp, err := next.RoundTrip(fwd)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	status := resp.StatusCode
	if r.after != nil {
		status, body = r.after(asked, status, body)
	}
	h := resp.Header.Clone()
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return &http.Response{StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
}

// editJSON decodes a successful answer (numbers kept exact), lets fn change it, and
// encodes it again; other answers pass unchanged.
func editJSON(body []byte, fn func(doc map[string]any)) []byte {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc map[string]any
	if dec.Decode(&doc) != nil || doc["ok"] != true {
		return body
	}
	fn(doc)
	out, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return out
}

// pageMessage returns the first (or last) message object of a page, or nil.
func pageMessage(doc map[string]any, last bool) map[string]any {
	msgs, _ := doc["messages"].([]any)
	if len(msgs) == 0 {
		return nil
	}
	i := 0
	if last {
		i = len(msgs) - 1
	}
	m, _ := msgs[i].(map[string]any)
	return m
}
