package poller_test

import (
	"errors"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

func statusOf(t *testing.T, s rm.Store, id string) string {
	t.Helper()
	var c rm.Conversation
	if err := s.View(func(tx rm.Tx) (err error) { c, _, err = tx.Conversation(id); return err }); err != nil {
		t.Fatal(err)
	}
	return c.Status
}

// After a missing_scope is fixed (the scope added, the app reinstalled), a restart
// reads the conversation on its first tick, and `slackpoll retry` (readmodel.Retry)
// makes it due at the next tick: it used to wait the hour its retry time said,
// restart or not.
func TestAConversationWaitingAfterAnErrorIsReadAfterARestartOrARetry(t *testing.T) {
	missing := &rm.APIError{Method: rm.MethodConversationInfo, Code: "missing_scope", Class: rm.ClassConversation, Needed: "channels:read"}
	src := newStub()
	src.addChannel("C1")
	src.post(msg("C1", ts(3600, 1), "U1", "hello"))
	src.fail(rm.MethodConversationInfo, "C1", missing, 1)
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	cfg := poller.Config{Conversations: []string{"C1"}, Budget: poller.Budget{HistoryCalls: 5, RepliesCalls: 5, UsersInfoCalls: 5}, Now: clock.Now}
	if _, err := poller.New(store, src, cfg).Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := statusOf(t, store, "C1"); got != rm.StatusMissingScope {
		t.Fatalf("status after the failing read = %q, want missing_scope", got)
	}
	clock.Advance(time.Minute)
	restarted := poller.New(store, src, cfg) // the operator fixed the scope and restarted
	if _, err := restarted.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := statusOf(t, store, "C1"); got != rm.StatusOK {
		t.Errorf("status after a restart = %q, want ok (read at once, not an hour later)", got)
	}

	// The same, without a restart: retry.
	src.fail(rm.MethodConversationInfo, "C1", missing, 1)
	clock.Advance(2 * time.Hour) // info is re-read hourly: it fails again
	if _, err := restarted.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := statusOf(t, store, "C1"); got != rm.StatusMissingScope {
		t.Fatalf("status after the second failing read = %q, want missing_scope", got)
	}
	clock.Advance(time.Minute)
	if _, err := restarted.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := statusOf(t, store, "C1"); got != rm.StatusMissingScope {
		t.Fatalf("a tick a minute later read it (status %q): the test cannot tell a retry from the hourly one", got)
	}
	due, err := rm.Retry(store, nil)
	if err != nil || len(due) != 1 || due[0] != "C1" {
		t.Fatalf("Retry = %v, %v; want [C1]", due, err)
	}
	if _, err := rm.Retry(store, []string{"C1"}); !errors.Is(err, rm.ErrNotWaiting) {
		t.Errorf("Retry of a conversation made due already = %v, want ErrNotWaiting", err)
	}
	clock.Advance(time.Minute)
	if _, err := restarted.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := statusOf(t, store, "C1"); got != rm.StatusOK {
		t.Errorf("status at the tick after retry = %q, want ok", got)
	}
}

// SetConversations (a config reloaded on SIGHUP) takes effect at the next tick: a
// conversation added is read.
func TestSetConversationsTakesEffectAtTheNextTick(t *testing.T) {
	src := newStub()
	for _, ch := range []string{"C1", "C2"} {
		src.addChannel(ch)
		src.post(msg(ch, ts(3600, 1), "U1", "hello"))
	}
	store := openStore(t)
	clock := &fixedClock{t: epoch}
	p := poller.New(store, src, poller.Config{Conversations: []string{"C1"}, Budget: poller.Budget{HistoryCalls: 5, RepliesCalls: 5, UsersInfoCalls: 5}, Now: clock.Now})
	if _, err := p.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	p.SetConversations([]string{"C1", "C2"})
	clock.Advance(time.Minute)
	if _, err := p.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := statusOf(t, store, "C2"); got != rm.StatusOK {
		t.Errorf("C2 after SetConversations and a tick: status %q, want ok", got)
	}
}
