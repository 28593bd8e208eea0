package httpapi_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.yaml.in/yaml/v3"

	"github.com/slackpoll/slackpoll/internal/poller"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/slackapi"
)

// deployDir is the repository's deploy/ directory, from this package's directory.
const deployDir = "../../deploy"

// metricName matches the metric names of slackpoll's and the runtime's collectors in a
// PromQL expression.
var metricName = regexp.MustCompile(`\b(?:slackpoll|go|process)_[a-zA-Z0-9_]+\b`)

// alertRules reads deploy/prometheus/slackpoll-alerts.yml.
func alertRules(t *testing.T) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, "prometheus", "slackpoll-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name  string           `yaml:"name"`
			Rules []map[string]any `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("alert rules: %v", err)
	}
	var rules []map[string]any
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules
}

// dashboardExprs reads every target expression of deploy/grafana/slackpoll-dashboard.json.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, "grafana", "slackpoll-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	var exprs []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		exprs = append(exprs, v.Definition)
	}
	return exprs
}

// Every metric the alert rules and the dashboard name exists in the /metrics of a
// daemon that has ticked, had a call rate limited, been given its tick config and a
// webhook: a renamed metric breaks this test, not the operator's alerts.
func TestDeployFilesNameOnlyMetricsThatExist(t *testing.T) {
	// A daemon with a webhook, one change waiting for it, and Slack's clock measured:
	// the outbox, delivery and skew families exist once that is so.
	e := newEnv(t, envOpts{webhooks: []string{"app"}})
	e.metrics.SetWebhooks([]string{"app"})
	e.metrics.OnClockSkew(2 * time.Second)
	if err := e.f.Store.Update(func(tx rm.Tx) error {
		return tx.PutOutbox(rm.OutboxRow{Webhook: "app", Seq: 1, Change: rm.Change{Seq: 1, ID: rm.NewEventID(), Kind: rm.ChangeMessageEdited}, Enqueued: e.f.Clock.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	e.metrics.SetTickConfig(time.Minute, 4*time.Minute)
	// A 429 answered, then the same request repeated after its Retry-After, as the
	// Slack client reports them: the rate-limit families exist once that happened.
	e.metrics.OnCall(rm.MethodHistory, "rate_limited", 0)
	e.metrics.OnCall(rm.MethodHistory, "ok", 31*time.Second)
	// Two more ticks, so that the rotation estimates are known, by a poller that
	// sizes them at the non_marketplace rates: at the fixture's 600,000 calls a
	// minute the physical limit rounds to 0 s, which /metrics leaves out as unknown.
	fast := map[string]float64{}
	for _, m := range slackapi.Methods {
		fast[m] = 600_000
	}
	src, err := slackapi.New(slackapi.Options{
		Token: e.f.Fake.Token(), APIURL: "http://slack.fake/api/", HTTPClient: e.f.Fake.Client(), Rates: fast,
	})
	if err != nil {
		t.Fatal(err)
	}
	slow, _ := rm.ProfileRates(rm.ProfileNonMarketplace)
	p := poller.New(e.f.Store, src, poller.Config{
		Conversations: e.f.Configured, Rates: slow,
		Budget: poller.Budget{HistoryCalls: 250, RepliesCalls: 250, UsersInfoCalls: 100, ReactionsCalls: 250}, Now: e.f.Clock.Now, OnTick: e.metrics.OnTick})
	for range 2 {
		e.f.Clock.Advance(time.Minute)
		if _, err := p.Tick(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	fams := scrape(t, e)
	exists := func(name string) bool {
		if _, ok := fams[name]; ok {
			return true
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok {
				if f, ok := fams[base]; ok && f.GetType() == dto.MetricType_HISTOGRAM {
					return true
				}
			}
		}
		return false
	}

	var exprs []string
	rules := alertRules(t)
	if len(rules) < 5 {
		t.Errorf("%d alert rules, want the documented ones", len(rules))
	}
	for _, r := range rules {
		expr, _ := r["expr"].(string)
		labels, _ := r["labels"].(map[string]any)
		ann, _ := r["annotations"].(map[string]any)
		if r["alert"] == nil || expr == "" || labels["severity"] == nil || ann["summary"] == nil {
			t.Errorf("alert rule %v lacks alert, expr, labels.severity or annotations.summary", r["alert"])
		}
		exprs = append(exprs, expr)
	}
	exprs = append(exprs, dashboardExprs(t)...)
	named := map[string]bool{}
	for _, x := range exprs {
		for _, n := range metricName.FindAllString(x, -1) {
			named[n] = true
		}
	}
	if len(named) < 15 {
		t.Errorf("the deploy files name %d metrics; the parse probably missed some", len(named))
	}
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for n := range named {
			if !yield(n) {
				return
			}
		}
	}) {
		if !exists(n) {
			t.Errorf("the deploy files name %s, which /metrics does not serve", n)
		}
	}
}

// The tick-age alert must not fire on a healthy daemon: its bound allows a whole
// tick (soft deadline) after the interval, plus the call in flight.
func TestNotTickingAlertAllowsTheSoftDeadline(t *testing.T) {
	for _, r := range alertRules(t) {
		if r["alert"] != "SlackpollNotTicking" {
			continue
		}
		expr, _ := r["expr"].(string)
		for _, want := range []string{"slackpoll_tick_interval_seconds", "slackpoll_tick_soft_deadline_seconds", "process_start_time_seconds"} {
			if !strings.Contains(expr, want) {
				t.Errorf("SlackpollNotTicking %q does not use %s", expr, want)
			}
		}
		return
	}
	t.Error("no SlackpollNotTicking alert")
}
