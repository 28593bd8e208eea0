package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/export"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/readfixture"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

// exportFile is the export of the store file at path.
func exportFile(t *testing.T, path string, configured []string) string {
	t.Helper()
	s, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("%s does not open as a store: %v", path, err)
	}
	defer storetest.Close(t, s) // a copy bbolt's check passes
	var b bytes.Buffer
	if err := s.View(func(tx rm.Tx) error { return export.Write(tx, &b, configured) }); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestBackupOfAStoreNoDaemonHolds(t *testing.T) {
	f := closedStore(t)
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured})
	dst := filepath.Join(t.TempDir(), "backup.db")
	code, out, errOut := runCLI(t.Context(), "backup", "--config", cfg, dst)
	if code != ExitOK {
		t.Fatalf("backup = %d, stderr %s", code, errOut)
	}
	wantContains(t, "backup", out, "backed up store "+f.Path+" to "+dst)
	if got, want := exportFile(t, dst, f.Configured), exportFile(t, f.Path, f.Configured); got != want {
		t.Errorf("the backup's export differs:\n%s\nwant\n%s", got, want)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("backup mode = %v (%v), want 0600: it holds message texts", fi.Mode(), err)
	}
	code, _, errOut = runCLI(t.Context(), "backup", "--config", cfg, f.Path)
	if code != ExitUsage || !strings.Contains(errOut, "is the store itself") {
		t.Errorf("backup onto the store = %d, %s; want a usage error", code, errOut)
	}
}

func TestBackupAndExportThroughTheDaemonWhileItHoldsTheStore(t *testing.T) {
	f := readfixture.New(t, readfixture.Options{}) // keeps the store locked, as run does
	addr := daemonAPI(t, f, "tok-123")
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured, listen: addr, token: "tok-123"})
	var want bytes.Buffer
	if err := f.Store.View(func(tx rm.Tx) error { return export.Write(tx, &want, f.Configured) }); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runCLI(t.Context(), "export", "--config", cfg)
	if code != ExitOK || out != want.String() {
		t.Errorf("export through the API = %d (stderr %s):\n%s\nwant\n%s", code, errOut, out, want.String())
	}

	dst := filepath.Join(t.TempDir(), "backup.db")
	code, out, errOut = runCLI(t.Context(), "backup", "--config", cfg, dst)
	if code != ExitOK {
		t.Fatalf("backup = %d, stderr %s", code, errOut)
	}
	wantContains(t, "backup", out, "backed up the running daemon at http://"+addr)
	if got := exportFile(t, dst, f.Configured); got != want.String() {
		t.Errorf("the backup's export differs:\n%s\nwant\n%s", got, want.String())
	}
}

// backup does not replace an existing file unless told to (it did, silently), and a
// missing directory is named as such (the error named a temporary file).
func TestBackupRefusesToOverwriteAndNamesAMissingDirectory(t *testing.T) {
	f := closedStore(t)
	cfg := writeConfig(t, cfgOpts{store: f.Path, convs: f.Configured})
	dir := t.TempDir()
	dst := filepath.Join(dir, "backup.db")
	if err := os.WriteFile(dst, []byte("an older backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t.Context(), "backup", "--config", cfg, dst)
	if code != ExitRuntime || !strings.Contains(errOut, "exists") || !strings.Contains(errOut, "--force") {
		t.Errorf("backup onto an existing file = %d %s, want a refusal pointing at --force", code, errOut)
	}
	if b, _ := os.ReadFile(dst); string(b) != "an older backup" {
		t.Error("the existing file was replaced")
	}
	if code, _, errOut := runCLI(t.Context(), "backup", "--config", cfg, "--force", dst); code != ExitOK {
		t.Errorf("backup --force = %d %s", code, errOut)
	}
	missing := filepath.Join(dir, "no-such-dir", "backup.db")
	code, _, errOut = runCLI(t.Context(), "backup", "--config", cfg, missing)
	if code != ExitRuntime || !strings.Contains(errOut, "directory "+filepath.Join(dir, "no-such-dir")+" does not exist") || strings.Contains(errOut, ".tmp-") {
		t.Errorf("backup into a missing directory = %d %s, want the directory named, no temporary file", code, errOut)
	}
}
