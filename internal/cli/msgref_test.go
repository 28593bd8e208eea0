package cli

import (
	"strings"
	"testing"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

func TestParseMessageRef(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want rm.Ref
	}{
		{[]string{"C0123456789", "1754467200.123456"}, rm.Ref{Channel: "C0123456789", TS: "1754467200.123456"}},
		// A fraction cut short (a float, a spreadsheet) names the same time: padded.
		{[]string{"C0123456789", "1754467200.5"}, rm.Ref{Channel: "C0123456789", TS: "1754467200.500000"}},
		{[]string{"C0123456789", "1754467200.0001"}, rm.Ref{Channel: "C0123456789", TS: "1754467200.000100"}},
		{[]string{"https://acme.slack.com/archives/C0123456789/p1754467200123456"}, rm.Ref{Channel: "C0123456789", TS: "1754467200.123456"}},
		{[]string{"https://acme.slack.com/archives/G0123ABC/p1754467200000100?thread_ts=1754460000.000200&cid=G0123ABC"}, rm.Ref{Channel: "G0123ABC", TS: "1754467200.000100"}},
	} {
		got, err := parseMessageRef(tc.args)
		if err != nil || got != tc.want {
			t.Errorf("parseMessageRef(%q) = %v, %v; want %v", tc.args, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"C0123456789", "1754467200"}, "has no microseconds"},
		{[]string{"C0123456789", "1754467200.1234567"}, "at most 6 digits"},
		{[]string{"general", "1754467200.123456"}, "not a Slack conversation ID"},
		{[]string{"C0123456789"}, "not a message link"},
		{[]string{"https://acme.slack.com/archives/C0123456789"}, "not /archives/CHANNEL/pTS"},
		{[]string{"https://acme.slack.com/archives/C0123456789/p17544"}, "not p followed by the ts's digits"},
		{[]string{"https://acme.slack.com/archives/general/p1754467200123456"}, "not a conversation ID"},
	} {
		if _, err := parseMessageRef(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseMessageRef(%q) = %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}

func TestShowAndTrackTakeAMessageLink(t *testing.T) {
	f := closedStore(t)
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured})
	// Slack's "Copy link": the ts without its dot.
	link := "https://acme.slack.com/archives/" + readfixture.General + "/p" + strings.Replace(string(f.Parent), ".", "", 1)
	seconds, _, _ := strings.Cut(string(f.Parent), ".")
	code, out, errOut := runCLI(t.Context(), "show", "--config", cfg, link)
	if code != ExitOK || !strings.Contains(out, string(f.Parent)) {
		t.Errorf("show LINK = %d, %s (stderr %s)", code, out, errOut)
	}
	plain := "https://acme.slack.com/archives/" + readfixture.General + "/p" + strings.Replace(string(f.Plain), ".", "", 1)
	code, out, errOut = runCLI(t.Context(), "track", "--config", cfg, "--record", "from-link", plain)
	if code != ExitOK || !strings.Contains(out, "tracking "+readfixture.General+" "+string(f.Plain)+" as from-link") {
		t.Errorf("track LINK = %d, %s (stderr %s)", code, out, errOut)
	}
	code, _, errOut = runCLI(t.Context(), "track", "--config", cfg, readfixture.General, seconds)
	if code != ExitUsage || !strings.Contains(errOut, "has no microseconds") {
		t.Errorf("track with a ts without microseconds = %d, %s; want a usage error", code, errOut)
	}
}
