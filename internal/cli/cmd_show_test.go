package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/export"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

// showCases run against the store file and, with the store locked, through the API:
// both must print the same.
func TestShow(t *testing.T) {
	direct := closedStore(t)
	locked := readfixture.New(t, readfixture.Options{})
	sources := map[string]string{
		"store": writeConfig(t, cfgOpts{store: direct.Path, convs: direct.Configured}),
		"api":   writeConfig(t, cfgOpts{store: locked.Path, convs: locked.Configured, listen: daemonAPI(t, locked, "t0k"), token: "t0k"}),
	}
	// Both fixtures are built alike, so their ts agree.
	f := direct
	for name, cfg := range sources {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runCLI(t.Context(), "show", "--config", cfg, readfixture.General, string(f.Parent))
			if code != ExitOK {
				t.Fatalf("show = %d, stderr %s", code, errOut)
			}
			wantContains(t, "show", out,
				"C0GENERAL "+string(f.Parent)+" (2026-11-30T10:00:00Z)",
				"from:      avery (U0AVERY00)",
				"text:      Deploy finished (v2)",
				"edited:    by avery (U0AVERY00)",
				"reactions: :white_check_mark: 2 (avery (U0AVERY00), Bee Example (U0BEE0000))",
				"own post:  no",
				"record:    ticket-42",
				"polled:    2026-11-30T10:00:01Z",
				"thread:    1 reply, latest "+string(f.Reply),
				string(f.Reply)+"  Bee Example (U0BEE0000): thanks!",
			)

			code, byRecord, errOut := runCLI(t.Context(), "show", "--config", cfg, "--record", readfixture.Record)
			if code != ExitOK || byRecord != out {
				t.Errorf("show --record = %d %s\n%s, want the same as show CHANNEL TS", code, errOut, byRecord)
			}

			code, own, _ := runCLI(t.Context(), "show", readfixture.General, string(f.Own), "--config", cfg)
			if code != ExitOK {
				t.Fatalf("show own = %d", code)
			}
			wantContains(t, "show own post", own, "own post:  yes", "slackpoll (U0BOTSELF)",
				"reactions: :eyes: 1 (slackpoll (U0BOTSELF, own))")

			code, never, _ := runCLI(t.Context(), "show", "--config", cfg, readfixture.General, string(readfixture.NeverPolled))
			if code != ExitOK {
				t.Fatalf("show never polled = %d", code)
			}
			wantContains(t, "show never polled", never, "tracked, never read")

			code, js, _ := runCLI(t.Context(), "show", "--json", "--config", cfg, readfixture.General, string(f.Parent))
			var line export.MessageLine
			if code != ExitOK || json.Unmarshal([]byte(js), &line) != nil || line.Record != readfixture.Record || len(line.Replies) != 1 {
				t.Errorf("show --json = %d %s, want the export line", code, js)
			}

			code, _, errOut = runCLI(t.Context(), "show", "--config", cfg, readfixture.General, "1600000000.000000")
			if code != ExitRuntime {
				t.Errorf("show of an unknown message = %d, want %d", code, ExitRuntime)
			}
			wantContains(t, "stderr", errOut, "not in the read model", "slackpoll track C0GENERAL 1600000000.000000")

			// A message of a polled conversation that is not read yet: the next head
			// read stores it; tracking it is not the advice (it was).
			recent := fmt.Sprintf("%d.000100", time.Now().Add(-time.Minute).Unix())
			_, _, errOut = runCLI(t.Context(), "show", "--config", cfg, readfixture.General, recent)
			wantContains(t, "stderr", errOut, "not in the read model yet", "next head read", "No need to track it")
			if strings.Contains(errOut, "slackpoll track") {
				t.Errorf("show of a recent message not read yet advises track:\n%s", errOut)
			}
			_, _, errOut = runCLI(t.Context(), "show", "--config", cfg, "C0NOTPOLLED", recent)
			wantContains(t, "stderr", errOut, "C0NOTPOLLED is not polled; add it to conversations")

			code, _, errOut = runCLI(t.Context(), "show", "--config", cfg, "--record", "ticket-0")
			if code != ExitRuntime {
				t.Errorf("show of an unknown record = %d, want %d", code, ExitRuntime)
			}
			wantContains(t, "stderr", errOut, `no message is tracked as record "ticket-0"`)
		})
	}
}

func TestShowRejectsABadTS(t *testing.T) {
	f := closedStore(t)
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured})
	code, _, errOut := runCLI(t.Context(), "show", "--config", cfg, readfixture.General, "yesterday")
	if code != ExitUsage {
		t.Errorf("show with ts yesterday = %d, want %d", code, ExitUsage)
	}
	wantContains(t, "stderr", errOut, `invalid ts "yesterday"`)
}
