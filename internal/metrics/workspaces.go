package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

var descWorkspaces = prometheus.NewDesc("slackpoll_workspaces",
	"Workspaces the daemon runs (store.dir), by state: active, paused, token_rejected, refresh_failed, damaged.", []string{"state"}, nil)

// workspaceCollector counts the workspaces by state at scrape time.
type workspaceCollector struct{ states func() map[string]int }

// SetWorkspaces serves slackpoll_workspaces{state} from states (a daemon of many
// workspaces). No series carries a team_id: at 1,000 workspaces every series would
// be a thousand; the per-workspace figures are in GET /v1/workspaces. The other
// series (calls, ticks, deliveries, ...) add up every workspace's.
func (m *Metrics) SetWorkspaces(states func() map[string]int) {
	m.reg.MustRegister(&workspaceCollector{states: states})
}

func (c *workspaceCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descWorkspaces }

func (c *workspaceCollector) Collect(ch chan<- prometheus.Metric) {
	for state, n := range c.states() {
		ch <- prometheus.MustNewConstMetric(descWorkspaces, prometheus.GaugeValue, float64(n), state)
	}
}
