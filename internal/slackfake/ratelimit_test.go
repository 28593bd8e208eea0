package slackfake

import (
	"errors"
	"net/http"
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slack-go/slack"
)

func TestRateLimitPerMethodAndToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{RatePerMinute: map[string]int{"conversations.history": 2}})
		must(t, s.AddConversation(PublicChannel("C1", "general")))
		api := clientFor(s)
		hist := func() error {
			_, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1"})
			return err
		}
		must(t, hist())
		time.Sleep(20 * time.Second)
		must(t, hist())
		time.Sleep(10 * time.Second) // 30 s after the first call

		err := hist()
		var rl *slack.RateLimitedError
		if !errors.As(err, &rl) || rl.RetryAfter != 30*time.Second {
			t.Fatalf("third call within a minute: %v, want RateLimitedError with Retry-After 30s", err)
		}
		last := s.Requests()[len(s.Requests())-1]
		if last.Status != http.StatusTooManyRequests || last.Error != "ratelimited" {
			t.Fatalf("logged %d %q, want 429 ratelimited", last.Status, last.Error)
		}
		r := rawCall(t, s, "conversations.history", url.Values{"channel": {"C1"}})
		if r.status != 429 || r.header.Get("Retry-After") != "30" || r.json["error"] != "ratelimited" || r.json["ok"] != false {
			t.Fatalf("raw 429: %d Retry-After %q body %s", r.status, r.header.Get("Retry-After"), r.body)
		}

		// Other methods and other tokens have their own budgets.
		if _, err := api.AuthTest(); err != nil {
			t.Fatalf("auth.test is limited by history's budget: %v", err)
		}
		r = rawCall(t, s, "conversations.history", url.Values{"channel": {"C1"}, "token": {"xoxb-other"}})
		if r.status != 200 || r.json["error"] != "invalid_auth" {
			t.Fatalf("another token: %d %s, want its own budget (and invalid_auth)", r.status, r.body)
		}

		time.Sleep(30 * time.Second) // the first call leaves the window
		must(t, hist())
	})
}

func TestRateLimitOnePerMinute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{RatePerMinute: map[string]int{"conversations.replies": 1}})
		must(t, s.AddConversation(PublicChannel("C1", "general")))
		ts := mustTS(t)(s.Post("C1", "U1", "x"))
		api := clientFor(s)
		rep := func() error {
			_, _, _, err := api.GetConversationReplies(&slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: string(ts)})
			return err
		}
		must(t, rep())
		time.Sleep(59 * time.Second)
		var rl *slack.RateLimitedError
		if err := rep(); !errors.As(err, &rl) || rl.RetryAfter != time.Second {
			t.Fatalf("59 s later: %v, want Retry-After 1s", err)
		}
		time.Sleep(time.Second)
		must(t, rep())
	})
}
