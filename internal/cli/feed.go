package cli

import (
	"context"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/slackpoll/slackpoll/config"
	"github.com/slackpoll/slackpoll/internal/changefeed"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/webhook"
)

// pruneEvery is how often the daemon deletes changes past changes.retention.
const pruneEvery = 10 * time.Minute

// feedConfig maps changes: and webhooks: onto the writer's feed configuration.
func feedConfig(cfg *config.Config) rm.FeedConfig {
	fc := rm.FeedConfig{Backfill: cfg.Changes.Backfill}
	for _, w := range cfg.Webhooks {
		fc.Subscriptions = append(fc.Subscriptions, rm.Subscription{
			Name:   w.Name,
			Filter: rm.ChangeFilter{Kinds: w.Kinds, Channels: w.Channels, Records: w.Records, Own: w.Own},
		})
	}
	return fc
}

// webhookNames lists the configured webhooks, for the metrics.
func webhookNames(cfg *config.Config) []string {
	out := []string{} // not nil: the API refuses a requeue for any other name
	for _, w := range cfg.Webhooks {
		out = append(out, w.Name)
	}
	return out
}

// newDeliverer builds the deliverer of the configured webhooks; nil when there are
// none. Validate has checked every URL.
func (d *daemon) newDeliverer() *webhook.Deliverer {
	if len(d.cfg.Webhooks) == 0 {
		return nil
	}
	del := &webhook.Deliverer{Log: d.log, OnOutcome: d.metrics.OnDelivery}
	// One outbox per webhook: lease and attempts are per webhook.
	for _, w := range d.cfg.Webhooks {
		u, _ := url.Parse(w.URL.Reveal())
		h := webhook.Hook{
			Name: w.Name, URL: u, Timeout: w.Timeout.D(),
			Outbox: &changefeed.Outbox{Store: d.store, Lease: w.Lease.D(), MaxAttempts: w.MaxAttempts},
		}
		h.Keys, h.LegacyKey = webhookKeys(w.Secret)
		if h.LegacyKey != nil {
			d.log.Warn("webhook secret is not a Standard Webhooks secret (whsec_…): deliveries are signed with its bytes as the key, and also carry the deprecated X-Slackpoll-* headers; move to a whsec_ secret (CHANGELOG, Upgrading)",
				"webhook", w.Name)
		}
		if lease, timeout := h.Outbox.LeaseOrDefault(), h.TimeoutOrDefault(); timeout >= lease {
			d.log.Warn("webhook lease is not longer than its timeout: a receiver slower than the lease gets each event again, and its answers are refused",
				"webhook", w.Name, "lease", lease, "timeout", timeout)
		}
		del.Hooks = append(del.Hooks, h)
	}
	return del
}

// webhookKeys returns the signing keys of a webhook's secrets (Validate and
// RequireWebhookSecrets have checked them), and the key of its first plain secret,
// which signs the deprecated headers (nil when every secret is a whsec_ one).
func webhookKeys(secrets config.Secrets) (keys [][]byte, legacy []byte) {
	for _, s := range secrets {
		k, err := config.ParseWebhookSecret(s)
		if err != nil {
			continue
		}
		keys = append(keys, k.Key)
		if k.Plain && legacy == nil {
			legacy = k.Key
		}
	}
	return keys, legacy
}

// runFeed starts the feed's background work — webhook delivery, retention — and
// returns the function that stops it and waits for it.
func (d *daemon) runFeed(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if d.deliverer != nil {
		wg.Go(func() { _ = d.deliverer.Run(ctx) })
	}
	wg.Go(func() {
		t := time.NewTicker(pruneEvery)
		defer t.Stop()
		for {
			d.prune()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

// prune deletes the changes past changes.retention, a batch per transaction.
func (d *daemon) prune() {
	total := 0
	for {
		n, err := changefeed.Prune(d.store, time.Now(), d.cfg.Changes.Retention.D(), 1000)
		total += n
		if err != nil {
			d.log.Error("change feed: pruning failed", "err", err)
			return
		}
		if n < 1000 {
			break
		}
	}
	if total > 0 {
		d.log.Info("change feed: pruned changes past changes.retention", "changes", total, "retention", d.cfg.Changes.Retention)
	}
}

// warnUnconfiguredOutbox logs the outbox rows of webhooks no longer configured:
// nothing delivers them (status shows them too).
func (d *daemon) warnUnconfiguredOutbox() {
	var stats map[string]changefeed.Stats
	err := d.store.View(func(tx rm.Tx) error {
		var err error
		stats, err = changefeed.OutboxStats(tx)
		return err
	})
	if err != nil {
		d.log.Error("change feed: reading the outbox failed", "err", err)
		return
	}
	names := webhookNames(d.cfg)
	for name, s := range stats {
		if !slices.Contains(names, name) {
			d.log.Warn("outbox rows of a webhook that is not configured (removed or renamed?) are kept undelivered until a webhook of that name is configured again",
				"webhook", name, "rows", s.Pending+s.Parked)
		}
	}
}

// wakeDeliverer asks for a delivery sweep now (after a requeue).
func (d *daemon) wakeDeliverer() {
	if d.deliverer != nil {
		d.deliverer.Wake()
	}
}
