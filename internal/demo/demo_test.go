package demo

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackpoll/slackpoll/internal/slackfake"
)

// TestConvergesUnderMutationsAndFaults runs the whole daemon (poller, slack-go client,
// bbolt store) against the fake workspace in virtual time and requires the read model
// to equal the truth after the last change.
func TestConvergesUnderMutationsAndFaults(t *testing.T) {
	for seed := int64(1); seed <= int64(*seeds); seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { convergeSeed(t, seed) })
	}
}

var seeds = flag.Int("seeds", 3, "number of seeds TestConvergesUnderMutationsAndFaults runs")

func convergeSeed(t *testing.T, seed int64) {
	synctest.Test(t, func(t *testing.T) {
		o := DefaultOptions()
		o.Seed = seed
		o.Loopback = false
		o.Dir = t.TempDir()
		o.Size = slackfake.GenSize{Conversations: 8, Messages: 800, Users: 20}
		o.MutateFor = 20 * time.Second
		o.MutateEvery = 50 * time.Millisecond
		o.FaultRate = 0.02
		if testing.Verbose() {
			o.Out = os.Stdout
		}
		res, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Report.Differences) > 0 {
			t.Fatalf("read model differs from the workspace (%s):\n%s\nreplay: go test ./internal/demo -run 'TestConvergesUnderMutationsAndFaults/seed=%d$' -seeds %d -v",
				res.Report, strings.Join(res.Report.Differences[:min(10, len(res.Report.Differences))], "\n"), seed, seed)
		}
		if res.Report.Messages == 0 || res.Mutations == 0 {
			t.Fatalf("nothing compared: %+v", res)
		}
		t.Logf("%s after %d mutations, %d ticks (%d after the last change)", res.Report, res.Mutations, res.Ticks, res.TicksToConverge)
	})
}
