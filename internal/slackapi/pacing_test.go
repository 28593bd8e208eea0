package slackapi

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

func historyReq(cursor string) readmodel.HistoryRequest {
	return readmodel.HistoryRequest{Channel: "C1", Limit: readmodel.HistoryPageLimit, Cursor: cursor}
}

// paced is spacing with the pacing margin a method starts with.
func paced(spacing time.Duration) time.Duration {
	return spacing + time.Duration(float64(spacing)*marginFloor)
}

// Calls are spaced a margin over the rate (1.2 s over a minute): paced exactly at it,
// a call that arrives a little sooner after its predecessor than that one did is the
// second in Slack's minute.
func TestOnePerMinuteSpacesCallsAMarginOverSixtySecondsApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, okPage("1.000001", "")) })
		c := newTestClient(t, f, map[string]float64{readmodel.MethodHistory: 1})
		for range 3 {
			if _, err := c.History(bg, historyReq("")); err != nil {
				t.Fatal(err)
			}
		}
		reqs := f.requests("conversations.history")
		if len(reqs) != 3 {
			t.Fatalf("got %d requests, want 3", len(reqs))
		}
		for i := 1; i < len(reqs); i++ {
			gap := reqs[i].at.Sub(reqs[i-1].at)
			if gap != paced(time.Minute) {
				t.Errorf("gap %d = %v, want %v (60 s and the margin, evenly spaced, no more)", i, gap, paced(time.Minute))
			}
		}
	})
}

func TestTwentyPerMinuteSpacesCallsThreeSecondsApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("users.conversations", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, `{"ok":true,"channels":[],"response_metadata":{"next_cursor":""}}`)
		})
		c := newTestClient(t, f, map[string]float64{readmodel.MethodUsersConversations: 20})
		for range 5 {
			if _, _, err := c.MemberConversations(bg, nil, ""); err != nil {
				t.Fatal(err)
			}
		}
		reqs := f.requests("users.conversations")
		for i := 1; i < len(reqs); i++ {
			if gap := reqs[i].at.Sub(reqs[i-1].at); gap < 3*time.Second {
				t.Errorf("gap %d = %v, want >= 3s", i, gap)
			}
		}
	})
}

func TestMethodsArePacedIndependently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, okPage("1.000001", "")) })
		f.handle("conversations.replies", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, okPage("1.000001", "")) })
		c := newTestClient(t, f, map[string]float64{readmodel.MethodHistory: 1, readmodel.MethodReplies: 1})
		start := time.Now()
		if _, err := c.History(bg, historyReq("")); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Replies(bg, readmodel.RepliesRequest{Channel: "C1", TS: "1.000001", Limit: 1000}); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("history then replies took %v, want 0 (separate limiters)", d)
		}
	})
}

func TestPersistedLastCallPreventsEarlyCallAfterRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, okPage("1.000001", "")) })
		store := newMemPacing()
		rates := map[string]float64{readmodel.MethodHistory: 1}
		withStore := func(o *Options) { o.Pacing = store }

		c1 := newTestClient(t, f, rates, withStore)
		if _, err := c1.History(bg, historyReq("")); err != nil {
			t.Fatal(err)
		}
		first := f.requests("conversations.history")[0].at
		if st := store.m[readmodel.MethodHistory]; !st.LastCall.Equal(first) {
			t.Fatalf("persisted LastCall = %v, want %v", st.LastCall, first)
		}

		time.Sleep(10 * time.Second) // the daemon restarts 10 s later
		c2 := newTestClient(t, f, rates, withStore)
		if _, err := c2.History(bg, historyReq("")); err != nil {
			t.Fatal(err)
		}
		second := f.requests("conversations.history")[1].at
		if gap := second.Sub(first); gap < time.Minute {
			t.Errorf("restarted client called %v after the previous one, want >= 60s", gap)
		}
	})
}

func TestPersistedNotBeforePreventsEarlyCallAfterRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, okPage("1.000001", "")) })
		store := newMemPacing()
		notBefore := time.Now().Add(90 * time.Second)
		_ = store.SaveMethodState(readmodel.MethodHistory, readmodel.MethodState{NotBefore: notBefore})
		c := newTestClient(t, f, map[string]float64{readmodel.MethodHistory: 600}, func(o *Options) { o.Pacing = store })
		if _, err := c.History(bg, historyReq("")); err != nil {
			t.Fatal(err)
		}
		if at := f.requests("conversations.history")[0].at; at.Before(notBefore) {
			t.Errorf("call at %v, before persisted NotBefore %v", at, notBefore)
		}
	})
}

func TestRateLimitNotBeforeIsPersisted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusTooManyRequests)
		})
		store := newMemPacing()
		c := newTestClient(t, f, nil, func(o *Options) { o.Pacing = store })
		ctx, cancel := context.WithCancel(bg)
		arrived := time.Now()
		time.AfterFunc(time.Second, cancel) // shut down during the wait
		if _, err := c.History(ctx, historyReq("")); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		st := store.m[readmodel.MethodHistory]
		if want := arrived.Add(120 * time.Second); st.NotBefore.Before(want) {
			t.Errorf("persisted NotBefore = %v, want >= %v", st.NotBefore, want)
		}
	})
}

func TestWaitIsNotLimitedByCallerDeadline(t *testing.T) {
	// rate.Limiter.Wait fails at once when the ctx deadline is nearer than the
	// token; our wait must simply wait (the deadline is far enough here).
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, okPage("1.000001", "")) })
		c := newTestClient(t, f, map[string]float64{readmodel.MethodHistory: 1}, func(o *Options) { o.RequestTimeout = 5 * time.Second })
		if _, err := c.History(bg, historyReq("")); err != nil {
			t.Fatal(err)
		}
		// The second call waits 60 s, far beyond RequestTimeout: the timeout must
		// apply to the HTTP attempt only.
		if _, err := c.History(bg, historyReq("")); err != nil {
			t.Fatalf("second call: %v (RequestTimeout applied to the pacing wait?)", err)
		}
	})
}

// storeLike is a readmodel.Store whose transactions only know pacing state; the
// embedded nil Tx makes any other method panic.
type storeLike struct{ mem *memPacing }

func (s storeLike) View(fn func(readmodel.Tx) error) error   { return fn(txLike{mem: s.mem}) }
func (s storeLike) Update(fn func(readmodel.Tx) error) error { return fn(txLike{mem: s.mem}) }
func (s storeLike) Close() error                             { return nil }

type txLike struct {
	readmodel.Tx
	mem *memPacing
}

func (t txLike) MethodState(m string) (readmodel.MethodState, bool, error) {
	return t.mem.LoadMethodState(m)
}
func (t txLike) PutMethodState(m string, st readmodel.MethodState) error {
	return t.mem.SaveMethodState(m, st)
}

func TestStorePacingAdaptsStore(t *testing.T) {
	mem := newMemPacing()
	p := StorePacing(storeLike{mem})
	if _, ok, err := p.LoadMethodState(readmodel.MethodReplies); ok || err != nil {
		t.Fatalf("empty store: ok %v err %v", ok, err)
	}
	want := readmodel.MethodState{LastCall: time.Unix(100, 0), NotBefore: time.Unix(200, 0)}
	if err := p.SaveMethodState(readmodel.MethodReplies, want); err != nil {
		t.Fatal(err)
	}
	got, ok, err := p.LoadMethodState(readmodel.MethodReplies)
	if err != nil || !ok || got != want {
		t.Errorf("load = %+v %v %v, want %+v", got, ok, err, want)
	}
}

// A page says when its request went out, after the pacing wait: the poller reads its
// messages as of then. Before, the read time was taken before the wait, a minute early
// at 1 request a minute, and every message looked a minute staler than it was.
func TestPageSentAtIsAfterThePacingWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, okPage("1.000001", "")) })
		f.handle("conversations.replies", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, okPage("1.000001", "")) })
		c := newTestClient(t, f, map[string]float64{readmodel.MethodHistory: 1, readmodel.MethodReplies: 1})
		for range 2 {
			before := time.Now()
			p, err := c.History(bg, historyReq(""))
			if err != nil {
				t.Fatal(err)
			}
			reqs := f.requests("conversations.history")
			if at := reqs[len(reqs)-1].at; !p.SentAt.Equal(at) {
				t.Errorf("history SentAt = %v, want the request's time %v (called at %v)", p.SentAt, at, before)
			}
		}
		if got := f.requests("conversations.history"); got[1].at.Sub(got[0].at) < time.Minute {
			t.Fatalf("the second call did not wait for its turn: the test proves nothing")
		}
		for range 2 {
			p, err := c.Replies(bg, readmodel.RepliesRequest{Channel: "C1", TS: "1.000001"})
			if err != nil {
				t.Fatal(err)
			}
			reqs := f.requests("conversations.replies")
			if at := reqs[len(reqs)-1].at; !p.SentAt.Equal(at) {
				t.Errorf("replies SentAt = %v, want the request's time %v", p.SentAt, at)
			}
		}
	})
}
