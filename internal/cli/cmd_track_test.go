package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/converge"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackfake"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

// A user tracks a reply our app posted in a thread older than the bulk window, before
// slackpoll ever stored that thread. Through the real client and the HTTP fake, one
// `once` must find the reply through its thread (conversations.history never returns
// replies) and show it with its record, not as missing; the export then equals the
// workspace.
func TestTrackAReplyInAnOldThreadThenOnce(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	clock := now.Add(-100 * time.Hour) // older than the 72h bulk window
	fake := slackfake.New(slackfake.Options{Now: func() time.Time { return clock }})
	for _, err := range []error{
		fake.AddUser(slackfake.User{ID: "U0AVERY00", DisplayName: "avery"}),
		fake.AddConversation(slackfake.PublicChannel("C0GENERAL", "general")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	parent, err := fake.Post("C0GENERAL", "U0AVERY00", "Deploy finished")
	if err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Minute)
	reply, err := fake.ReplyAsAppBot("C0GENERAL", parent, fake.BotID(), "Rolled back")
	if err != nil {
		t.Fatal(err)
	}
	clock = now
	cfg := fakeConfig(t, fake)

	if code, _, errOut := runCLI(t.Context(), "track", "C0GENERAL", string(reply), "--record", "incident-9", "--config", cfg); code != ExitOK {
		t.Fatalf("track: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runCLI(t.Context(), "once", "--config", cfg); code != ExitOK {
		t.Fatalf("once: exit %d: %s", code, errOut)
	}
	code, out, errOut := runCLI(t.Context(), "show", "--record", "incident-9", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	wantContains(t, "show of the tracked reply", out, "text:      Rolled back", "own post:  yes", "record:    incident-9")
	if strings.Contains(out, "missing") || strings.Contains(out, "never read") {
		t.Fatalf("tracked reply shown as missing or unread:\n%s", out)
	}

	code, exp, errOut := runCLI(t.Context(), "export", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	model, err := converge.ReadLines(strings.NewReader(exp))
	if err != nil {
		t.Fatal(err)
	}
	if rep := converge.Diff(model, converge.Lines(fake.Truth()), ""); len(rep.Differences) > 0 {
		t.Fatalf("export differs from the workspace:\n%s\n%s", strings.Join(rep.Differences, "\n"), exp)
	}
}

// untrack undoes track, in the store file or through the daemon's API.
func TestUntrackUndoesTrack(t *testing.T) {
	f := closedStore(t)
	cfg := writeConfig(t, cfgOpts{store: f.Store.Path(), convs: f.Configured})
	const ts = "1790000000.000200"
	if code, _, errOut := runCLI(context.Background(), "track", "--config", cfg, "--record", "ticket-7", readfixture.General, ts); code != ExitOK {
		t.Fatalf("track: exit %d: %s", code, errOut)
	}
	code, out, errOut := runCLI(context.Background(), "untrack", "--config", cfg, readfixture.General, ts)
	if code != ExitOK {
		t.Fatalf("untrack: exit %d: %s", code, errOut)
	}
	wantContains(t, "untrack stdout", out, "untracked "+readfixture.General+" "+ts)
	code, _, errOut = runCLI(context.Background(), "untrack", "--config", cfg, readfixture.General, ts)
	if code != ExitRuntime {
		t.Errorf("second untrack: exit %d, want %d", code, ExitRuntime)
	}
	wantContains(t, "second untrack stderr", errOut, "not tracked")
	code, _, errOut = runCLI(context.Background(), "show", "--config", cfg, "--record", "ticket-7")
	if code == ExitOK {
		t.Errorf("show --record ticket-7 after untrack: exit 0, want the record gone")
	}
	_ = errOut
}

func TestUntrackThroughTheDaemonsAPI(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	addr := daemonAPI(t, f, "")
	cfg := writeConfig(t, cfgOpts{store: f.Store.Path(), listen: addr, convs: f.Configured})
	const ts = "1790000000.000200"
	if code, _, errOut := runCLI(context.Background(), "track", "--config", cfg, readfixture.General, ts); code != ExitOK {
		t.Fatalf("track: exit %d: %s", code, errOut)
	}
	if code, out, errOut := runCLI(context.Background(), "untrack", "--config", cfg, readfixture.General, ts); code != ExitOK {
		t.Fatalf("untrack: exit %d: %s %s", code, out, errOut)
	}
	var n int
	if err := f.Store.View(func(tx rm.Tx) error {
		return tx.Watched(func(r rm.Ref) error {
			if r.TS == ts {
				n++
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Error("still watched after untrack through the API")
	}
}

// A command run from another directory (cron, systemd, a second terminal) uses the
// store next to the config file: track creates it there, and status then finds it;
// nothing is created in the working directory.
func TestTrackFromAnotherDirectoryUsesTheStoreNextToTheConfig(t *testing.T) {
	cfgDir, elsewhere := t.TempDir(), t.TempDir()
	cfg := filepath.Join(cfgDir, "slackpoll.yaml")
	if err := os.WriteFile(cfg, []byte("conversations: [C0GENERAL]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(elsewhere)
	if code, _, errOut := runCLI(t.Context(), "track", "--config", cfg, "C0GENERAL", "1754467200.000100"); code != ExitOK {
		t.Fatalf("track = %d, stderr %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(cfgDir, "slackpoll.db")); err != nil {
		t.Errorf("no store next to the config: %v", err)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("track created %v in the working directory", entries)
	}
	code, out, errOut := runCLI(t.Context(), "status", "--config", cfg)
	if code != ExitOK || !strings.Contains(out, "tracked: 1 messages") {
		t.Errorf("status from the other directory = %d, %s (stderr %s), want the tracked message", code, out, errOut)
	}
}
