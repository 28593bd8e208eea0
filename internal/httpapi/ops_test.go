package httpapi_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/slackpoll/slackpoll/internal/metrics"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/status"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

func TestStatusIsTheReportOfTheRunningDaemon(t *testing.T) {
	e := newEnv(t, envOpts{})
	var r status.Report
	e.get(t, "/v1/status", http.StatusOK, &r)
	if !r.DaemonRunning || r.NextTickAt == nil || !r.NextTickAt.Equal(e.f.Summary.Started.Add(readfixture.Interval)) {
		t.Errorf("daemon_running %v, next_tick_at %v; want true and start + interval", r.DaemonRunning, r.NextTickAt)
	}
	if len(r.Conversations) != 3 || r.Coverage.Tracked != 4 || r.LastTick == nil || r.LastTick.StopReason != rm.StopComplete {
		t.Errorf("report = %+v, want 3 conversations, 4 tracked, the last tick", r)
	}
}

const secret = "s3cr3t-http-token"

func TestBearerTokenGuardsEverythingButHealthz(t *testing.T) {
	e := newEnv(t, envOpts{token: secret})
	for _, path := range []string{"/v1/status", "/v1/conversations", "/metrics", "/readyz"} {
		for _, header := range []string{"", "Bearer wrong", "Bearer " + secret + "x", "Basic " + secret, secret} {
			req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
			if header != "" {
				req.Header.Set("Authorization", header)
			}
			resp, err := e.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body bytes.Buffer
			_, _ = body.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("GET %s with Authorization %q = %d, want 401", path, header, resp.StatusCode)
			}
			errorOf(t, body.Bytes())
			if strings.Contains(body.String(), secret) {
				t.Errorf("401 body reveals the token: %s", body.String())
			}
		}
		if code, b := e.do(t, http.MethodGet, path, nil); code != http.StatusOK {
			t.Errorf("GET %s with the token = %d %s, want 200", path, code, b)
		}
	}
	resp, err := e.srv.Client().Get(e.srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz without a token = %d, want 200", resp.StatusCode)
	}
}

func TestReadyz(t *testing.T) {
	// The fixture's tick got answers from Slack: Metrics.Ready says the token is accepted.
	e := newEnv(t, envOpts{})
	if code, b := e.do(t, http.MethodGet, "/readyz", nil); code != http.StatusOK {
		t.Errorf("/readyz after a tick = %d %s, want 200", code, b)
	}

	notYet := newEnv(t, envOpts{ready: func() error { return errors.New("no Slack call has been answered yet") }})
	wantErr(t, notYet, http.MethodGet, "/readyz", nil, http.StatusServiceUnavailable, "no Slack call")

	closed := newEnv(t, envOpts{})
	if err := closed.f.Store.Close(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, closed, http.MethodGet, "/readyz", nil, http.StatusServiceUnavailable, "store")
	code, b := closed.do(t, http.MethodGet, "/v1/status", nil)
	if msg := errorOf(t, b); code != http.StatusInternalServerError || strings.Contains(msg, closed.f.Path) {
		t.Errorf("/v1/status with the store closed = %d %q, want 500 without the file path", code, msg)
	}
	if code, _ := closed.do(t, http.MethodGet, "/healthz", nil); code != http.StatusOK {
		t.Errorf("/healthz with the store closed = %d, want 200 (alive)", code)
	}
}

func TestMetricsReadyFollowsTheToken(t *testing.T) {
	m := metrics.New()
	if m.Ready() == nil {
		t.Error("Ready before any Slack answer = nil, want an error")
	}
	m.OnCall(rm.MethodAuthTest, "ok", 0)
	if err := m.Ready(); err != nil {
		t.Errorf("Ready after an answered call = %v, want nil", err)
	}
	m.OnCall(rm.MethodHistory, "token", 0)
	if m.Ready() == nil {
		t.Error("Ready after token_revoked = nil, want an error")
	}
}

// scrape parses /metrics with the Prometheus text parser.
func scrape(t *testing.T, e *env) map[string]*dto.MetricFamily {
	t.Helper()
	code, b := e.do(t, http.MethodGet, "/metrics", nil)
	return parseMetrics(t, code, b)
}

func parseMetrics(t *testing.T, code int, b []byte) map[string]*dto.MetricFamily {
	t.Helper()
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d %s", code, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, b)
	}
	return fams
}

// value returns the value of the sample of family name whose labels include want.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	fam, ok := fams[name]
	if !ok {
		t.Fatalf("metric %s missing", name)
	}
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	t.Fatalf("metric %s has no sample with labels %v", name, want)
	return 0
}

func TestMetricsParseAndCountTheTick(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.f.Clock.Advance(90 * time.Second)
	fams := scrape(t, e)
	for name := range fams {
		if !strings.HasPrefix(name, "slackpoll_") && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			t.Errorf("metric %s outside the slackpoll_ namespace and the standard go_ and process_ ones", name)
		}
	}
	// Stock dashboards find the runtime's metrics under their standard names.
	for _, name := range []string{"go_goroutines", "go_build_info", "process_start_time_seconds"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("runtime metric %s missing", name)
		}
	}
	sum := e.f.Summary
	for method, n := range sum.Calls {
		// The fake answers every call of this tick at once; not_in_channel and
		// missing_scope come back as the "conversation" class.
		got := value(t, fams, "slackpoll_slack_calls_total", map[string]string{"method": method, "outcome": "ok"})
		if method == rm.MethodHistory {
			got += value(t, fams, "slackpoll_slack_calls_total", map[string]string{"method": method, "outcome": "conversation"})
		}
		if got != float64(n) {
			t.Errorf("calls of %s = %v, want %d", method, got, n)
		}
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"slackpoll_ticks_total", map[string]string{"stop_reason": rm.StopComplete}, 1},
		{"slackpoll_tick_duration_seconds", nil, 1}, // one observation
		{"slackpoll_messages_written_total", nil, float64(sum.MessagesWritten)},
		{"slackpoll_threads_synced_total", nil, float64(sum.ThreadsWritten)},
		{"slackpoll_tick_skipped_items_total", nil, 2},
		{"slackpoll_tracked_items", nil, 4},
		{"slackpoll_never_polled_items", nil, 1},
		{"slackpoll_oldest_last_polled_age_seconds", nil, 90},
		{"slackpoll_conversations", map[string]string{"status": rm.StatusMissingScope}, 1},
		{"slackpoll_conversations", map[string]string{"status": rm.StatusOK}, 1},
		{"slackpoll_conversations", map[string]string{"status": rm.StatusArchived}, 0},
		{"slackpoll_last_tick_end_timestamp_seconds", nil, float64(sum.Finished.Unix())},
	}
	for _, c := range checks {
		if got := value(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if _, ok := fams["slackpoll_rotation_period_seconds"]; ok {
		t.Error("slackpoll_rotation_period_seconds present while the rotation is unknown")
	}
}

func TestMetricsCountRateLimitsAndRetryAfterWaits(t *testing.T) {
	e := newEnv(t, envOpts{})
	// What slackapi reports for one 429 with Retry-After: 61 s, then the repeated
	// request: the rate-limited attempt, then an attempt that waited 61 s.
	e.metrics.OnCall(rm.MethodReplies, "rate_limited", 2*time.Second)
	e.metrics.OnCall(rm.MethodReplies, "ok", 61*time.Second)
	e.metrics.OnCall(rm.MethodReplies, "ok", 3*time.Second) // ordinary pacing
	fams := scrape(t, e)
	if got := value(t, fams, "slackpoll_slack_rate_limited_total", map[string]string{"method": rm.MethodReplies}); got != 1 {
		t.Errorf("429s = %v, want 1", got)
	}
	if got := value(t, fams, "slackpoll_slack_retry_after_wait_seconds_total", map[string]string{"method": rm.MethodReplies}); got != 61 {
		t.Errorf("Retry-After wait = %v s, want 61", got)
	}
	if got := value(t, fams, "slackpoll_slack_wait_seconds_total", map[string]string{"method": rm.MethodReplies}); got < 66 {
		t.Errorf("total wait = %v s, want at least the 66 s reported now", got)
	}
	if got := value(t, fams, "slackpoll_slack_calls_total", map[string]string{"method": rm.MethodReplies, "outcome": "rate_limited"}); got != 1 {
		t.Errorf("rate_limited calls = %v, want 1", got)
	}
}

func TestRequestLogsNeverShowTheToken(t *testing.T) {
	var logs bytes.Buffer
	e := newEnv(t, envOpts{token: secret, log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	e.do(t, http.MethodGet, "/v1/status", nil)
	e.do(t, http.MethodPost, "/v1/tracked", map[string]string{"channel": readfixture.General, "ts": "x"})
	e.token = "wrong-" + secret
	e.do(t, http.MethodGet, "/v1/conversations", nil)
	if !strings.Contains(logs.String(), "path=/v1/status") {
		t.Fatalf("no request log line: %q", logs.String())
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("logs reveal the token:\n%s", logs.String())
	}
}

func TestMetricsShowTheClockSkewOnceMeasured(t *testing.T) {
	e := newEnv(t, envOpts{})
	if _, ok := scrape(t, e)["slackpoll_clock_skew_seconds"]; ok {
		t.Error("slackpoll_clock_skew_seconds present before any Slack answer")
	}
	e.metrics.OnClockSkew(-96 * time.Hour)
	e.metrics.OnClockSkew(-95 * time.Hour)
	if got := value(t, scrape(t, e), "slackpoll_clock_skew_seconds", nil); got != -95*3600 {
		t.Errorf("clock skew = %v s, want %v", got, -95*3600)
	}
}

// The 429 and wait series of every method are served at 0 from the start: the
// dashboard's 429 panel and the rate-limit alert see "none", not "no data", on a
// daemon that has not met a 429 (they showed nothing until the first one).
func TestRateLimitSeriesAreServedBeforeTheFirst429(t *testing.T) {
	e := newEnv(t, envOpts{})
	fams := scrape(t, e)
	for _, m := range rm.Methods() {
		for _, name := range []string{"slackpoll_slack_rate_limited_total", "slackpoll_slack_retry_after_wait_seconds_total"} {
			if got := value(t, fams, name, map[string]string{"method": m}); got != 0 {
				t.Errorf("%s{method=%q} = %v, want 0", name, m, got)
			}
		}
		if got := value(t, fams, "slackpoll_slack_calls_total", map[string]string{"method": m, "outcome": "rate_limited"}); got != 0 {
			t.Errorf("slackpoll_slack_calls_total{method=%q,outcome=rate_limited} = %v, want 0", m, got)
		}
		value(t, fams, "slackpoll_slack_wait_seconds_total", map[string]string{"method": m})
	}
}
