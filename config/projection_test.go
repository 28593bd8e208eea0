package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// The SQLite projection sits next to the store unless told otherwise; a relative
// path is relative to the config file, as store.path is.
func TestProjectionSQLitePath(t *testing.T) {
	c := mustLoad(t, "store:\n  path: data/poll.db\n")
	dir := filepath.Dir(c.Store.Path)
	if got := c.SQLitePath(); got != filepath.Join(dir, "poll.sqlite") {
		t.Errorf("default SQLite path = %q, want next to the store (%s/poll.sqlite)", got, dir)
	}
	c = mustLoad(t, "projection:\n  sqlite:\n    path: sql/x.sqlite\n")
	if got := c.SQLitePath(); !filepath.IsAbs(got) || !strings.HasSuffix(got, "/sql/x.sqlite") {
		t.Errorf("SQLite path = %q, want absolute, in the config file's directory", got)
	}
	if c := mustLoad(t, "projection:\n  sqlite:\n    enabled: false\n"); c.Projection.SQLite.Enabled {
		t.Error("projection.sqlite.enabled: false is not taken")
	}
}

func TestProjectionPostgresConfig(t *testing.T) {
	t.Setenv("PG_DSN", "postgres://u:hunter2@127.0.0.1:5432/app")
	c := mustLoad(t, "projection:\n  postgres:\n    dsn: ${PG_DSN}\n")
	if c.Projection.Postgres.DSN.Reveal() != "postgres://u:hunter2@127.0.0.1:5432/app" || c.Projection.Postgres.Schema != "slackpoll" {
		t.Errorf("postgres = %+v", c.Projection.Postgres)
	}
	if strings.Contains(c.String(), "hunter2") {
		t.Error("the effective config shows the DSN's password")
	}
	for _, bad := range []string{"Slack-Poll", "1abc", "a b", "x;drop"} {
		_, err := Load(writeConfig(t, "projection:\n  postgres:\n    schema: \""+bad+"\"\n"))
		if err == nil || !strings.Contains(err.Error(), "projection.postgres.schema") {
			t.Errorf("schema %q: err = %v, want an error naming projection.postgres.schema", bad, err)
		}
	}
}
