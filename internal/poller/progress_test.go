package poller_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/mock"
)

// syncBuffer is a log destination the streams write concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines decodes the JSON log lines with the given msg.
func (s *syncBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// A tick at 1 request a minute is minutes of waiting: it logs when it starts, the
// first sync's least duration, and at least every 30 s what it reads, its calls so far
// and which method waits until when.
func TestLongTickLogsProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newStub()
		src.addChannel("C1")
		src.addChannel("C2")
		src.post(msg("C1", rm.TSFromUnix(time.Now().Add(-time.Hour).Unix()), "U1", "hello"))
		src.before = func(method string) {
			if method == rm.MethodHistory {
				time.Sleep(70 * time.Second) // a call paced at 1 a minute
			}
		}
		var logs syncBuffer
		// Every conversations.history call waits on its rate limit until a fixed
		// time, as slackapi.Client reports while its pacer sleeps.
		until := time.Now().Add(time.Minute)
		waitingSrc := &mock.Source{Next: src, WaitingFn: func(method string) (time.Time, string, bool) {
			if method == rm.MethodHistory {
				return until, "rate limit", true
			}
			return time.Time{}, "", false
		}}
		p := poller.New(openStore(t), waitingSrc, poller.Config{
			Conversations: []string{"C1", "C2"}, Budget: defaultBudget(),
			Rates:  map[string]float64{rm.MethodHistory: 1, rm.MethodReplies: 1},
			Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		})
		if _, err := p.Tick(t.Context()); err != nil {
			t.Fatal(err)
		}

		if got := logs.lines(t, "tick started"); len(got) != 1 || got[0]["tick"] != 1.0 {
			t.Errorf("tick started lines = %v, want one for tick 1", got)
		}
		first := logs.lines(t, "first sync: conversations never read")
		if len(first) != 1 || first[0]["conversations"] != 2.0 || first[0]["at_least"] != "2m" {
			t.Errorf("first sync lines = %v, want 2 conversations, at least 2m at 1 a minute", first)
		}
		if why, _ := first[0]["why"].(string); !strings.Contains(why, "for its last 72h (1 a minute)") {
			t.Errorf("first sync line says %q, want the 72h window and the rate", why)
		}
		progress := logs.lines(t, "tick in progress")
		// Two history calls of 70 s each: 140 s, so at least 4 progress lines.
		if len(progress) < 4 {
			t.Fatalf("%d progress lines in a 140 s tick, want at least 4 (one per 30 s)", len(progress))
		}
		p0 := progress[0]
		reading, _ := p0["reading"].(map[string]any)
		waiting, _ := p0["waiting"].(map[string]any)
		calls, _ := p0["calls"].(map[string]any)
		if r, _ := reading[rm.MethodHistory].(string); !strings.HasPrefix(r, "C1 since ") || !strings.Contains(r, "(for 30s)") {
			t.Errorf("first progress line reads %q, want C1's head read, for 30s", r)
		}
		if w, _ := waiting[rm.MethodHistory].(string); !strings.Contains(w, "(rate limit, in ") {
			t.Errorf("first progress line: waiting %v, want conversations.history waiting on its rate limit", waiting)
		}
		if calls[rm.MethodHistory] != 1.0 || p0["elapsed"] != "30s" {
			t.Errorf("first progress line: calls %v, elapsed %v; want 1 history call at 30s", calls, p0["elapsed"])
		}

		// A second tick of the same process logs no first-sync line.
		if _, err := p.Tick(t.Context()); err != nil {
			t.Fatal(err)
		}
		if n := len(logs.lines(t, "first sync: conversations never read")); n != 1 {
			t.Errorf("%d first-sync lines after two ticks, want 1", n)
		}
	})
}

// While readable conversations were never read, every tick says how far the first
// sync is; a conversation the bot cannot read is not waited for.
func TestFirstSyncProgressAfterEachTick(t *testing.T) {
	src := newStub()
	for _, ch := range []string{"C1", "C2", "C3"} {
		src.addChannel(ch)
		src.post(msg(ch, ts(3600, 1), "U1", "hello"))
	}
	src.addChannel("C4") // gone: the bot cannot read it
	src.fail(rm.MethodConversationInfo, "C4", &rm.APIError{Method: rm.MethodConversationInfo, Code: "channel_not_found", Class: rm.ClassConversation}, -1)
	var logs syncBuffer
	clock := &fixedClock{t: epoch}
	p := poller.New(openStore(t), src, poller.Config{
		Conversations: []string{"C1", "C2", "C3", "C4"},
		Budget:        poller.Budget{HistoryCalls: 1, RepliesCalls: 1, UsersInfoCalls: 5},
		Now:           clock.Now, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	for want := 1; want <= 3; want++ {
		if _, err := p.Tick(t.Context()); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
		got := logs.lines(t, "first sync in progress")
		if want == 3 {
			if len(got) != 2 {
				t.Errorf("after the last conversation was read: %d progress lines in all, want none more", len(got))
			}
			break
		}
		if len(got) != want || got[want-1]["conversations_read"] != float64(want) || got[want-1]["conversations"] != 3.0 {
			t.Fatalf("after tick %d: first sync lines %v, want %d of 3 conversations read (C4 not counted)", want, got, want)
		}
	}
}

// A thread Slack will not give (its reads fail every time) does not keep the first
// sync "in progress" for ever, walking the store at every tick: once every
// conversation was read and the threads never read stop going down for a few ticks,
// the first sync is reported complete, with the threads it could not read.
func TestFirstSyncEndsWhenOnlyUnreadableThreadsAreLeft(t *testing.T) {
	src := newStub()
	src.addChannel("C1")
	parent := ts(3600, 1)
	src.post(msg("C1", parent, "U1", "parent"))
	src.setThread("C1", parent, msg("C1", ts(3500, 1), "U1", "reply"))
	src.fail(rm.MethodReplies, "C1", &rm.APIError{Method: rm.MethodReplies, Code: "internal_error", Class: rm.ClassTransient}, -1)
	store := openStore(t)
	// The parent is stored already, its thread never read (an earlier process saw
	// it before its first reply).
	stored := msg("C1", parent, "U1", "parent")
	stored.ReplyCount, stored.ThreadTS = 1, parent
	if err := store.Update(func(tx rm.Tx) error { return tx.PutMessage(stored) }); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	clock := &fixedClock{t: epoch}
	p := poller.New(store, src, poller.Config{
		Conversations: []string{"C1"},
		Budget:        poller.Budget{HistoryCalls: 5, RepliesCalls: 5, UsersInfoCalls: 5},
		Now:           clock.Now, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	for range 8 {
		if _, err := p.Tick(t.Context()); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
	}
	progress := logs.lines(t, "first sync in progress")
	if len(progress) == 0 || progress[0]["threads_unread"] != 1.0 {
		t.Fatalf("first sync progress lines %v, want the unread thread counted", progress)
	}
	done := logs.lines(t, "first sync complete")
	if len(done) != 1 || done[0]["threads_not_read"] != 1.0 {
		t.Fatalf("first sync complete lines: %v, want one with the thread it could not read", done)
	}
	if len(progress) > 4 {
		t.Errorf("%d progress lines in 8 ticks, want the first sync over after a few", len(progress))
	}
}
