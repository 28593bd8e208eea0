package changefeed

import (
	"errors"
	"fmt"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// ErrWebhookConfigured is DropWebhook's refusal for a webhook still configured:
// its rows go out when its receiver answers (requeue the parked ones).
var ErrWebhookConfigured = errors.New("is still configured")

// DropWebhook deletes every outbox row of webhook, in one transaction, and returns
// how many. It is for a webhook removed from the config (or renamed), whose rows
// nothing delivers any more; configured names the webhooks of the config, and one of
// them is ErrWebhookConfigured. The changes stay in the feed.
func DropWebhook(s rm.Store, webhook string, configured []string) (int, error) {
	if webhook == "" {
		return 0, errors.New("drop: name the webhook whose rows to drop")
	}
	for _, c := range configured {
		if c == webhook {
			return 0, fmt.Errorf("webhook %q %w: its rows are delivered when its receiver answers (`slackpoll requeue --webhook %s` for parked ones); remove it from the config first to drop them", webhook, ErrWebhookConfigured, webhook)
		}
	}
	n := 0
	err := s.Update(func(tx rm.Tx) error {
		n = 0
		var seqs []uint64
		if err := tx.Outbox(webhook, func(r rm.OutboxRow) error {
			seqs = append(seqs, r.Seq)
			return nil
		}); err != nil {
			return err
		}
		for _, seq := range seqs {
			if err := tx.DeleteOutbox(webhook, seq); err != nil {
				return err
			}
		}
		n = len(seqs)
		return nil
	})
	return n, err
}
