package status_test

import (
	"strings"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/readfixture"
)

func TestWriteText(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
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
