package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionLineFromBuildInfo(t *testing.T) {
	read := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{
			GoVersion: "go1.26.8",
			Main:      debug.Module{Path: "github.com/slackpoll/slackpoll", Version: "v0.0.0-20261201174653-2751993af1ef+dirty"},
			Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "2751993af1ef96a540099fe1b4a422280d6523d9"},
				{Key: "vcs.time", Value: "2026-12-01T17:46:53Z"},
				{Key: "vcs.modified", Value: "true"},
			},
		}, true
	}
	got := readBuildInfo(read).String()
	want := "slackpoll v0.0.0-20261201174653-2751993af1ef+dirty (revision 2751993af1ef96a540099fe1b4a422280d6523d9 with uncommitted changes, 2026-12-01T17:46:53Z) go1.26.8"
	if got != want {
		t.Errorf("version line\n got %s\nwant %s", got, want)
	}
	if got := readBuildInfo(func() (*debug.BuildInfo, bool) { return nil, false }).String(); !strings.Contains(got, "unknown") {
		t.Errorf("without build info: %q, want it to say the version is unknown", got)
	}
}

func TestVersionCommandAndFlagPrintTheBuildInfo(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errOut := runCLI(t.Context(), args...)
		if code != ExitOK || !strings.HasPrefix(out, "slackpoll ") || !strings.Contains(out, "go1.") {
			t.Errorf("%v = %d, %q (stderr %q), want exit 0 and a version line with the Go version", args, code, out, errOut)
		}
	}
}

func TestGlobalConfigFlagBeforeTheCommand(t *testing.T) {
	f := closedStore(t)
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured})
	for _, args := range [][]string{{"--config", cfg, "status"}, {"--config=" + cfg, "status"}, {"-c", cfg, "status"}} {
		code, out, errOut := runCLI(t.Context(), args...)
		if code != ExitOK || !strings.Contains(out, "status of store "+f.Path) {
			t.Errorf("%v = %d, stderr %q", args, code, errOut)
		}
	}
	// The command's own --config wins over the global one.
	code, _, errOut := runCLI(t.Context(), "--config", "/nonexistent.yaml", "status", "--config", cfg)
	if code != ExitOK {
		t.Errorf("a command's --config after a global one = %d, stderr %q", code, errOut)
	}
}

func TestUsageErrorPointsToHelpInsteadOfPrintingIt(t *testing.T) {
	for _, tc := range []struct {
		args []string
		hint string
	}{
		{[]string{"track", "C0GENERAL"}, `"slackpoll track --help"`},
		{[]string{"status", "--bogus"}, `"slackpoll status --help"`},
		{[]string{"bogus"}, `"slackpoll --help"`},
		{[]string{"--bogus", "status"}, `"slackpoll --help"`},
		{[]string{"--config", "x.yaml", "demo"}, `"slackpoll demo --help"`},
	} {
		code, _, errOut := runCLI(t.Context(), tc.args...)
		if code != ExitUsage {
			t.Errorf("%v = %d, want %d", tc.args, code, ExitUsage)
		}
		if !strings.Contains(errOut, tc.hint) || strings.Contains(errOut, "Usage:") || strings.Count(errOut, "\n") != 2 {
			t.Errorf("%v: stderr %q, want the error and a pointer to %s, not the whole usage", tc.args, errOut, tc.hint)
		}
	}
}
