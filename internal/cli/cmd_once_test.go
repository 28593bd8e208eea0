package cli

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackpoll/slackpoll/internal/converge"
	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// onceWorkspace is a fake Slack on loopback with one channel, a thread, an edit and a
// reaction, and a config pointing slack.api_url at it.
func onceWorkspace(t *testing.T) (*slackfake.Server, string) {
	t.Helper()
	fake := slackfake.New(slackfake.Options{})
	for _, err := range []error{
		fake.AddUser(slackfake.User{ID: "U0AVERY00", DisplayName: "avery", RealName: "Avery Example"}),
		fake.AddUser(slackfake.User{ID: "U0BEE0000", RealName: "Bee Example"}),
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
	reply, _ := fake.Reply("C0GENERAL", parent, "U0BEE0000", "thanks")
	_ = fake.Edit("C0GENERAL", reply, "thanks!")
	_ = fake.React("C0GENERAL", parent, "U0BEE0000", "white_check_mark")
	return fake, fakeConfig(t, fake)
}

// fakeConfig serves fake on loopback and writes a config that polls C0GENERAL there,
// with a new store.
func fakeConfig(t *testing.T, fake *slackfake.Server) string {
	t.Helper()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return writeConfig(t, cfgOpts{
		store: filepath.Join(t.TempDir(), "slackpoll.db"), apiURL: srv.URL, // no trailing "/": added
		slack: fake.Token(), convs: []string{"C0GENERAL"},
	})
}

// `slackpoll once` against the fake on loopback builds a store that `slackpoll export`
// prints in the export format, equal to the workspace.
func TestOnceThenExportMatchesTheWorkspace(t *testing.T) {
	fake, cfg := onceWorkspace(t)
	if code, _, errOut := runCLI(context.Background(), "once", "--config", cfg); code != ExitOK {
		t.Fatalf("once: exit %d: %s", code, errOut)
	}
	// One tick reads the messages, then the thread, then the users they name.
	code, out, errOut := runCLI(context.Background(), "export", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	model, err := converge.ReadLines(strings.NewReader(out))
	if err != nil {
		t.Fatalf("export is not the export format: %v\n%s", err, out)
	}
	if rep := converge.Diff(model, converge.Lines(fake.Truth()), ""); len(rep.Differences) > 0 {
		t.Fatalf("export differs from the workspace:\n%s\n%s", strings.Join(rep.Differences, "\n"), out)
	}
	if len(model.Messages) != 1 || len(model.Messages[0].Replies) != 1 || len(model.Users) != 2 {
		t.Fatalf("export = %d messages, %d users:\n%s", len(model.Messages), len(model.Users), out)
	}
	if m := model.Messages[0]; m.LastPolledAt == nil || m.UserLabel != "avery" || m.Replies[0].UserLabel != "Bee Example" {
		t.Fatalf("message line = %+v", m)
	}
}

func TestOnceWithRevokedTokenExits1(t *testing.T) {
	fake, cfg := onceWorkspace(t)
	fake.RevokeToken()
	code, _, errOut := runCLI(context.Background(), "once", "--config", cfg)
	if code != ExitRuntime || !strings.Contains(errOut, "token_revoked") || strings.Contains(errOut, fake.Token()) {
		t.Fatalf("exit %d, stderr %q: want 1 naming token_revoked, without the token", code, errOut)
	}
}

func TestOnceWithoutTokenIsAConfigError(t *testing.T) {
	cfg := writeConfig(t, cfgOpts{store: filepath.Join(t.TempDir(), "s.db"), convs: []string{"C0GENERAL"}})
	code, _, errOut := runCLI(context.Background(), "once", "--config", cfg)
	if code != ExitUsage || !strings.Contains(errOut, "SLACK_BOT_TOKEN") {
		t.Fatalf("exit %d, stderr %q: want 2 saying how to set the token", code, errOut)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{{}, {"frobnicate"}, {"track", "C1"}, {"export", "extra"}, {"once", "--no-such-flag"}} {
		if code, _, _ := runCLI(context.Background(), args...); code != ExitUsage {
			t.Errorf("slackpoll %v: exit %d, want 2", args, code)
		}
	}
}

// Flags may follow the positional arguments (README, "Commands").
func TestFlagsAfterPositionalArguments(t *testing.T) {
	cfg := writeConfig(t, cfgOpts{store: filepath.Join(t.TempDir(), "s.db"), convs: []string{"C0GENERAL"}})
	code, out, errOut := runCLI(context.Background(), "track", "C0GENERAL", "1718906000.000100", "--record", "ticket-42", "--config", cfg)
	if code != ExitOK || !strings.Contains(out, "ticket-42") {
		t.Fatalf("exit %d out %q err %q", code, out, errOut)
	}
	if code, _, _ := runCLI(context.Background(), "track", "C0GENERAL", "1718906000.000100", "--record", "ticket-43", "--config", cfg); code != ExitRuntime {
		t.Fatalf("tracking with another record: exit %d, want 1", code)
	}
}

func TestOnceWithNothingToPollIsAConfigError(t *testing.T) {
	cfg := writeConfig(t, cfgOpts{store: filepath.Join(t.TempDir(), "s.db"), apiURL: "http://127.0.0.1:1/", slack: "xoxb-test"})
	code, _, errOut := runCLI(context.Background(), "once", "--config", cfg)
	if code != ExitUsage || !strings.Contains(errOut, "nothing to poll") {
		t.Fatalf("exit %d, stderr %q: want 2 saying there is nothing to poll", code, errOut)
	}
}

// A message tracked in a conversation slackpoll does not poll would stay "never read"
// forever: track refuses it, and a channel name instead of an ID.
func TestTrackRefusesConversationsNotPolled(t *testing.T) {
	cfg := writeConfig(t, cfgOpts{store: filepath.Join(t.TempDir(), "s.db"), convs: []string{"C0GENERAL"}})
	for _, ch := range []string{"C0NOPE", "general", "c0general"} {
		code, _, errOut := runCLI(context.Background(), "track", ch, "1718906000.000100", "--config", cfg)
		if code != ExitUsage {
			t.Errorf("track %s: exit %d (%s), want 2", ch, code, errOut)
		}
	}
}

// A config written for the release before budget.history_calls, with its old budget
// keys, still runs a tick: the old keys are warnings naming what to write instead,
// and the renamed key's value is the cap that applies.
func TestAConfigOfThePreviousReleaseRunsWithWarningsOnly(t *testing.T) {
	fake, cfg := onceWorkspace(t)
	old, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	old = append(old, "budget:\n  history_pages: 8\n  replies_calls: 12\n  users_info_calls: 20\n  tail_fetches: 25\n"...)
	if err := os.WriteFile(cfg, old, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(context.Background(), "once", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("once with the previous release's budget keys: exit %d: %s", code, errOut)
	}
	wantContains(t, "once's log", errOut,
		"level=WARN", "budget.history_pages: renamed to budget.history_calls", "budget.tail_fetches: no longer used and ignored")
	code, out, errOut := runCLI(context.Background(), "export", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	model, err := converge.ReadLines(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if rep := converge.Diff(model, converge.Lines(fake.Truth()), ""); len(rep.Differences) > 0 {
		t.Fatalf("the tick under the old config did not read the workspace:\n%s", strings.Join(rep.Differences, "\n"))
	}
	code, out, _ = runCLI(context.Background(), "config", "--config", cfg)
	if code != ExitOK || !strings.Contains(out, "history_calls: 8") {
		t.Errorf("config: exit %d, want history_calls: 8 from history_pages:\n%s", code, out)
	}
}
