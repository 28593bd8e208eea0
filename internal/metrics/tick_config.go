package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// SetTickConfig exports tick.interval and tick.soft_deadline as
// slackpoll_tick_interval_seconds and slackpoll_tick_soft_deadline_seconds, so an
// alert on the age of the last tick can allow for them instead of repeating the
// config: a tick may end up to interval + soft_deadline + one call (a Retry-After
// wait included) after the previous one. Call it once, before serving.
func (m *Metrics) SetTickConfig(interval, softDeadline time.Duration) {
	for name, v := range map[string]struct {
		help string
		d    time.Duration
	}{
		"slackpoll_tick_interval_seconds":      {"tick.interval: seconds between two tick starts.", interval},
		"slackpoll_tick_soft_deadline_seconds": {"tick.soft_deadline: seconds after its start that a tick starts no new Slack call.", softDeadline},
	} {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: v.help})
		g.Set(v.d.Seconds())
		m.reg.MustRegister(g)
	}
}
