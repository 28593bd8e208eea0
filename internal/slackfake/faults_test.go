package slackfake

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slack-go/slack"
)

func TestFaultKindsThroughSlackGo(t *testing.T) {
	hist := func(api *slack.Client) error {
		_, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1"})
		return err
	}
	cases := []struct {
		kind  FaultKind
		check func(err error) bool
	}{
		{Status5xx, func(err error) bool {
			var sce slack.StatusCodeError
			return errors.As(err, &sce) && sce.Code == 503
		}},
		{ConnReset, func(err error) bool { return errors.Is(err, syscall.ECONNRESET) }},
		{MalformedJSON, func(err error) bool {
			var se *json.SyntaxError
			return errors.As(err, &se)
		}},
		{TruncatedBody, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		{BadMessage, func(err error) bool {
			var ute *json.UnmarshalTypeError
			return errors.As(err, &ute) && strings.HasSuffix(ute.Field, "latest_reply")
		}},
		{RateLimitNoRetryAfter, func(err error) bool {
			var sce slack.StatusCodeError
			return errors.As(err, &sce) && sce.Code == 429
		}},
	}
	for _, tc := range cases {
		t.Run(tc.kind.String(), func(t *testing.T) {
			s, api := newFake(t, Options{})
			post(t, s, "C1", 3)
			s.InjectFault(Fault{Method: "conversations.history", Kind: tc.kind})
			if err := hist(api); !tc.check(err) {
				t.Fatalf("%v: got error %v (%T)", tc.kind, err, err)
			}
			if err := hist(api); err != nil {
				t.Fatalf("the fault was applied more than once: %v", err)
			}
			if got := s.Requests()[0].Fault; got != tc.kind {
				t.Fatalf("logged fault %v, want %v", got, tc.kind)
			}
		})
	}
}

func TestBadMessageIsOneMessageWithNumericLatestReply(t *testing.T) {
	s, _ := newFake(t, Options{})
	post(t, s, "C1", 5)
	s.InjectFault(Fault{Kind: BadMessage})
	r := rawCall(t, s, "conversations.history", url.Values{"channel": {"C1"}})
	bad := 0
	for _, m := range r.json["messages"].([]any) {
		if _, ok := m.(map[string]any)["latest_reply"].(float64); ok {
			bad++
		}
	}
	if bad != 1 {
		t.Fatalf("%d messages with a numeric latest_reply, want 1: %s", bad, r.body)
	}
}

func TestSlowFaultOutlastsTheClientTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, api := newFake(t, Options{Now: time.Now})
		s.InjectFault(Fault{Kind: Slow, Delay: 2 * time.Minute})
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		start := time.Now()
		_, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("slow response: %v, want the client's deadline", err)
		}
		if waited := time.Since(start); waited != 30*time.Second {
			t.Fatalf("waited %v, want the client's 30s timeout", waited)
		}
		// Without a deadline the answer arrives after the delay.
		s.InjectFault(Fault{Kind: Slow, Delay: 2 * time.Minute})
		start = time.Now()
		_, err = api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1"})
		must(t, err)
		if waited := time.Since(start); waited != 2*time.Minute {
			t.Fatalf("waited %v, want 2m", waited)
		}
	})
}

func TestCursorFaults(t *testing.T) {
	s, api := newFake(t, Options{PageCap: 2})
	post(t, s, "C1", 6)
	first := history(t, api, slack.GetConversationHistoryParameters{})
	cursor := first.ResponseMetaData.NextCursor

	s.InjectFault(Fault{Kind: RepeatCursor})
	again := history(t, api, slack.GetConversationHistoryParameters{Cursor: cursor})
	if again.ResponseMetaData.NextCursor != cursor || !again.HasMore {
		t.Fatalf("RepeatCursor: next_cursor %q, want the cursor sent %q", again.ResponseMetaData.NextCursor, cursor)
	}

	s.InjectFault(Fault{Kind: InvalidCursor})
	_, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1", Cursor: cursor})
	wantCode(t, err, "invalid_cursor")

	// Cursor faults wait for a request that carries a cursor.
	s.InjectFault(Fault{Kind: InvalidCursor})
	history(t, api, slack.GetConversationHistoryParameters{})
	_, err = api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1", Cursor: cursor})
	wantCode(t, err, "invalid_cursor")
}

func TestInjectFaultMethodAndTimes(t *testing.T) {
	s, api := newFake(t, Options{})
	s.InjectFault(Fault{Method: "users.info", Kind: Status5xx, Times: 2, Status: 502})
	history(t, api, slack.GetConversationHistoryParameters{})
	for i := 0; i < 2; i++ {
		_, err := api.GetUserInfo("U1")
		var sce slack.StatusCodeError
		if !errors.As(err, &sce) || sce.Code != 502 {
			t.Fatalf("users.info call %d: %v, want 502", i+1, err)
		}
	}
	_, err := api.GetUserInfo("U1")
	must(t, err)
}

func TestFaultRateIsSeededAndDeterministic(t *testing.T) {
	run := func(seed int64) []FaultKind {
		s, api := newFake(t, Options{Seed: seed})
		post(t, s, "C1", 3)
		s.SetFaultRate([]FaultKind{Status5xx, ConnReset, MalformedJSON, TruncatedBody, BadMessage}, 0.3)
		for i := 0; i < 60; i++ {
			api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1"})
		}
		var out []FaultKind
		for _, r := range s.Requests() {
			out = append(out, r.Fault)
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	if !slices.Equal(a, b) {
		t.Fatal("the same seed gave different faults")
	}
	if slices.Equal(a, c) {
		t.Fatal("different seeds gave the same faults")
	}
	n := 0
	for _, k := range a {
		if k != FaultNone {
			n++
		}
	}
	if n < 6 || n > 30 {
		t.Fatalf("%d faults in 60 requests at p=0.3", n)
	}
}
