package projection

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	_ "modernc.org/sqlite" // database/sql driver "sqlite", pure Go
)

// Target kinds.
const (
	KindSQLite   = "sqlite"
	KindPostgres = "postgres"
)

//go:embed migrations
var migrations embed.FS

// migrationsTable is goose's version table: named for slackpoll, so that an
// application's own goose migrations in the same Postgres database do not collide.
const migrationsTable = "slackpoll_migrations"

// Target is one SQL database the projection is written to: a SQLite file or a
// Postgres schema. It is safe for concurrent use; one Projector writes it, any
// number of searches read it.
type Target struct {
	kind string
	db   *sql.DB
	// name says which database, for logs and status: the file, or the Postgres
	// host, database and schema (never the password).
	name   string
	schema string
}

// Kind returns KindSQLite or KindPostgres.
func (t *Target) Kind() string { return t.kind }

// Name returns the file path or the Postgres host/database/schema, without secrets.
func (t *Target) Name() string { return t.name }

// DB returns the database handle, for tests and benchmarks that query the schema.
func (t *Target) DB() *sql.DB { return t.db }

// Close closes the database handle.
func (t *Target) Close() error { return t.db.Close() }

// OpenSQLite opens (creating it, mode 0600, as the store) the SQLite file at path,
// in WAL mode so that searches read while the projector writes, and migrates its
// schema to this version's.
func OpenSQLite(ctx context.Context, path string) (*Target, error) {
	return openSQLite(ctx, path, false, false)
}

// OpenSQLiteNoSync is OpenSQLite with synchronous=OFF: a crash of the machine (not
// of the process) can then lose or damage the file. Tests, benchmarks and the demo
// only.
func OpenSQLiteNoSync(ctx context.Context, path string) (*Target, error) {
	return openSQLite(ctx, path, false, true)
}

// OpenSQLiteReader opens an existing SQLite projection read-only, for the commands
// that read it while no daemon runs (search, status, verify): it migrates nothing,
// and fails with an error matching ErrNoProjection when the file does not exist,
// and with a *SchemaError when its schema is not this version's.
func OpenSQLiteReader(ctx context.Context, path string) (*Target, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%w: %s: %v (the daemon creates it when it starts)", ErrNoProjection, path, err)
	}
	return openSQLite(ctx, path, true, false)
}

func openSQLite(ctx context.Context, path string, readOnly, noSync bool) (*Target, error) {
	if readOnly {
		q := url.Values{}
		q.Add("_pragma", "busy_timeout(10000)")
		q.Set("mode", "ro")
		db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
		if err != nil {
			return nil, fmt.Errorf("projection: sqlite file %s: %w", path, err)
		}
		t := &Target{kind: KindSQLite, db: db, name: path}
		if err := t.checkVersion(ctx); err != nil {
			_ = db.Close()
			return nil, err
		}
		return t, nil
	}
	if dir := filepath.Dir(path); dir != "" {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("projection: sqlite file %s: %w", path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("projection: sqlite file %s: %w", path, err)
	}
	_ = f.Close() // created with the mode we want; SQLite opens it itself
	q := url.Values{}
	sync := "synchronous(NORMAL)"
	if noSync {
		sync = "synchronous(OFF)"
	}
	// A 64 MiB page cache (the default is 2 MiB) keeps a batch's index pages in
	// memory; statement journals in memory too.
	for _, p := range []string{"journal_mode(WAL)", "busy_timeout(10000)", sync, "foreign_keys(OFF)", "cache_size(-65536)", "temp_store(MEMORY)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("projection: sqlite file %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	t := &Target{kind: KindSQLite, db: db, name: path}
	if err := t.migrate(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return t, nil
}

// OpenPostgres connects to the Postgres database of dsn (a URL or key=value
// string, as libpq takes), creates schema if it does not exist, and migrates it.
// Every connection's search_path is schema, so the tables are schema.messages and
// so on, apart from the application's own.
func OpenPostgres(ctx context.Context, dsn, schema string) (*Target, error) {
	return openPostgres(ctx, dsn, schema, false)
}

// OpenPostgresReader connects to a Postgres projection without creating or
// migrating anything, for the commands that read it while no daemon runs; it fails
// with a *SchemaError when the schema is not this version's.
func OpenPostgresReader(ctx context.Context, dsn, schema string) (*Target, error) {
	return openPostgres(ctx, dsn, schema, true)
}

func openPostgres(ctx context.Context, dsn, schema string, readOnly bool) (*Target, error) {
	if schema == "" {
		schema = DefaultSchema
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("projection: postgres dsn: %w", redactErr(err))
	}
	cfg.RuntimeParams["search_path"] = schema
	cfg.RuntimeParams["application_name"] = "slackpoll"
	cfg.ConnectTimeout = 10 * time.Second
	name := fmt.Sprintf("postgres://%s:%d/%s (schema %s)", cfg.Host, cfg.Port, cfg.Database, schema)
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(2)
	db.SetConnMaxIdleTime(5 * time.Minute)
	t := &Target{kind: KindPostgres, db: db, name: name, schema: schema}
	if readOnly {
		if err := t.checkVersion(ctx); err != nil {
			_ = db.Close()
			return nil, err
		}
		return t, nil
	}
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("projection: %s: creating the schema: %w (does the role have CREATE on the database?)", name, err)
	}
	if err := t.migrate(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return t, nil
}

// DefaultSchema is the Postgres schema of the projection's tables.
const DefaultSchema = "slackpoll"

// redactErr replaces a DSN parse error, which may quote the DSN and its password.
func redactErr(error) error {
	return errors.New("cannot parse it (the form is postgres://user:password@host:5432/db, or key=value pairs as libpq takes)")
}

// migrate brings the schema to this version's with goose: versioned migrations
// embedded in the binary, one set per dialect, applied under a lock (Postgres: an
// advisory lock, as several daemons may start together).
func (t *Target) migrate(ctx context.Context) error {
	dialect := goose.DialectSQLite3
	opts := []goose.ProviderOption{goose.WithTableName(migrationsTable), goose.WithDisableGlobalRegistry(true)}
	if t.kind == KindPostgres {
		dialect = goose.DialectPostgres
		// One advisory lock per schema: daemons migrating the same schema wait for
		// each other, those of other schemas do not.
		h := fnv.New64a()
		h.Write([]byte("slackpoll projection " + t.schema))
		locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(int64(h.Sum64() >> 1)))
		if err != nil {
			return err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	sub, err := fs.Sub(migrations, "migrations/"+t.kind)
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(dialect, t.db, sub, opts...)
	if err != nil {
		return fmt.Errorf("projection: %s: migrations: %w", t.name, err)
	}
	cur, err := p.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("projection: %s: reading the schema version: %w", t.name, err)
	}
	if latest := latestVersion(t.kind); cur > latest {
		return &SchemaError{Name: t.name, Have: cur, Want: latest}
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("projection: %s: migrating the schema: %w", t.name, err)
	}
	return nil
}

// SchemaError says that a projection's schema is not the version this slackpoll
// reads.
type SchemaError struct {
	Name       string
	Have, Want int64
}

func (e *SchemaError) Error() string {
	if e.Have < e.Want {
		return fmt.Sprintf("projection %s: schema version %d, this slackpoll's is %d: start the daemon (run or once), which migrates it", e.Name, e.Have, e.Want)
	}
	return fmt.Sprintf("projection %s: schema version %d is newer than this slackpoll's (%d): use the newer slackpoll", e.Name, e.Have, e.Want)
}

// latestVersion is the version of the newest embedded migration of kind.
func latestVersion(kind string) int64 {
	entries, _ := fs.ReadDir(migrations, "migrations/"+kind)
	var v int64
	for _, e := range entries {
		if n, err := strconv.ParseInt(strings.SplitN(e.Name(), "_", 2)[0], 10, 64); err == nil && n > v {
			v = n
		}
	}
	return v
}

// checkVersion fails unless the target's schema is this version's.
func (t *Target) checkVersion(ctx context.Context) error {
	have, err := t.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("%w: %s: no slackpoll schema (%v): the daemon creates it when it starts", ErrNoProjection, t.name, err)
	}
	if want := latestVersion(t.kind); have != want {
		return &SchemaError{Name: t.name, Have: have, Want: want}
	}
	return nil
}

// SchemaVersion returns the version of the schema the target holds.
func (t *Target) SchemaVersion(ctx context.Context) (int64, error) {
	var v int64
	err := t.db.QueryRowContext(ctx, "SELECT max(version_id) FROM "+migrationsTable+" WHERE is_applied").Scan(&v)
	return v, err
}

// q turns the portable SQL of this package into the target's: ? placeholders
// become $1, $2, … for Postgres, and {time}, {bool} the column types.
func (t *Target) q(s string) string {
	if t.kind == KindSQLite {
		return strings.NewReplacer("{time}", "TEXT", "{bool}", "INTEGER", "{true}", "1", "{false}", "0").Replace(s)
	}
	s = strings.NewReplacer("{time}", "timestamptz", "{bool}", "boolean", "{true}", "true", "{false}", "false").Replace(s)
	var b strings.Builder
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// timeFormat is how SQLite holds times: UTC, fixed width, so that text order is time
// order and SQLite's date functions read it.
const timeFormat = "2006-01-02T15:04:05.000000Z"

// timeArg is a time as the target takes it; nil for NULL.
func (t *Target) timeArg(v *time.Time) any {
	if v == nil {
		return nil
	}
	if t.kind == KindSQLite {
		return v.UTC().Format(timeFormat)
	}
	return v.UTC()
}

// nullString is "" as NULL.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// sqlTime scans a time column of either target: SQLite's text, Postgres's timestamptz.
type sqlTime struct{ t *time.Time }

func (s *sqlTime) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		s.t = nil
	case time.Time:
		u := x.UTC()
		s.t = &u
	case string:
		u, err := time.Parse(time.RFC3339Nano, x)
		if err != nil {
			return err
		}
		u = u.UTC()
		s.t = &u
	case []byte:
		return s.Scan(string(x))
	default:
		return fmt.Errorf("time column: unexpected %T", v)
	}
	return nil
}

// sqlString scans a nullable text column as "" for NULL.
type sqlString struct{ s string }

func (s *sqlString) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		s.s = ""
	case string:
		s.s = x
	case []byte:
		s.s = string(x)
	default:
		return fmt.Errorf("text column: unexpected %T", v)
	}
	return nil
}

// Reset empties the target: every row of every team (the demo's schema, before a
// run).
func (t *Target) Reset(ctx context.Context) error {
	for _, table := range []string{"reactions", "reaction_counts", "mentions", "messages", "users", "conversations", "projection_state"} {
		if _, err := t.db.ExecContext(ctx, "DELETE FROM "+table); err != nil {
			return fmt.Errorf("projection: %s: emptying %s: %w", t.name, table, err)
		}
	}
	if t.kind == KindSQLite {
		if _, err := t.db.ExecContext(ctx, "DELETE FROM messages_fts"); err != nil {
			return fmt.Errorf("projection: %s: emptying the search index: %w", t.name, err)
		}
	}
	return nil
}

// analyze refreshes the query planner's statistics after a sync wrote many rows,
// so that the batches after it are planned on the table as it is (Postgres plans
// on statistics an autovacuum may not have refreshed yet; SQLite's optimize
// analyzes what needs it).
func (t *Target) analyze(ctx context.Context) error {
	if t.kind == KindSQLite {
		_, err := t.db.ExecContext(ctx, "PRAGMA optimize")
		return err
	}
	// The search index's pending list (GIN's fast update) is scanned by every
	// search until it is merged: merge what the sync left there.
	for _, q := range []string{"ANALYZE messages, reactions, reaction_counts, mentions, users, conversations",
		"SELECT gin_clean_pending_list('messages_search'::regclass)"} {
		if _, err := t.db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}
