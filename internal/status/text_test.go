package status_test

import (
	"strings"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/readfixture"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
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
		"CONVERSATION  NAME     TYPE",
		"C0GENERAL     general  public_channel   ok",
		"missing_scope (add scope groups:history)",
		"not_in_channel (invite the bot)",
		"C0PENDING     -        -                pending",
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
