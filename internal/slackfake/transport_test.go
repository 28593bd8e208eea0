package slackfake

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

func TestOverLoopbackHTTP(t *testing.T) {
	s, _ := newFake(t, Options{})
	ts := post(t, s, "C1", 3)
	srv := httptest.NewServer(s)
	defer srv.Close()
	api := slack.New(s.Token(), slack.OptionAPIURL(srv.URL+"/"))

	a, err := api.AuthTest()
	must(t, err)
	if a.BotID != s.BotID() || a.Header.Get("X-OAuth-Scopes") == "" {
		t.Fatalf("auth.test over HTTP: %+v", a)
	}
	h, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1"})
	must(t, err)
	if len(h.Messages) != 3 || h.Messages[0].Timestamp != string(ts[2]) {
		t.Fatalf("history over HTTP: %v", tsList(h.Messages))
	}
	_, err = api.GetUserInfo("U1")
	must(t, err)
	_, err = api.GetConversationInfo(&slack.GetConversationInfoInput{ChannelID: "C1"})
	must(t, err)

	s.InjectFault(Fault{Kind: ConnReset})
	if _, err := api.AuthTest(); err == nil {
		t.Fatal("ConnReset over HTTP: no error")
	}
	s.InjectFault(Fault{Kind: TruncatedBody})
	if _, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1"}); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("TruncatedBody over HTTP: %v, want unexpected EOF", err)
	}
	s.InjectFault(Fault{Kind: Slow})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := api.AuthTestContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Slow over HTTP: %v, want the client's deadline", err)
	}
	if _, err := api.AuthTest(); err != nil {
		t.Fatalf("after the faults: %v", err)
	}
}

func TestTransportHonoursCancellationAndSetsHeaders(t *testing.T) {
	s, api := newFake(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := api.AuthTestContext(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
	req, _ := http.NewRequest(http.MethodPost, apiURL+"auth.test", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token())
	resp, err := s.Client().Do(req)
	must(t, err)
	body, _ := io.ReadAll(resp.Body)
	if resp.ContentLength != int64(len(body)) || resp.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
		t.Fatalf("Content-Length %d / %q for a %d-byte body", resp.ContentLength, resp.Header.Get("Content-Length"), len(body))
	}
	if resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
}

func TestRequestLog(t *testing.T) {
	c := &clock{t: t0}
	s, api := newFake(t, Options{Now: c.now})
	history(t, api, slack.GetConversationHistoryParameters{Limit: 15, Oldest: "1796000000.000000"})
	c.advance(time.Minute)
	api.GetUserInfo("U404")
	got := s.Requests()
	if len(got) != 2 {
		t.Fatalf("%d requests logged, want 2", len(got))
	}
	h := got[0]
	want := url.Values{"channel": {"C1"}, "limit": {"15"}, "oldest": {"1796000000.000000"}, "inclusive": {"0"}, "include_all_metadata": {"0"}}
	if h.Method != "conversations.history" || h.Status != 200 || h.Error != "" || !h.Time.Equal(t0) || h.Params.Encode() != want.Encode() {
		t.Fatalf("history request logged as %+v", h)
	}
	if h.Params.Has("token") {
		t.Fatal("the token was logged")
	}
	u := got[1]
	if u.Method != "users.info" || u.Error != "user_not_found" || !u.Time.Equal(t0.Add(time.Minute)) || u.Params.Get("user") != "U404" {
		t.Fatalf("users.info request logged as %+v", u)
	}
	s.ResetRequests()
	if len(s.Requests()) != 0 {
		t.Fatal("ResetRequests left requests")
	}
}
