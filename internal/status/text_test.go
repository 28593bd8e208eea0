package status_test

import (
	"strings"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/status"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

func TestWriteText(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	// A walk cut short: status says the backlog is being read.
	err := f.Store.Update(func(tx rm.Tx) error {
		c, _, err := tx.Conversation(readfixture.General)
		if err != nil {
			return err
		}
		c.WalkTop, c.WalkBottom = f.Own, f.Parent
		return tx.PutConversation(c)
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Clock.Advance(30 * time.Second)
	r := build(t, f, true)
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"CHANNEL    NAME     TYPE",
		"C0GENERAL  general  public   ok",
		"G0SECRET0: missing_scope: add scope groups:history to the app, reinstall it, then `slackpoll retry G0SECRET0`",
		"C0OUTSIDE: not_in_channel: invite the bot (/invite @yourbot)",
		"C0PENDING  -        -        pending",
		"catching up: C0GENERAL's bulk window is read down to " + string(f.Parent) + " (2026-11-30T10:00:00Z); the next sweep reads on below it",
		"token: team T0SLACKPL, bot user U0BOTSELF, bot B0BOTSELF; checked 2026-11-30T10:00:01Z (30s ago)",
		"tracked: 4 messages (1 never polled); oldest refresh: 2026-11-30T10:00:01Z (30s ago)",
		"rotation period: unknown",
		"last tick: 2026-11-30T10:00:01Z (30s ago), took 0s, stopped: complete",
		"conversations.history 3",
		"error: C0OUTSIDE: not_in_channel",
		"next tick: 2026-11-30T10:01:01Z (in 30s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

// The table fits a terminal: a group DM's generated name (60 characters and more) is
// clipped, the what-to-do of a problem status goes below the table, and a
// conversation not read whole yet (pending) shows no head age. It was 172 columns
// wide, with HEAD AGE on pending rows.
func TestTableFitsATerminal(t *testing.T) {
	age := 120.0
	r := status.Report{GeneratedAt: time.Now(), DaemonRunning: true, Conversations: []status.Conversation{
		{ID: "G1AAAAAAAH", Name: "mpdm-amara.novak--wen.nakamura--jonas.silva--björn.novak-2", Type: rm.TypeMPIM, Status: rm.StatusPending, HeadAgeSeconds: &age},
		{ID: "C1AAAAAAAB", Name: "deploys", Type: rm.TypePrivateChannel, Status: rm.StatusMissingScope, NeededScope: "groups:history", HeadAgeSeconds: &age},
		{ID: "C1AAAAAAAF", Name: "eng-backend", Type: rm.TypePublicChannel, Status: rm.StatusChannelNotFound},
	}}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	table := strings.Split(b.String(), "\n\n")[0]
	for _, line := range strings.Split(table, "\n") {
		if n := len([]rune(line)); n > 100 {
			t.Errorf("a table line is %d columns wide, want at most 100:\n%s", n, line)
		}
		if strings.HasPrefix(line, "G1AAAAAAAH") && strings.HasSuffix(strings.TrimSpace(line), "2m0s") {
			t.Errorf("a pending row shows a head age: %s", line)
		}
	}
	if !strings.Contains(b.String(), "C1AAAAAAAF: channel_not_found: wrong id") {
		t.Errorf("what to do about channel_not_found is not said:\n%s", b.String())
	}
}

// Each SQL projection gets a line: its state, how far it applied the feed and how
// far behind it is, its last sync and error.
func TestTextShowsTheProjections(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	synced := now.Add(-2 * time.Minute)
	r := &status.Report{GeneratedAt: now, Projections: []projection.Status{
		{Target: "sqlite", Name: "/var/lib/slackpoll/slackpoll.sqlite", State: projection.StateCurrent, CursorSeq: 1042, LastSeq: 1042, SyncedAt: &synced},
		{Target: "postgres", Name: "postgres://db:5432/app (schema slackpoll)", State: projection.StateApplying, CursorSeq: 1000, LastSeq: 1042, LagSeq: 42, LagSeconds: 3, PendingMessages: 7},
		{Target: "postgres", Name: "pg", State: projection.StateError, LastError: "connection refused"},
	}}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"projection sqlite /var/lib/slackpoll/slackpoll.sqlite: current; cursor 1042 of 1042 (lag 0 changes, 0s); synced 2m0s ago",
		"projection postgres postgres://db:5432/app (schema slackpoll): applying; cursor 1000 of 1042 (lag 42 changes, 3s), 7 messages pending",
		"projection postgres pg: error; last error: connection refused",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}
