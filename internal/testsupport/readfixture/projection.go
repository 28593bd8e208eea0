package readfixture

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// Projection runs a SQLite projection of store for the test, as the daemon's
// projectors do, and returns its runner once the projection is current (30 s at
// most). It stops when the test ends. Writes made to store directly (a tick of the
// fixture's poller) reach it after Runner.RequestRebuild.
func Projection(t testing.TB, store rm.Store) *projection.Runner {
	t.Helper()
	path := filepath.Join(t.TempDir(), "projection.sqlite")
	r := projection.NewRunner(projection.Watch(store), nil, projection.Spec{Kind: projection.KindSQLite, Name: path,
		Open: func(ctx context.Context) (*projection.Target, error) { return projection.OpenSQLite(ctx, path) }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	if err := r.WaitIdle(wctx); err != nil {
		t.Fatal(err)
	}
	return r
}
