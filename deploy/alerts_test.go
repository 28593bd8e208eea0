package deploy_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// series is one input series of a promtool rule test: a selector and its values in
// promtool's expanding notation ('0+1x360': from 0, one more a minute, for 6 hours).
type series struct{ name, values string }

// fires reports whether alert is firing at evalTime over the input series, by the
// rules of deploy/prometheus/slackpoll-alerts.yml as Prometheus evaluates them
// (`promtool test rules`, skipped where promtool is not installed).
func fires(t *testing.T, alert, evalTime string, in ...series) bool {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian: apt-get install prometheus)")
	}
	rules, err := filepath.Abs(filepath.Join("prometheus", "slackpoll-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rule_files: [%q]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n", rules)
	for _, s := range in {
		fmt.Fprintf(&b, "      - series: '%s'\n        values: '%s'\n", s.name, s.values)
	}
	fmt.Fprintf(&b, "    alert_rule_test:\n      - eval_time: %s\n        alertname: %s\n        exp_alerts: []\n", evalTime, alert)
	path := filepath.Join(t.TempDir(), "test.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, promtool, "test", "rules", path).CombinedOutput()
	if err == nil {
		return false
	}
	if !strings.Contains(string(out), `alertname="`+alert+`"`) {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	return true
}

// calls are 6 hours of one method's calls at perMinute, the share bad of them 429s.
func calls(method string, perMinute, bad float64) []series {
	lbl := `instance="a",method="` + method + `"`
	return []series{
		{`slackpoll_slack_calls_total{` + lbl + `,outcome="ok"}`, fmt.Sprintf("0+%gx360", perMinute*(1-bad))},
		{`slackpoll_slack_calls_total{` + lbl + `,outcome="rate_limited"}`, fmt.Sprintf("0+%gx360", perMinute*bad)},
		{`slackpoll_slack_rate_limited_total{` + lbl + `}`, fmt.Sprintf("0+%gx360", perMinute*bad)},
	}
}

// The rate-limit alert does not fire all day on a healthy install — none, or a 429
// now and then (one in 20 minutes kept the old rule, any 429 in 30 minutes, firing)
// — and fires when a steady share of the calls is refused (4 of 11, the explorable
// demo's fake against the old pacing).
func TestRateLimitAlertFiresOnlyOnASteadyShareOf429s(t *testing.T) {
	h := "conversations.history"
	if fires(t, "SlackpollRateLimited", "6h", calls(h, 1, 0)...) {
		t.Error("fires with no 429 at all")
	}
	if fires(t, "SlackpollRateLimited", "6h", calls(h, 1, 0.05)...) {
		t.Error("fires with one 429 in 20 minutes at 1 request a minute")
	}
	if !fires(t, "SlackpollRateLimited", "6h", calls(h, 1, 4.0/11)...) {
		t.Error("does not fire with 4 of 11 calls answered 429")
	}
}

// The outbox, webhook, store and clock alerts fire on what they name, and not on a
// healthy daemon.
func TestOutboxWebhookFeedAndClockAlerts(t *testing.T) {
	for _, tc := range []struct {
		alert       string
		sick, quiet []series
	}{
		{"SlackpollOutboxBacklog",
			[]series{{`slackpoll_outbox_oldest_pending_age_seconds{instance="a",webhook="app"}`, "0+60x120"}},
			[]series{{`slackpoll_outbox_oldest_pending_age_seconds{instance="a",webhook="app"}`, "5x120"}}},
		{"SlackpollOutboxParked",
			[]series{{`slackpoll_outbox_parked{instance="a",webhook="app"}`, "3x120"}},
			[]series{{`slackpoll_outbox_parked{instance="a",webhook="app"}`, "0x120"}}},
		{"SlackpollWebhookFailing",
			[]series{{`slackpoll_webhook_deliveries_total{instance="a",webhook="app",outcome="failed"}`, "0+1x120"},
				{`slackpoll_webhook_deliveries_total{instance="a",webhook="app",outcome="delivered"}`, "0x120"}},
			[]series{{`slackpoll_webhook_deliveries_total{instance="a",webhook="app",outcome="failed"}`, "0+0.1x120"},
				{`slackpoll_webhook_deliveries_total{instance="a",webhook="app",outcome="delivered"}`, "0+5x120"}}},
		{"SlackpollUndecodableRecords",
			[]series{{`slackpoll_undecodable_records{instance="a"}`, "1x120"}},
			[]series{{`slackpoll_undecodable_records{instance="a"}`, "0x120"}}},
		{"SlackpollClockSkew",
			[]series{{`slackpoll_clock_skew_seconds{instance="a"}`, "-3600x120"}},
			[]series{{`slackpoll_clock_skew_seconds{instance="a"}`, "0.4x120"}}},
	} {
		t.Run(tc.alert, func(t *testing.T) {
			if !fires(t, tc.alert, "2h", tc.sick...) {
				t.Errorf("%s does not fire on %v", tc.alert, tc.sick)
			}
			if fires(t, tc.alert, "2h", tc.quiet...) {
				t.Errorf("%s fires on a healthy %v", tc.alert, tc.quiet)
			}
		})
	}
}
