package slackapi

import (
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// While a call waits before its request, Waiting says until when and why: the
// method's spacing, or a 429's Retry-After; and nothing once the request is made.
func TestWaitingReportsTheRateLimitAndRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		var n atomic.Int32
		f.handle("conversations.history", func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 2 {
				w.Header().Set("Retry-After", "90")
				w.WriteHeader(http.StatusTooManyRequests)
				writeJSON(w, `{"ok":false,"error":"ratelimited"}`)
				return
			}
			writeJSON(w, okPage("1.000001", ""))
		})
		c := newTestClient(t, f, map[string]float64{readmodel.MethodHistory: 1})
		if _, ok := waitingOf(c); ok {
			t.Error("Waiting before any call reports a wait")
		}
		if _, err := c.History(bg, historyReq("")); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := c.History(bg, historyReq("")); err != nil {
				t.Error(err)
			}
		}()
		synctest.Wait() // the second call sleeps on the 1-a-minute spacing
		w, ok := waitingOf(c)
		if !ok || w.why != WaitRate || !w.until.Equal(start.Add(paced(time.Minute))) {
			t.Errorf("waiting on the spacing: %+v %v, want until %v (%s)", w, ok, start.Add(paced(time.Minute)), WaitRate)
		}
		time.Sleep(paced(time.Minute) + time.Second) // the request gets the 429: Retry-After 90 s (+ margin), past the spacing
		synctest.Wait()
		w, ok = waitingOf(c)
		if !ok || w.why != WaitRetryAfter || w.until.Before(start.Add(paced(time.Minute)+90*time.Second)) {
			t.Errorf("waiting on Retry-After: %+v %v, want %s until at least 90 s after the 429", w, ok, WaitRetryAfter)
		}
		<-done
		if w, ok := waitingOf(c); ok {
			t.Errorf("Waiting after the call: %+v", w)
		}
	})
}

type wait struct {
	until time.Time
	why   string
}

func waitingOf(c *Client) (wait, bool) {
	u, why, ok := c.Waiting(readmodel.MethodHistory)
	return wait{u, why}, ok
}
