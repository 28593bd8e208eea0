package boltstore

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

func TestOpenCreatesFileWithMode0600(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slackpoll.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("mode = %v, want 0600", got)
	}
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
}

func TestSecondOpenFailsFastWithErrLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slackpoll.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	start := time.Now()
	s2, err := Open(path, Options{LockTimeout: 200 * time.Millisecond})
	elapsed := time.Since(start)
	if err == nil {
		s2.Close()
		t.Fatal("second Open succeeded, want ErrLocked")
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("err = %v, want errors.Is ErrLocked", err)
	}
	want := `store ` + path + ` is locked by another process (is "slackpoll run" running?)`
	if err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if elapsed > 2*time.Second {
		t.Errorf("second Open took %v, want about the 200ms lock timeout", elapsed)
	}
	// A reader is refused too while the writer holds the lock.
	if _, err := Open(path, Options{ReadOnly: true, LockTimeout: 100 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Errorf("read-only Open while locked: err = %v, want ErrLocked", err)
	}
}

func TestLockReleasedOnClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slackpoll.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("reopen after Close: %v", err)
	}
	s.Close()
}

func TestSchemaVersionMismatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slackpoll.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.DB().Update(func(btx *bolt.Tx) error {
		return btx.Bucket(bMeta).Put(kSchema, []byte("99"))
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	for _, ro := range []bool{false, true} {
		_, err = Open(path, Options{ReadOnly: ro})
		var se *SchemaError
		if !errors.Is(err, ErrSchemaVersion) || !errors.As(err, &se) {
			t.Fatalf("ReadOnly=%v: err = %v, want a *SchemaError matching ErrSchemaVersion", ro, err)
		}
		if se.Have != 99 || se.Want != SchemaVersion {
			t.Errorf("SchemaError = %+v, want Have 99, Want %d", se, SchemaVersion)
		}
		for _, part := range []string{path, "schema version 99", "needs 1", "upgrade slackpoll"} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("err %q does not contain %q", err, part)
			}
		}
	}
	// The failed open released the lock.
	if _, err := Open(path, Options{LockTimeout: 100 * time.Millisecond}); errors.Is(err, ErrLocked) {
		t.Errorf("lock still held after a failed Open: %v", err)
	}
}

func TestOlderSchemaSaysRebuild(t *testing.T) {
	err := (&SchemaError{Path: "x.db", Have: 0, Want: 1}).Error()
	if !strings.Contains(err, "move it aside") {
		t.Errorf("err %q does not say what to do", err)
	}
}

func TestReadOnlyOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slackpoll.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	putAll(t, s, msg("1718906000.000100"))
	s.Close()

	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	view(t, ro, func(tx readmodel.Tx) error {
		m, ok, err := tx.Message("C1", "1718906000.000100")
		if err != nil || !ok || m.Text != "m 1718906000.000100" {
			t.Errorf("Message = %+v, %v, %v", m, ok, err)
		}
		return nil
	})
	// Two readers may share the file.
	ro2, err := Open(path, Options{ReadOnly: true, LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("second read-only Open: %v", err)
	}
	ro2.Close()
	if err := ro.Update(func(tx readmodel.Tx) error { return tx.PutMessage(msg("1718906001.000000")) }); err == nil {
		t.Error("Update on a read-only store succeeded")
	}
}

func TestReadOnlyOpenOfMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.db")
	_, err := Open(path, Options{ReadOnly: true})
	if err == nil || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want it to name %s and say it does not exist", err, path)
	}
	if _, statErr := os.Stat(path); !errors.Is(statErr, os.ErrNotExist) {
		t.Errorf("read-only Open created %s", path)
	}
}

func TestOpenInMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "slackpoll.db")
	_, err := Open(path, Options{})
	if err == nil || !strings.Contains(err.Error(), "directory") || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want it to name %s and its missing directory", err, path)
	}
}

func TestOpenPermissionDenied(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("root ignores file permissions")
	}
	dir := filepath.Join(t.TempDir(), "locked")
	if err := os.Mkdir(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	_, err := Open(filepath.Join(dir, "slackpoll.db"), Options{})
	if err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("err = %v, want permission denied", err)
	}
}

func TestOpenForeignBboltFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(btx *bolt.Tx) error { _, err := btx.CreateBucket([]byte("theirs")); return err })
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "meta") {
		t.Fatalf("err = %v, want a refusal naming the missing meta bucket", err)
	}
}

func TestOpenNotABboltFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "text.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not a database\n", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want an error naming %s", err, path)
	}
}

func TestOpenTightensAnExistingStoreTo0600(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v after reopening a 0644 store, want 0600", fi.Mode().Perm())
	}
}

func TestOpenADirectorySaysSo(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("err = %v, want it to say the path is a directory", err)
	}
}

// The mode is fixed only once the file is known to be a store: a file that is not
// one keeps its mode, and so does the target of a symlink at the store path.
func TestOpenFixesTheModeOfStoresOnlyAndFollowsNoSymlink(t *testing.T) {
	dir := t.TempDir()
	notStore := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notStore, []byte("not a store\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(notStore, Options{}); err == nil {
		t.Fatal("opened a text file as a store")
	}
	if fi, _ := os.Stat(notStore); fi.Mode().Perm() != 0o644 {
		t.Errorf("a file that is not a store was chmodded to %v", fi.Mode().Perm())
	}

	target := filepath.Join(dir, "real.db")
	s, err := Open(target, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.Chmod(target, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	s, err = Open(link, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o644 {
		t.Errorf("the symlink's target was chmodded to %v", fi.Mode().Perm())
	}
}

// A store its owner made read-only (0444) is not made writable behind the operator's
// back: root, who can open it for writing anyway, gets an error saying what to do,
// and the mode stays. (As another user the open fails on the permission itself.)
func TestOpenForWritingRefusesAReadOnlyStoreAndKeepsItsMode(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() != 0 {
		t.Skip("only root can open a 0444 file for writing")
	}
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err == nil {
		s.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "read-only") || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("Open of a 0444 store for writing: %v, want a refusal saying how to make it writable", err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o444 {
		t.Errorf("mode = %v after the open, want 0444 kept", fi.Mode().Perm())
	}
	// Read-only, it opens.
	s, err = Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only Open of a 0444 store: %v", err)
	}
	s.Close()
}

// A store readable by other users loses only their bits, and the open says so.
func TestOpenSaysItMadeAStorePrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	s, err = Open(path, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	if !strings.Contains(logs.String(), "0640") || !strings.Contains(logs.String(), "0600") {
		t.Errorf("the open did not say it changed the mode:\n%s", logs.String())
	}
}
