package httpapi_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	"github.com/slackpoll/slackpoll/internal/export"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

func exportOf(t *testing.T, s rm.Store, configured []string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := s.View(func(tx rm.Tx) error { return export.Write(tx, &b, configured) }); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestExportEndpointStreamsTheExport(t *testing.T) {
	e := newEnv(t, envOpts{token: "tok"})
	code, body := e.do(t, http.MethodGet, "/v1/export", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /v1/export = %d %s", code, body)
	}
	if want := exportOf(t, e.f.Store, e.f.Configured); !bytes.Equal(body, want) || len(want) == 0 {
		t.Errorf("GET /v1/export differs from the export:\n%s\nwant\n%s", body, want)
	}
	e.token = ""
	if code, _ := e.do(t, http.MethodGet, "/v1/export", nil); code != http.StatusUnauthorized {
		t.Errorf("GET /v1/export without the token = %d, want 401", code)
	}
}

func TestBackupEndpointIsAStoreWithTheSameContent(t *testing.T) {
	e := newEnv(t, envOpts{})
	code, body := e.do(t, http.MethodGet, "/v1/backup", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /v1/backup = %d %s", code, body)
	}
	path := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	copyStore, err := boltstore.Open(path, boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("the backup does not open as a store: %v", err)
	}
	defer storetest.Close(t, copyStore) // a backup bbolt's check passes
	if got, want := exportOf(t, copyStore, e.f.Configured), exportOf(t, e.f.Store, e.f.Configured); !bytes.Equal(got, want) {
		t.Errorf("the backup's export differs from the store's:\n%s\nwant\n%s", got, want)
	}
}
