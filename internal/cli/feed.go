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

// pruneEvery is how often the daemon deletes changes past changes.retention;
// pruneWait how often it looks again while no Slack answer has told Slack's time.
const (
	pruneEvery = 10 * time.Minute
	pruneWait  = time.Second
)

// feedConfig maps changes: and webhooks: onto the writer's feed configuration.
func feedConfig(cfg *config.Config) rm.FeedConfig {
	fc := rm.FeedConfig{Backfill: cfg.Changes.Backfill}
	for _, w := range cfg.Webhooks {
		fc.Subscriptions = append(fc.Subscriptions, rm.Subscription{
			Name:    w.Name,
			Filter:  rm.ChangeFilter{Kinds: w.Kinds, Channels: w.Channels, Records: w.Records, Own: w.Own},
			MaxRows: w.MaxRows,
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
	del := &webhook.Deliverer{Log: d.log, OnOutcome: d.metrics.OnDelivery,
		Now: func() time.Time { now, _ := d.slackNow(); return now }}
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
		for {
			next := pruneEvery
			if !d.prune() {
				next = pruneWait
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(next):
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

// prune is one retention pass, by Slack's time; it reports false when that is not
// known yet (no Slack answer this run), and nothing was pruned.
func (d *daemon) prune() bool {
	r := changefeed.Retention{Store: d.store, Retention: d.cfg.Changes.Retention.D(), SlackNow: d.slackNow}
	n, held, more, ok, err := r.Pass()
	switch {
	case err != nil:
		d.log.Error("change feed: pruning failed", "err", err)
	case more:
		d.log.Warn("change feed: more changes are past changes.retention than half of those held; pruned half, the rest goes in the next passes (at most half a pass, so that a clock gone wrong cannot take the whole feed)",
			"pruned", n, "held", held, "retention", d.cfg.Changes.Retention, "next_pass_in", pruneEvery)
	case n > 0:
		d.log.Info("change feed: pruned changes past changes.retention, by Slack's clock", "changes", n, "retention", d.cfg.Changes.Retention)
	}
	return ok
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
