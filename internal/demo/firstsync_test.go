package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/status"
)

// lockedBuffer is a log destination the poller's streams write concurrently.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// records decodes the JSON log lines with the given msg.
func (l *lockedBuffer) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		var m map[string]any
		must(t, json.Unmarshal([]byte(line), &m))
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// At 1 request a minute, the first sync's estimate after each tick converges on when
// it ends: every estimate made once a conversation was read, added to its time, is
// within a quarter of the whole sync of the end. It used to be the time to read the
// conversations not read yet, one call each, or a rotation of what was stored so
// far: 8, 6, then 10 minutes while 95 of 377 messages were in after 11 minutes.
func TestFirstSyncEstimateConverges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake, rates := nonMarketplaceFake(t)
		var convs []string
		for c := range 6 {
			id := fmt.Sprintf("C0SYNC%03d", c)
			convs = append(convs, id)
			must(t, fake.AddConversation(slackfake.PublicChannel(id, id)))
			for i := range 60 {
				ts, err := fake.Post(id, "U0AAAAAAA", fmt.Sprintf("message %d", i))
				must(t, err)
				if i%10 == 0 {
					for r := range 2 {
						_, err := fake.Reply(id, ts, "U0AAAAAAA", fmt.Sprintf("reply %d", r))
						must(t, err)
					}
				}
				time.Sleep(time.Minute)
			}
		}
		store := openTestStore(t)
		var logs lockedBuffer
		start := time.Now()
		p := poller.New(store, fakeSource(t, fake, rates, store), poller.Config{
			Conversations: convs, Budget: defaultBudget, Rates: rates, Interval: time.Minute,
			Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		})
		runFor(t, p, time.Hour)
		done := logs.records(t, "first sync complete")
		if len(done) != 1 {
			t.Fatalf("%d 'first sync complete' lines, want 1", len(done))
		}
		end := stampOf(t, done[0])
		whole := end.Sub(start)
		progress := logs.records(t, "first sync in progress")
		if len(progress) < 3 {
			t.Fatalf("%d progress lines over a first sync of %v, want one a tick", len(progress), whole)
		}
		for _, l := range progress {
			if l["conversations_read"] == 0.0 {
				continue
			}
			at := stampOf(t, l)
			left, err := time.ParseDuration(l["expect_left"].(string))
			must(t, err)
			if off := at.Add(left).Sub(end).Abs(); off > whole/4 {
				t.Errorf("at %v (%v of %v conversations read) the estimate was %v left, ending %v from the real end (%v in)",
					at.Sub(start), l["conversations_read"], l["conversations"], left, off, whole)
			}
		}
		for _, l := range progress {
			t.Logf("at %v: %v of %v read, %v left", stampOf(t, l).Sub(start), l["conversations_read"], l["conversations"], l["expect_left"])
		}
		t.Logf("first sync took %v; %d progress lines", whole, len(progress))
	})
}

func stampOf(t *testing.T, l map[string]any) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, l["time"].(string))
	must(t, err)
	return at
}

// While a long tick runs, the daemon's status says so — which tick, since when, its
// calls so far — instead of "next tick: … (now)" for minutes.
func TestStatusShowsTheTickInProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake, rates := nonMarketplaceFake(t)
		convs := backlogWorkspace(t, fake)
		store := openTestStore(t)
		p := poller.New(store, fakeSource(t, fake, rates, store), poller.Config{Conversations: convs, Budget: defaultBudget, Rates: rates})
		if _, err := p.Tick(t.Context()); err != nil { // a first tick, so that a last tick is stored
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = p.Tick(ctx)
		}()
		time.Sleep(2*time.Minute + time.Second)
		var out strings.Builder
		must(t, store.View(func(tx rm.Tx) error {
			r, err := status.Build(tx, status.Input{Configured: convs, Interval: time.Minute, Now: time.Now(), DaemonRunning: true, Running: p.Running})
			if err != nil {
				return err
			}
			if r.TickInProgress == nil || r.TickInProgress.Tick != 2 || r.TickInProgress.Calls[rm.MethodHistory] == 0 {
				t.Errorf("tick_in_progress = %+v, want tick 2 with its history calls so far", r.TickInProgress)
			}
			return r.WriteText(&out)
		}))
		cancel()
		<-done
		if !strings.Contains(out.String(), "tick in progress: tick 2 since ") || strings.Contains(out.String(), "(now)") {
			t.Errorf("status text does not show the tick in progress:\n%s", out.String())
		}
		if _, ok := p.Running(); ok {
			t.Error("Running reports a tick after it ended")
		}
	})
}
