package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slackpoll/slackpoll/internal/projection"
)

var (
	descProjLagSeq = prometheus.NewDesc("slackpoll_projection_lag_seq",
		"Changes of the change feed the SQL projection has not applied yet, by target.", []string{"target"}, nil)
	descProjLagSeconds = prometheus.NewDesc("slackpoll_projection_lag_seconds",
		"Seconds the oldest change or commit the SQL projection has not applied yet has waited (0 when current), by target.", []string{"target"}, nil)
	descProjCursor = prometheus.NewDesc("slackpoll_projection_cursor_seq",
		"Feed seq the SQL projection has applied through, by target.", []string{"target"}, nil)
	descProjPending = prometheus.NewDesc("slackpoll_projection_pending_messages",
		"Messages commits touched that wait for the SQL projection's next batch, by target.", []string{"target"}, nil)
	descProjUp = prometheus.NewDesc("slackpoll_projection_up",
		"1 while the SQL projection's target is open and its last attempt succeeded, else 0, by target.", []string{"target"}, nil)
	descProjRows = prometheus.NewDesc("slackpoll_projection_rows_written_total",
		"Rows the SQL projection wrote since the daemon started, by target and op (inserted, updated, touched: read times only, deleted).", []string{"target", "op"}, nil)
	descProjBatches = prometheus.NewDesc("slackpoll_projection_batches_total",
		"Transactions the SQL projection committed since the daemon started, by target and kind (batch, sync).", []string{"target", "kind"}, nil)
	descProjErrors = prometheus.NewDesc("slackpoll_projection_errors_total",
		"Failed attempts of the SQL projection (retried), by target.", []string{"target"}, nil)
)

// projectionCollector reads the projectors' status at scrape time.
type projectionCollector struct {
	mu       sync.Mutex
	statuses func() []projection.Status
}

// SetProjections serves the SQL projection's gauges from statuses
// (projection.Runner.Statuses):
//
//	slackpoll_projection_lag_seq{target}                 feed changes not applied yet
//	slackpoll_projection_lag_seconds{target}             age of the oldest change or commit not applied yet
//	slackpoll_projection_cursor_seq{target}              feed seq applied through
//	slackpoll_projection_pending_messages{target}        messages waiting for the next batch
//	slackpoll_projection_up{target}                      1 while open and not failing
//	slackpoll_projection_rows_written_total{target,op}   rows written: inserted, updated, touched, deleted
//	slackpoll_projection_batches_total{target,kind}      transactions committed: batch, sync
//	slackpoll_projection_errors_total{target}            failed attempts (retried)
func (m *Metrics) SetProjections(statuses func() []projection.Status) {
	m.projections.mu.Lock()
	defer m.projections.mu.Unlock()
	m.projections.statuses = statuses
}

func (c *projectionCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descProjLagSeq, descProjLagSeconds, descProjCursor, descProjPending, descProjUp, descProjRows, descProjBatches, descProjErrors} {
		ch <- d
	}
}

func (c *projectionCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	fn := c.statuses
	c.mu.Unlock()
	if fn == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	for _, s := range fn() {
		up := 0.0
		if s.State != projection.StateError && s.State != projection.StateStarting {
			up = 1
		}
		gauge(descProjUp, up, s.Target)
		gauge(descProjLagSeq, float64(s.LagSeq), s.Target)
		gauge(descProjLagSeconds, s.LagSeconds, s.Target)
		gauge(descProjCursor, float64(s.CursorSeq), s.Target)
		gauge(descProjPending, float64(s.PendingMessages), s.Target)
		counter(descProjRows, float64(s.Applied.Inserted), s.Target, "inserted")
		counter(descProjRows, float64(s.Applied.Updated), s.Target, "updated")
		counter(descProjRows, float64(s.Applied.Touched), s.Target, "touched")
		counter(descProjRows, float64(s.Applied.Deleted), s.Target, "deleted")
		counter(descProjBatches, float64(s.Batches), s.Target, "batch")
		counter(descProjBatches, float64(s.Syncs), s.Target, "sync")
		counter(descProjErrors, float64(s.Errors), s.Target)
	}
}
