package status_test

import (
	"strings"
	"testing"

	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/status"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
)

// A configured webhook with nothing left to deliver is listed at 0, so that status
// shows it is configured and caught up, not absent.
func TestAConfiguredWebhookWithNothingPendingIsListed(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{})
	var r status.Report
	err := f.Store.View(func(tx rm.Tx) error {
		var err error
		r, err = status.Build(tx, status.Input{Configured: f.Configured, Interval: readfixture.Interval, Now: f.Clock.Now(), Webhooks: []string{"app"}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Feed.Outbox) != 1 || r.Feed.Outbox[0].Webhook != "app" || r.Feed.Outbox[0].Pending != 0 || r.Feed.Outbox[0].NotConfigured {
		t.Fatalf("feed outbox = %+v, want app listed at 0", r.Feed.Outbox)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "webhook app: 0 pending") {
		t.Errorf("status text lacks the caught-up webhook:\n%s", b.String())
	}
}
