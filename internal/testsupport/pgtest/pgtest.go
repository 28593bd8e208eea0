// Package pgtest gives tests a real Postgres: the database named by
// $SLACKPOLL_TEST_POSTGRES_DSN, a fresh schema per test. Locally a test without
// the variable is skipped; where $SLACKPOLL_TEST_POSTGRES is "required" (CI's
// .ci/run sets it, after starting Postgres) a missing variable or an unreachable
// server fails the test instead: Postgres tests never skip there.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/slackpoll/slackpoll/internal/projection"
)

// Environment variables of the Postgres tests.
const (
	EnvDSN      = "SLACKPOLL_TEST_POSTGRES_DSN"
	EnvRequired = "SLACKPOLL_TEST_POSTGRES"
)

// DSN returns the test database's DSN; without one it skips t, or fails it where
// Postgres is required.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		if os.Getenv(EnvRequired) == "required" {
			t.Fatalf("$%s is required (CI) but $%s is not set: .ci/run starts Postgres and sets it", EnvRequired, EnvDSN)
		}
		t.Skipf("no Postgres: set $%s (e.g. postgres://slackpoll_test:slackpoll_test@127.0.0.1:5432/slackpoll_test) to run this test", EnvDSN)
	}
	return dsn
}

// Schema returns the name of a new, empty schema of the test database, dropped when
// the test ends, and the DSN to reach it with: commits there do not wait for the
// server's disk (synchronous_commit off), as tests need no durability.
func Schema(t testing.TB) (dsn, schema string) {
	t.Helper()
	dsn = DSN(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("$%s: %v", EnvDSN, err)
	}
	if _, set := cfg.RuntimeParams["synchronous_commit"]; !set {
		if strings.Contains(dsn, "://") {
			sep := "?"
			if strings.Contains(dsn, "?") {
				sep = "&"
			}
			dsn += sep + "synchronous_commit=off"
		} else {
			dsn += " synchronous_commit=off"
		}
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema = "t_" + hex.EncodeToString(b[:])
	db := open(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("postgres at $%s: %v", EnvDSN, err)
	}
	_ = db.Close()
	t.Cleanup(func() {
		db := open(t, dsn)
		defer func() { _ = db.Close() }()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping test schema %s: %v", schema, err)
		}
	})
	return dsn, schema
}

func open(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("$%s: %v", EnvDSN, err)
	}
	cfg.ConnectTimeout = 10 * time.Second
	return stdlib.OpenDB(*cfg)
}

// Target opens the projection's Postgres target in a new schema; it is closed when
// the test ends.
func Target(t testing.TB) *projection.Target {
	t.Helper()
	dsn, schema := Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tg, err := projection.OpenPostgres(ctx, dsn, schema)
	if err != nil {
		t.Fatalf("postgres at $%s: %v", EnvDSN, err)
	}
	t.Cleanup(func() { _ = tg.Close() })
	return tg
}
