package slackapi

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// jitterTransport delays each request on its way to the fake by a random time up to
// max, as a network and a scheduler do: the time a call leaves is not the time it
// arrives, and the difference varies from call to call.
// The two methods' streams call it at once, hence the lock on rnd.
type jitterTransport struct {
	next http.RoundTripper
	max  time.Duration
	mu   sync.Mutex
	rnd  *rand.Rand
}

func (t *jitterTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	d := time.Duration(t.rnd.Int64N(int64(t.max)))
	t.mu.Unlock()
	if err := sleepCtx(req.Context(), d); err != nil {
		return nil, err
	}
	return t.next.RoundTrip(req)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// At 1 request a minute against Slack's sliding window, calls whose arrival varies by
// up to 50 ms meet no 429 in 15 minutes: the spacing keeps a margin. Paced exactly at
// the rate, a call that arrived sooner after its predecessor than that one did was the
// second in the window: a 429, and a whole minute lost (the explorable demo's fake
// answered 429 to 4 of 11 calls per method in 11 minutes).
func TestOnePerMinuteWithArrivalJitterMeetsNo429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := slackfake.New(slackfake.Options{PageCap: 15, RatePerMinute: map[string]int{
			readmodel.MethodHistory: 1, readmodel.MethodReplies: 1,
		}})
		fake.AddConversation(slackfake.PublicChannel("C0AAAAAAA", "general"))
		fake.AddUser(slackfake.User{ID: "U0AAAAAAA", DisplayName: "avery"})
		parent, _ := fake.Post("C0AAAAAAA", "U0AAAAAAA", "hello")
		fake.Reply("C0AAAAAAA", parent, "U0AAAAAAA", "hi")
		rates, _ := readmodel.ProfileRates(readmodel.ProfileNonMarketplace)
		outcomes := map[string]map[string]int{}
		var mu sync.Mutex
		c, err := New(Options{
			Token: fake.Token(), APIURL: "http://slack.fake/api/", Rates: rates,
			HTTPClient: &http.Client{Transport: &jitterTransport{next: fake.Transport(), max: 50 * time.Millisecond, rnd: rand.New(rand.NewPCG(1, 2))}},
			OnCall: func(method, outcome string, _ time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				if outcomes[method] == nil {
					outcomes[method] = map[string]int{}
				}
				outcomes[method][outcome]++
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
		defer cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				_, _ = c.History(ctx, readmodel.HistoryRequest{Channel: "C0AAAAAAA", Limit: 15})
			}
		}()
		for ctx.Err() == nil {
			_, _ = c.Replies(ctx, readmodel.RepliesRequest{Channel: "C0AAAAAAA", TS: parent, Limit: 15})
		}
		<-done
		for _, m := range []string{readmodel.MethodHistory, readmodel.MethodReplies} {
			got := outcomes[m]
			if got["rate_limited"] > 0 {
				t.Errorf("%s: %d answers 429 in 15 minutes at the fake's own rate (outcomes %v)", m, got["rate_limited"], got)
			}
			if got["ok"] < 14 {
				t.Errorf("%s: %d calls answered in 15 minutes, want 14 (1 a minute, a margin under it)", m, got["ok"])
			}
		}
	})
}

// A process stopped (SIGSTOP) while a call waits for its limiter's reservation, then
// continued, lets that call go late; the next call of the method must still wait the
// spacing after it. The limiter counts from when the reservation was due, not from
// when the call left, and let the next call go 25 ms after it.
func TestCallAfterAStoppedProcessContinuesKeepsTheSpacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, okPage("1.000001", "")) })
		c := newTestClient(t, f, map[string]float64{readmodel.MethodHistory: 1})
		p := c.pacers[readmodel.MethodHistory]
		stopped := false
		p.sleep = func(ctx context.Context, d time.Duration) error {
			if d > 0 && !stopped {
				stopped = true
				d += 5 * time.Minute // SIGSTOP during the wait, SIGCONT five minutes later
			}
			return sleepCtx(ctx, d)
		}
		for range 3 {
			if _, err := c.History(bg, historyReq("")); err != nil {
				t.Fatal(err)
			}
		}
		reqs := f.requests("conversations.history")
		if gap := reqs[2].at.Sub(reqs[1].at); gap < time.Minute {
			t.Errorf("the call after the stopped one went %v after it, want at least the spacing, 1m", gap)
		}
	})
}

// A 429 is logged with the wait that really follows it (the 429 counts as a call, so
// the method's spacing runs from it), and the method keeps a wider margin for a
// while: the warning said wait=2s and the next call came 60 s later.
func TestRateLimitLogsTheRealWaitAndWidensTheMargin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		n := 0
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) {
			if n++; n == 2 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				writeJSON(w, `{"ok":false,"error":"ratelimited"}`)
				return
			}
			writeJSON(w, okPage("1.000001", ""))
		})
		var logs syncBuffer
		c := newTestClient(t, f, map[string]float64{readmodel.MethodHistory: 1}, func(o *Options) {
			o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		})
		for range 3 {
			if _, err := c.History(bg, historyReq("")); err != nil {
				t.Fatal(err)
			}
		}
		reqs := f.requests("conversations.history")
		if len(reqs) != 4 {
			t.Fatalf("%d requests, want 4 (one repeated after its 429)", len(reqs))
		}
		widened := paced(paced(time.Minute)) // the margin doubled: 2% to 4%
		after429 := reqs[2].at.Sub(reqs[1].at)
		if after429 < time.Minute {
			t.Errorf("repeated %v after the 429, want the spacing, at least 1m", after429)
		}
		if want := fmt.Sprintf("wait=%v", after429); !strings.Contains(logs.String(), want) {
			t.Errorf("the 429's warning does not say the wait that followed (%s):\n%s", want, logs.String())
		}
		if gap := reqs[3].at.Sub(reqs[2].at); gap < widened-time.Second/10 {
			t.Errorf("the call after the repeated one came %v after it, want the widened spacing %v", gap, widened)
		}
	})
}
