package cli

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// With no daemon: `projection rebuild` builds the SQLite projection next to the
// store, `search` reads it, `status` shows its cursor, and `projection verify`
// compares it with the store row for row (exit 1 on a difference).
func TestSearchAndProjectionCommandsWithoutADaemon(t *testing.T) {
	f := closedStore(t)
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured})
	ctx := context.Background()

	code, _, errOut := runCLI(ctx, "--config", cfg, "search", "deploy")
	if code != ExitRuntime || !strings.Contains(errOut, "no SQL projection") {
		t.Errorf("search before any projection: exit %d, stderr %q; want 1 saying there is no projection", code, errOut)
	}
	code, out, errOut := runCLI(ctx, "--config", cfg, "projection", "rebuild")
	if code != ExitOK || !strings.Contains(out, "sqlite projection rebuilt") {
		t.Fatalf("projection rebuild: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(ctx, "--config", cfg, "search", "deploy")
	if code != ExitOK {
		t.Fatalf("search: exit %d\n%s%s", code, out, errOut)
	}
	wantContains(t, "search", out, string(f.Parent), "avery: «Deploy» finished (v2)", "watched")
	code, out, _ = runCLI(ctx, "--config", cfg, "search", "--json", "--record", "ticket-42", "deploy")
	wantContains(t, "search --json", out, `"items":[{"channel":"C0GENERAL"`, `"next_cursor":""`)
	if code != ExitOK {
		t.Errorf("search --json: exit %d", code)
	}
	if code, _, errOut = runCLI(ctx, "--config", cfg, "search", "!!!"); code != ExitUsage || !strings.Contains(errOut, "bad search query") {
		t.Errorf("search !!!: exit %d %q, want 2 with the reason", code, errOut)
	}
	code, out, _ = runCLI(ctx, "--config", cfg, "status")
	wantContains(t, "status", out, "projection sqlite "+strings.TrimSuffix(f.Path, filepath.Ext(f.Path))+".sqlite: stopped; cursor")
	if code != ExitOK {
		t.Errorf("status: exit %d", code)
	}
	code, out, errOut = runCLI(ctx, "--config", cfg, "projection", "verify")
	if code != ExitOK || !strings.Contains(out, "SQL projection (sqlite) matches: ") || !strings.Contains(out, " 0 differences") {
		t.Fatalf("projection verify: exit %d\n%s%s", code, out, errOut)
	}

	db, err := sql.Open("sqlite", strings.TrimSuffix(f.Path, filepath.Ext(f.Path))+".sqlite")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE messages SET text = 'tampered'"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	code, out, _ = runCLI(ctx, "--config", cfg, "projection", "verify")
	if code != ExitRuntime || !strings.Contains(out, "text=Deploy finished (v2) (store) vs text=tampered (projection)") {
		t.Errorf("verify after tampering: exit %d\n%s", code, out)
	}
	if code, _, errOut = runCLI(ctx, "--config", cfg, "projection", "frobnicate"); code != ExitUsage {
		t.Errorf("projection frobnicate: exit %d %q, want 2", code, errOut)
	}
}
