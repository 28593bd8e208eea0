package projection_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/projection"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/pgtest"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

const team = "T0TEAM0001"

// openStore opens a new store with a team, watched.
func openStore(t testing.TB) (*boltstore.Store, *projection.Watched) {
	t.Helper()
	s := storetest.Open(t)
	w := projection.Watch(s)
	update(t, w, func(tx rm.Tx) error { return tx.PutIdentity(rm.Identity{TeamID: team, UserID: "U0BOT"}) })
	return s, w
}

func update(t testing.TB, s rm.Store, fn func(rm.Tx) error) {
	t.Helper()
	if err := s.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// openTarget opens a new target of kind: a SQLite file in t.TempDir, or a schema of
// the test Postgres (pgtest: skipped where there is none, unless required).
func openTarget(t testing.TB, kind string) *projection.Target {
	if kind == projection.KindPostgres {
		return pgtest.Target(t)
	}
	tg, err := projection.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "projection.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tg.Close() })
	return tg
}

// eachTarget runs fn once per target kind, as subtests.
func eachTarget(t *testing.T, fn func(t *testing.T, tg *projection.Target)) {
	for _, kind := range []string{projection.KindSQLite, projection.KindPostgres} {
		t.Run(kind, func(t *testing.T) { fn(t, openTarget(t, kind)) })
	}
}

// runProjector runs a projector until the test ends.
func runProjector(t testing.TB, w *projection.Watched, tg *projection.Target) *projection.Projector {
	t.Helper()
	p := projection.New(projection.Options{Store: w, Target: tg, Poll: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return p
}

// waitIdle waits until p is current.
func waitIdle(t testing.TB, p *projection.Projector) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !p.Idle() {
		if time.Now().After(deadline) {
			t.Fatalf("projector not idle after 30 s: %+v", p.Status())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// verify fails t unless the target equals the store.
func verify(t testing.TB, s rm.Store, tg *projection.Target) projection.VerifyReport {
	t.Helper()
	rep, err := projection.Verify(context.Background(), s, tg)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Equal() {
		t.Fatalf("projection differs from the store: %v\n%s", rep, strings.Join(rep.Differences, "\n"))
	}
	return rep
}

func ptr[T any](v T) *T { return &v }

func slogDiscard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
