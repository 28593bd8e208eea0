package slackapi

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// TestRateLimitShapesAreWaitedOutAndTheSameRequestRepeated covers every shape in which
// slack-go v0.35 returns a rate limit: the method is not called again
// before the wait (+1 s margin) has passed since the 429 arrived, and the repeated
// request is the same (same cursor, same form).
func TestRateLimitShapesAreWaitedOutAndTheSameRequestRepeated(t *testing.T) {
	cases := []struct {
		name    string
		perMin  float64
		respond func(w http.ResponseWriter)
		minWait time.Duration
	}{
		{"429 with integer Retry-After (*RateLimitedError)", 600, func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"ok":false,"error":"ratelimited"}`))
		}, 30 * time.Second},
		{"429 with HTTP-date Retry-After (*strconv.NumError)", 600, func(w http.ResponseWriter) {
			now := time.Now().UTC()
			w.Header().Set("Date", now.Format(http.TimeFormat))
			w.Header().Set("Retry-After", now.Add(45*time.Second).Format(http.TimeFormat))
			w.WriteHeader(http.StatusTooManyRequests)
		}, 45 * time.Second},
		{"429 with garbage Retry-After (*strconv.NumError), 1/min", 1, func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "soon")
			w.WriteHeader(http.StatusTooManyRequests)
		}, time.Minute},
		{"429 without Retry-After (StatusCodeError), 1/min: one spacing", 1, func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusTooManyRequests)
		}, time.Minute},
		{"429 without Retry-After (StatusCodeError), 600/min: at least 1 s", 600, func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusTooManyRequests)
		}, time.Second},
		{"HTTP 200 ok:false ratelimited with Retry-After", 600, func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "20")
			writeJSON(w, `{"ok":false,"error":"ratelimited"}`)
		}, 20 * time.Second},
		{"HTTP 200 ok:false ratelimited without Retry-After, 20/min", 20, func(w http.ResponseWriter) {
			writeJSON(w, `{"ok":false,"error":"ratelimited"}`)
		}, 3 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				var n atomic.Int32
				f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) {
					if n.Add(1) == 1 {
						tc.respond(w)
						return
					}
					writeJSON(w, okPage("1700000000.000100", "next-2"))
				})
				var outcomes []string
				c := newTestClient(t, f, map[string]float64{readmodel.MethodHistory: tc.perMin}, func(o *Options) {
					o.OnCall = func(method, outcome string, _ time.Duration) { outcomes = append(outcomes, outcome) }
				})
				page, err := c.History(bg, historyReq("cursor-1"))
				if err != nil {
					t.Fatalf("History: %v", err)
				}
				if page.NextCursor != "next-2" || len(page.Messages) != 1 {
					t.Errorf("page = %+v, want the second answer", page)
				}
				reqs := f.requests("conversations.history")
				if len(reqs) != 2 {
					t.Fatalf("got %d requests, want 2", len(reqs))
				}
				if gap := reqs[1].at.Sub(reqs[0].at); gap < tc.minWait {
					t.Errorf("repeated after %v, want >= %v", gap, tc.minWait)
				} else if spacing := time.Duration(float64(time.Minute) / tc.perMin); gap > max(tc.minWait+retryAfterMargin, paced(paced(spacing)))+time.Second {
					t.Errorf("repeated after %v, want about %v + margin", gap, tc.minWait)
				}
				if got := reqs[1].form.Get("cursor"); got != "cursor-1" {
					t.Errorf("repeated cursor = %q, want cursor-1", got)
				}
				if !reflect.DeepEqual(reqs[0].form, reqs[1].form) {
					t.Errorf("repeated form %v differs from %v", reqs[1].form, reqs[0].form)
				}
				if want := []string{"rate_limited", "ok"}; !reflect.DeepEqual(outcomes, want) {
					t.Errorf("OnCall outcomes = %v, want %v", outcomes, want)
				}
			})
		})
	}
}

func TestRateLimitIsWaitedOutRepeatedly(t *testing.T) {
	// Only ctx ends a rate-limit wait: three 429s in a row are three waits.
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		var n atomic.Int32
		f.handle("conversations.replies", func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) <= 3 {
				w.Header().Set("Retry-After", "10")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			writeJSON(w, okPage("1700000000.000100", ""))
		})
		c := newTestClient(t, f, nil)
		start := time.Now()
		if _, err := c.Replies(bg, readmodel.RepliesRequest{Channel: "C1", TS: "1700000000.000100", Limit: 1000, Cursor: "k"}); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 30*time.Second {
			t.Errorf("took %v, want >= 30s for three Retry-After: 10", d)
		}
		for _, r := range f.requests("conversations.replies") {
			if r.form.Get("cursor") != "k" || r.form.Get("ts") != "1700000000.000100" {
				t.Errorf("request form %v, want the same cursor and ts each time", r.form)
			}
		}
	})
}

func TestCancelAbortsRetryAfterWaitPromptly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusTooManyRequests)
		})
		c := newTestClient(t, f, nil)
		ctx, cancel := context.WithCancel(bg)
		time.AfterFunc(5*time.Second, cancel)
		start := time.Now()
		_, err := c.History(ctx, historyReq(""))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("returned after %v, want right at the 5s cancel", d)
		}
		if n := len(f.requests("conversations.history")); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
}

func TestCancelAbortsPacingWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, okPage("1.000001", "")) })
		c := newTestClient(t, f, map[string]float64{readmodel.MethodHistory: 1})
		if _, err := c.History(bg, historyReq("")); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(bg)
		time.AfterFunc(2*time.Second, cancel)
		if _, err := c.History(ctx, historyReq("")); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		// The cancelled wait gave its token back: the next call still waits only
		// for the spacing after the first call, not a further minute.
		start := time.Now()
		if _, err := c.History(bg, historyReq("")); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > paced(time.Minute)-2*time.Second {
			t.Errorf("third call waited %v, want <= %v (the spacing since the first call)", d, paced(time.Minute)-2*time.Second)
		}
	})
}
