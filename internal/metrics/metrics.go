// Package metrics holds the daemon's Prometheus metrics: what the poller, the Slack
// client and the webhook deliverers report through their hooks, and gauges read from
// the store at scrape time. The read API (internal/httpapi) serves them on /metrics.
package metrics

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/slackpoll/slackpoll/internal/changefeed"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Metrics are slackpoll's Prometheus metrics, in a registry of their own. The daemon
// feeds them through its hooks — OnCall (slackapi.Options.OnCall), OnTick
// (poller.Config.OnTick), OnDelivery (webhook.Deliverer.OnOutcome) — and Handler
// serves them together with gauges read from the store at scrape time (Watch). All names start with slackpoll_:
//
//	slackpoll_slack_calls_total{method,outcome}            HTTP attempts to Slack; outcome ok, rate_limited, retry, canceled, transient, item, conversation, token
//	slackpoll_slack_rate_limited_total{method}             HTTP 429 answers
//	slackpoll_slack_retry_after_wait_seconds_total{method} seconds waited on Retry-After before repeating a rate-limited request
//	slackpoll_slack_wait_seconds_total{method}             seconds waited before attempts: pacing, Retry-After and backoff
//	slackpoll_ticks_total{stop_reason}                     finished ticks by stop reason (complete, budget:<cap>, deadline, shutdown, error)
//	slackpoll_tick_duration_seconds                        histogram of tick durations
//	slackpoll_tick_skipped_items_total                     per-item and per-conversation errors skipped by ticks
//	slackpoll_messages_written_total                       message records written
//	slackpoll_threads_synced_total                         threads whose whole reply set was written
//	slackpoll_tail_reads_total                             tail-rotation reads
//	slackpoll_last_tick_end_timestamp_seconds              Unix time the last tick ended
//	slackpoll_tracked_items                                messages in the tail rotation (scrape time)
//	slackpoll_never_polled_items                           tracked messages not read yet (scrape time)
//	slackpoll_oldest_last_polled_age_seconds               age of the oldest last_polled_at (absent when none was read)
//	slackpoll_rotation_period_seconds                      time to re-read every tracked message (absent when unknown)
//	slackpoll_conversations{status}                        conversations by status (pending, ok, missing_scope, ...)
//	slackpoll_watched_items                                watched messages (scrape time)
//	slackpoll_watched_rotation_period_seconds              time to re-read every watched message (absent when unknown)
//	slackpoll_physical_limit_seconds                       least time the rates allow for a full rotation (absent when unknown)
//	slackpoll_head_age_seconds{channel}                    time since a conversation's last head read, at the last tick's end
//	slackpoll_changes_last_seq                             seq of the change feed's last change (scrape time)
//	slackpoll_changes_oldest_seq                           oldest seq the feed still holds (scrape time)
//	slackpoll_outbox_pending{webhook}                      outbox rows waiting for delivery (scrape time)
//	slackpoll_outbox_parked{webhook}                       outbox rows parked after max_attempts failures (scrape time)
//	slackpoll_outbox_oldest_pending_age_seconds{webhook}   age of the oldest pending row (absent when none)
//	slackpoll_webhook_deliveries_total{webhook,outcome}    delivery attempts; outcome delivered, failed, parked, fenced
//	slackpoll_outbox_fence_refusals_total{webhook}         completions refused because the claim's lease had expired
//	slackpoll_changes_long_polls                           GET /v1/changes requests waiting for a change
//	slackpoll_undecodable_records                          stored records found undecodable, skipped by every read (scrape time)
//	slackpoll_clock_skew_seconds                           Slack's clock minus ours, from the Date header of the last answer (absent before one)
//
//	slackpoll_tick_interval_seconds                        tick.interval (SetTickConfig)
//	slackpoll_tick_soft_deadline_seconds                   tick.soft_deadline (SetTickConfig)
//
// plus the Go runtime and process collectors under their standard names: go_*,
// process_* and go_build_info.
// Its methods are safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	calls       *prometheus.CounterVec
	rateLimited *prometheus.CounterVec
	retryWait   *prometheus.CounterVec
	wait        *prometheus.CounterVec
	ticks       *prometheus.CounterVec
	tickDur     prometheus.Histogram
	skipped     prometheus.Counter
	written     prometheus.Counter
	threads     prometheus.Counter
	tailReads   prometheus.Counter
	lastTickEnd prometheus.Gauge
	deliveries  *prometheus.CounterVec
	fenced      *prometheus.CounterVec
	longPolls   prometheus.Gauge
	clockSkew   prometheus.Gauge

	skewOnce sync.Once

	mu sync.Mutex
	// after429 marks methods whose last attempt was rate limited: the next attempt's
	// wait is the Retry-After wait.
	after429 map[string]bool
	// token is what the last answered Slack call said about the token.
	token       tokenState
	store       *storeCollector
	projections *projectionCollector
}

type tokenState int

const (
	tokenUnknown tokenState = iota
	tokenAccepted
	tokenRejected
)

// New returns the metrics with every counter at zero.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), after429: map[string]bool{}}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slackpoll_slack_calls_total", Help: "HTTP attempts to the Slack Web API, by method and outcome.",
	}, []string{"method", "outcome"})
	m.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slackpoll_slack_rate_limited_total", Help: "HTTP 429 answers from Slack, by method.",
	}, []string{"method"})
	m.retryWait = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slackpoll_slack_retry_after_wait_seconds_total", Help: "Seconds waited on Retry-After before repeating a rate-limited request, by method.",
	}, []string{"method"})
	m.wait = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slackpoll_slack_wait_seconds_total", Help: "Seconds waited before Slack attempts (pacing, Retry-After, backoff), by method.",
	}, []string{"method"})
	m.ticks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slackpoll_ticks_total", Help: "Finished ticks, by stop reason.",
	}, []string{"stop_reason"})
	m.tickDur = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "slackpoll_tick_duration_seconds", Help: "Duration of ticks in seconds.",
		Buckets: []float64{0.5, 1, 5, 15, 30, 60, 120, 240, 480},
	})
	m.skipped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "slackpoll_tick_skipped_items_total", Help: "Per-item and per-conversation errors skipped by ticks.",
	})
	m.written = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "slackpoll_messages_written_total", Help: "Message records written to the read model.",
	})
	m.threads = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "slackpoll_threads_synced_total", Help: "Threads whose whole reply set was written.",
	})
	m.tailReads = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "slackpoll_tail_reads_total", Help: "Tail-rotation reads of tracked messages.",
	})
	m.lastTickEnd = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "slackpoll_last_tick_end_timestamp_seconds", Help: "Unix time the last tick ended.",
	})
	m.deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slackpoll_webhook_deliveries_total", Help: "Webhook delivery attempts, by webhook and outcome (delivered, failed, parked, fenced).",
	}, []string{"webhook", "outcome"})
	m.fenced = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slackpoll_outbox_fence_refusals_total", Help: "Outbox completions refused because the claim's lease had expired (the event is delivered again), by webhook.",
	}, []string{"webhook"})
	m.clockSkew = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "slackpoll_clock_skew_seconds", Help: "Slack's clock minus the local clock, from the Date header of Slack's last answer.",
	})
	m.longPolls = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "slackpoll_changes_long_polls", Help: "GET /v1/changes requests waiting for a change (long polls in flight).",
	})
	// Every method's series exist from the start, at 0: a rate of 429s or of waits is
	// then "none" on a daemon that has not met one, not "no data".
	for _, method := range rm.Methods() {
		m.rateLimited.WithLabelValues(method)
		m.retryWait.WithLabelValues(method)
		m.wait.WithLabelValues(method)
		m.calls.WithLabelValues(method, "ok")
		m.calls.WithLabelValues(method, "rate_limited")
	}
	m.store = &storeCollector{}
	m.projections = &projectionCollector{}
	m.reg.MustRegister(m.calls, m.rateLimited, m.retryWait, m.wait, m.ticks, m.tickDur,
		m.skipped, m.written, m.threads, m.tailReads, m.lastTickEnd, m.deliveries, m.fenced, m.longPolls, m.store, m.projections)
	// The runtime's metrics keep their standard names (go_goroutines,
	// process_resident_memory_bytes, go_build_info), so stock dashboards and alerts
	// work unchanged.
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector())
	return m
}

// OnCall records one HTTP attempt to Slack; it has the signature of
// slackapi.Options.OnCall. waited is the time spent before the attempt.
func (m *Metrics) OnCall(method, outcome string, waited time.Duration) {
	m.calls.WithLabelValues(method, outcome).Inc()
	m.wait.WithLabelValues(method).Add(waited.Seconds())
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.after429[method] {
		// The client repeats a rate-limited request after Retry-After: the wait
		// before this attempt is that Retry-After.
		m.retryWait.WithLabelValues(method).Add(waited.Seconds())
		m.after429[method] = false
	}
	switch outcome {
	case "rate_limited":
		m.rateLimited.WithLabelValues(method).Inc()
		m.after429[method] = true
	case "ok":
		m.token = tokenAccepted
	case "token":
		m.token = tokenRejected
	}
}

// OnClockSkew records Slack's clock minus ours; it has the signature of
// slackapi.Options.OnClockSkew. The gauge is registered at the first measurement, so
// that a daemon that never heard from Slack does not claim a skew of 0.
func (m *Metrics) OnClockSkew(skew time.Duration) {
	m.clockSkew.Set(skew.Seconds())
	m.skewOnce.Do(func() { m.reg.MustRegister(m.clockSkew) })
}

// OnTick records a finished tick; it has the signature of
// poller.Config.OnTick.
func (m *Metrics) OnTick(s rm.TickSummary) {
	m.ticks.WithLabelValues(s.StopReason).Inc()
	m.tickDur.Observe(s.Finished.Sub(s.Started).Seconds())
	m.skipped.Add(float64(len(s.Errors)))
	m.written.Add(float64(s.MessagesWritten))
	m.threads.Add(float64(s.ThreadsWritten))
	m.tailReads.Add(float64(s.TailRead))
	m.lastTickEnd.Set(float64(s.Finished.UnixNano()) / 1e9)
}

// OnDelivery records one webhook delivery attempt; it has the signature of
// webhook.Deliverer.OnOutcome.
func (m *Metrics) OnDelivery(webhook, outcome string) {
	m.deliveries.WithLabelValues(webhook, outcome).Inc()
	if outcome == changefeed.OutcomeFenced {
		m.fenced.WithLabelValues(webhook).Inc()
	}
}

// SetWebhooks names the configured webhooks, so that their delivery counters are
// exported from the start, at 0. (Their outbox gauges come from the status report,
// which lists every configured webhook: httpapi.Options.Webhooks.)
func (m *Metrics) SetWebhooks(names []string) {
	for _, n := range names {
		m.fenced.WithLabelValues(n)
		for _, o := range []string{changefeed.OutcomeDelivered, changefeed.OutcomeFailed, changefeed.OutcomeParked, changefeed.OutcomeFenced} {
			m.deliveries.WithLabelValues(n, o)
		}
	}
}

// Ready reports whether Slack has accepted the token: nil once a Slack call was
// answered successfully, an error before any was, or after Slack rejected the token
// (invalid_auth, token_revoked, ...). It fits httpapi.Options.Ready.
func (m *Metrics) Ready() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch m.token {
	case tokenAccepted:
		return nil
	case tokenRejected:
		return errors.New("slack rejected the token")
	}
	return errors.New("no Slack call has been answered yet")
}

// Registry returns the registry, to add collectors of the caller's.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// LongPoll counts a GET /v1/changes request that waits for a change, until the
// returned function is called.
func (m *Metrics) LongPoll() (done func()) {
	m.longPolls.Inc()
	return m.longPolls.Dec
}
