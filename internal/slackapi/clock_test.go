package slackapi

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// TestPersistedTimesFromAClockAheadAreNotWaitedFor: a previous run with the clock 2
// days ahead persisted its last call and a Retry-After gate 2 days ahead. The clock is
// now right: the restarted client waits no more than one spacing (last call) and does
// not wait for the Retry-After gate at all, and says why in the log.
func TestPersistedTimesFromAClockAheadAreNotWaitedFor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state func(now time.Time) readmodel.MethodState
		max   time.Duration
	}{
		{"last call", func(now time.Time) readmodel.MethodState {
			return readmodel.MethodState{LastCall: now.Add(48 * time.Hour)}
		}, paced(time.Minute)},
		{"last call and its gate", func(now time.Time) readmodel.MethodState {
			return readmodel.MethodState{LastCall: now.Add(48 * time.Hour), NotBefore: now.Add(48*time.Hour + time.Minute)}
		}, paced(time.Minute)},
		{"retry-after gate", func(now time.Time) readmodel.MethodState {
			return readmodel.MethodState{NotBefore: now.Add(48 * time.Hour)}
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, okPage("1.000001", "")) })
				store := newMemPacing()
				start := time.Now()
				_ = store.SaveMethodState(readmodel.MethodHistory, tc.state(start))
				var logs syncBuffer
				c := newTestClient(t, f, map[string]float64{readmodel.MethodHistory: 1}, func(o *Options) {
					o.Pacing = store
					o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
				})
				if _, err := c.History(bg, historyReq("")); err != nil {
					t.Fatal(err)
				}
				if waited := f.requests("conversations.history")[0].at.Sub(start); waited > tc.max {
					t.Errorf("first call after %v, want at most %v", waited, tc.max)
				}
				if !strings.Contains(logs.String(), "in the future") {
					t.Errorf("log does not explain the ignored time:\n%s", logs.String())
				}
			})
		})
	}
}

// TestRetryAfterOfDaysIsCapped: one 429 asking for two days does not stop the method
// for two days; the wait is capped at maxRetryAfter.
func TestRetryAfterOfDaysIsCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		n := 0
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) {
			if n++; n == 1 {
				w.Header().Set("Retry-After", "172800")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			writeJSON(w, okPage("1.000001", ""))
		})
		c := newTestClient(t, f, nil)
		if _, err := c.History(bg, historyReq("")); err != nil {
			t.Fatal(err)
		}
		reqs := f.requests("conversations.history")
		if gap := reqs[1].at.Sub(reqs[0].at); gap > maxRetryAfter+retryAfterMargin {
			t.Errorf("repeated after %v, want at most %v", gap, maxRetryAfter+retryAfterMargin)
		}
	})
}

// TestClockSkewIsMeasuredFromSlacksDateHeader: Slack's answers carry a Date 4 days
// behind our clock. The client reports the skew (hook and ClockSkew), and warns once,
// not on every call.
func TestClockSkewIsMeasuredFromSlacksDateHeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Date", time.Now().Add(-96*time.Hour).UTC().Format(http.TimeFormat))
			writeJSON(w, okPage("1.000001", ""))
		})
		var logs syncBuffer
		var hooked []time.Duration
		c := newTestClient(t, f, nil, func(o *Options) {
			o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			o.OnClockSkew = func(d time.Duration) { hooked = append(hooked, d) }
		})
		if got := c.ClockSkew(); got != 0 {
			t.Errorf("skew before any answer = %v, want 0", got)
		}
		for range 3 {
			if _, err := c.History(bg, historyReq("")); err != nil {
				t.Fatal(err)
			}
		}
		want := -96 * time.Hour
		if got := c.ClockSkew(); got < want-time.Second || got > want+time.Second {
			t.Errorf("ClockSkew = %v, want about %v", got, want)
		}
		if len(hooked) != 3 || hooked[2] != c.ClockSkew() {
			t.Errorf("OnClockSkew got %v, want the skew after each of 3 answers", hooked)
		}
		if n := strings.Count(logs.String(), "clock differs from Slack"); n != 1 {
			t.Errorf("%d skew warnings, want 1:\n%s", n, logs.String())
		}
	})
}

// TestRestartAfterTheClockMovedForwardDoesNotCallEarly: the previous run called
// conversations.history 10 s ago by Slack's clock; our clock has since moved an hour
// ahead. By our clock the last call looks an hour old; by Slack's, the next call is
// due in 50 s, and that is when it is made.
func TestRestartAfterTheClockMovedForwardDoesNotCallEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		slackNow := func() time.Time { return time.Now().Add(-time.Hour) } // we are an hour ahead
		date := func(w http.ResponseWriter) { w.Header().Set("Date", slackNow().UTC().Format(http.TimeFormat)) }
		f.handle("auth.test", func(w http.ResponseWriter, r *http.Request) {
			date(w)
			writeJSON(w, `{"ok":true,"team_id":"T1","user_id":"U1","bot_id":"B1"}`)
		})
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) {
			date(w)
			writeJSON(w, okPage("1.000001", ""))
		})
		store := newMemPacing()
		start := time.Now()
		_ = store.SaveMethodState(readmodel.MethodHistory, readmodel.MethodState{
			LastCall:      start.Add(-time.Hour - 10*time.Second), // written when our clock was right
			SlackLastCall: slackNow().Add(-10 * time.Second),
		})
		c := newTestClient(t, f, map[string]float64{readmodel.MethodHistory: 1}, func(o *Options) { o.Pacing = store })
		if _, err := c.AuthTest(bg); err != nil {
			t.Fatal(err)
		}
		if _, err := c.History(bg, historyReq("")); err != nil {
			t.Fatal(err)
		}
		if waited := f.requests("conversations.history")[0].at.Sub(start); waited < 50*time.Second-time.Second {
			t.Errorf("called %v after the restart, want about 50 s: one spacing after the last call by Slack's clock", waited)
		}
	})
}
