package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/status"
)

var (
	descTracked = prometheus.NewDesc("slackpoll_tracked_items",
		"Messages in the tail rotation.", nil, nil)
	descNeverPolled = prometheus.NewDesc("slackpoll_never_polled_items",
		"Tracked messages not read yet.", nil, nil)
	descOldestAge = prometheus.NewDesc("slackpoll_oldest_last_polled_age_seconds",
		"Age in seconds of the oldest last_polled_at of a tracked message.", nil, nil)
	descRotation = prometheus.NewDesc("slackpoll_rotation_period_seconds",
		"Seconds the tail rotation needs to re-read every tracked message (worst-case staleness minus one interval).", nil, nil)
	descConversations = prometheus.NewDesc("slackpoll_conversations",
		"Conversations by status.", []string{"status"}, nil)
	descWatched = prometheus.NewDesc("slackpoll_watched_items",
		"Watched messages: record-keyed or tracked on request.", nil, nil)
	descWatchedRotation = prometheus.NewDesc("slackpoll_watched_rotation_period_seconds",
		"Seconds to re-read every watched message, from the last ticks' throughput.", nil, nil)
	descPhysicalLimit = prometheus.NewDesc("slackpoll_physical_limit_seconds",
		"Least seconds the configured rates allow for re-reading every tracked message and thread.", nil, nil)
	descHeadAge = prometheus.NewDesc("slackpoll_head_age_seconds",
		"Seconds from a conversation's last head read (its new messages) to the end of the last tick.", []string{"channel"}, nil)
	descLastSeq = prometheus.NewDesc("slackpoll_changes_last_seq",
		"Seq of the last change of the change feed (0 before the first).", nil, nil)
	descOldestSeq = prometheus.NewDesc("slackpoll_changes_oldest_seq",
		"Oldest seq the change feed still holds (changes.retention).", nil, nil)
	descOutboxPending = prometheus.NewDesc("slackpoll_outbox_pending",
		"Outbox rows waiting for delivery, by webhook.", []string{"webhook"}, nil)
	descOutboxParked = prometheus.NewDesc("slackpoll_outbox_parked",
		"Outbox rows parked after max_attempts failures, by webhook.", []string{"webhook"}, nil)
	descOutboxAge = prometheus.NewDesc("slackpoll_outbox_oldest_pending_age_seconds",
		"Seconds the oldest pending outbox row has waited, by webhook (absent when none).", []string{"webhook"}, nil)
	descOutboxDropped = prometheus.NewDesc("slackpoll_outbox_dropped_total",
		"Outbox rows dropped undelivered because the webhook's outbox held max_rows, by webhook (counted in the store).", []string{"webhook"}, nil)
	descUndecodable = prometheus.NewDesc("slackpoll_undecodable_records",
		"Stored records found undecodable and skipped by every read.", nil, nil)
)

// storeCollector reads the gauges that describe the store from the status report at
// scrape time, so they stay current between ticks (track adds items, ages grow).
type storeCollector struct {
	mu    sync.Mutex
	input func() status.Input
	store rm.Store
}

// Watch points the store gauges at store, described by input (the status report's
// input); httpapi.New calls it.
func (m *Metrics) Watch(input func() status.Input, store rm.Store) {
	m.store.mu.Lock()
	defer m.store.mu.Unlock()
	m.store.input, m.store.store = input, store
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTracked, descNeverPolled, descOldestAge, descRotation, descConversations,
		descWatched, descWatchedRotation, descPhysicalLimit, descHeadAge, descUndecodable,
		descLastSeq, descOldestSeq, descOutboxPending, descOutboxParked, descOutboxAge, descOutboxDropped} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	input, store := c.input, c.store
	c.mu.Unlock()
	if store == nil {
		return
	}
	var r status.Report
	err := store.View(func(tx rm.Tx) error {
		var err error
		r, err = status.Build(tx, input())
		return err
	})
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descTracked, err)
		return
	}
	cv := r.Coverage
	ch <- prometheus.MustNewConstMetric(descTracked, prometheus.GaugeValue, float64(cv.Tracked))
	ch <- prometheus.MustNewConstMetric(descNeverPolled, prometheus.GaugeValue, float64(cv.NeverPolled))
	if cv.OldestPolledAgeSeconds != nil {
		ch <- prometheus.MustNewConstMetric(descOldestAge, prometheus.GaugeValue, *cv.OldestPolledAgeSeconds)
	}
	if cv.RotationPeriodSeconds != nil {
		ch <- prometheus.MustNewConstMetric(descRotation, prometheus.GaugeValue, *cv.RotationPeriodSeconds)
	}
	ch <- prometheus.MustNewConstMetric(descWatched, prometheus.GaugeValue, float64(cv.Watched))
	ch <- prometheus.MustNewConstMetric(descUndecodable, prometheus.GaugeValue, float64(len(r.UndecodableRecords)))
	if cv.WatchedRotationSeconds != nil {
		ch <- prometheus.MustNewConstMetric(descWatchedRotation, prometheus.GaugeValue, *cv.WatchedRotationSeconds)
	}
	if cv.PhysicalLimitSeconds != nil {
		ch <- prometheus.MustNewConstMetric(descPhysicalLimit, prometheus.GaugeValue, *cv.PhysicalLimitSeconds)
	}
	for _, c := range r.Conversations {
		if c.HeadAgeSeconds != nil {
			ch <- prometheus.MustNewConstMetric(descHeadAge, prometheus.GaugeValue, *c.HeadAgeSeconds, c.ID)
		}
	}
	ch <- prometheus.MustNewConstMetric(descLastSeq, prometheus.GaugeValue, float64(r.Feed.LastSeq))
	ch <- prometheus.MustNewConstMetric(descOldestSeq, prometheus.GaugeValue, float64(r.Feed.OldestSeq))
	// The report lists every configured webhook, one with nothing pending at 0: its
	// gauges are 0, not absent.
	for _, o := range r.Feed.Outbox {
		ch <- prometheus.MustNewConstMetric(descOutboxPending, prometheus.GaugeValue, float64(o.Pending), o.Webhook)
		ch <- prometheus.MustNewConstMetric(descOutboxParked, prometheus.GaugeValue, float64(o.Parked), o.Webhook)
		ch <- prometheus.MustNewConstMetric(descOutboxDropped, prometheus.CounterValue, float64(o.Dropped), o.Webhook)
		if o.OldestPendingAgeSeconds != nil {
			ch <- prometheus.MustNewConstMetric(descOutboxAge, prometheus.GaugeValue, *o.OldestPendingAgeSeconds, o.Webhook)
		}
	}
	byStatus := map[string]int{}
	for _, s := range []string{rm.StatusPending, rm.StatusOK, rm.StatusNotInChannel, rm.StatusMissingScope,
		rm.StatusChannelNotFound, rm.StatusArchived, rm.StatusError} {
		byStatus[s] = 0 // every status is exported, so an alert on > 0 sees 0, not absence
	}
	for _, c := range r.Conversations {
		byStatus[c.Status]++
	}
	for s, n := range byStatus {
		ch <- prometheus.MustNewConstMetric(descConversations, prometheus.GaugeValue, float64(n), s)
	}
}
