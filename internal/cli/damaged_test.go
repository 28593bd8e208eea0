package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/config"
	boltstore "github.com/slackpoll/slackpoll/internal/bolt"
	"github.com/slackpoll/slackpoll/internal/httpapi"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// damagedStoreFile writes a store with a conversation and 3,000 messages, then
// overwrites 8 pages in the middle of the file: the pages status reads (meta,
// conversations, counts) are intact, message pages are not.
func damagedStoreFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "slackpoll.db")
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(func(tx rm.Tx) error {
		if err := tx.PutConversation(rm.Conversation{ID: "C0AAAAAAA", Name: "general", Type: rm.TypePublicChannel, Status: rm.StatusOK}); err != nil {
			return err
		}
		for i := range 3000 {
			m := rm.Message{Channel: "C0AAAAAAA", TS: rm.TS(fmt.Sprintf("17000%05d.000000", i)), User: "U1", Text: strings.Repeat("text ", 20)}
			if err := tx.PutMessage(m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, 8*4096), fi.Size()/2/4096*4096); err != nil {
		t.Fatal(err)
	}
	return path
}

// A damaged store makes status and export exit 1 saying what happened and what
// to do — not panic, not fault, not print a healthy table.
func TestDamagedStoreIsReportedByEveryReadCommand(t *testing.T) {
	path := damagedStoreFile(t)
	cfg := writeConfig(t, cfgOpts{store: path, convs: []string{"C0AAAAAAA"}})
	for _, args := range [][]string{
		{"status"},
		{"status", "--json"},
		{"export"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(context.Background(), append([]string{args[0], "--config", cfg}, args[1:]...)...)
			if code != ExitRuntime {
				t.Errorf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, ExitRuntime, out, errOut)
			}
			wantContains(t, "stderr", errOut, "store "+path+" is damaged", "restore a backup or move it aside")
		})
	}
}

// spoiledStoreFile writes a store with a conversation and three messages, the middle
// one's stored value overwritten with bytes no decoder accepts.
func spoiledStoreFile(t *testing.T) (path string, bad rm.TS) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "slackpoll.db")
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(func(tx rm.Tx) error {
		if err := tx.PutConversation(rm.Conversation{ID: "C0AAAAAAA", Name: "general", Type: rm.TypePublicChannel, Status: rm.StatusOK}); err != nil {
			return err
		}
		for _, ts := range []rm.TS{"1700000001.000000", "1700000002.000000", "1700000003.000000"} {
			if err := tx.PutMessage(rm.Message{Channel: "C0AAAAAAA", TS: ts, User: "U1", Text: "m " + string(ts)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	bad = "1700000002.000000"
	k := bad.Key()
	err = s.DB().Update(func(btx *bbolt.Tx) error {
		return btx.Bucket([]byte("chan")).Bucket([]byte("C0AAAAAAA")).Bucket([]byte("m")).Put(k[:], []byte{2, 0xff, 0xff, 0xff})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, bad
}

// One undecodable stored message: export writes everything else, names the record
// and exits 1; status counts it.
func TestUndecodableRecordIsSkippedByExportAndCountedByStatus(t *testing.T) {
	path, bad := spoiledStoreFile(t)
	cfg := writeConfig(t, cfgOpts{store: path, convs: []string{"C0AAAAAAA"}})
	code, out, errOut := runCLI(context.Background(), "export", "--config", cfg)
	if code != ExitRuntime {
		t.Errorf("export exit %d, want %d; stderr:\n%s", code, ExitRuntime, errOut)
	}
	wantContains(t, "export stdout", out, `"kind":"conversation"`, "1700000001.000000", "1700000003.000000")
	wantContains(t, "export stderr", errOut, "C0AAAAAAA/"+string(bad), "undecodable")

	code, out, errOut = runCLI(context.Background(), "status", "--config", cfg)
	if code != ExitOK {
		t.Errorf("status exit %d, want 0; stderr:\n%s", code, errOut)
	}
	wantContains(t, "status", out, "undecodable stored records: 1", "C0AAAAAAA/"+string(bad))
}

// Through the daemon's API, export names an undecodable record as the export from
// the store file does — everything else written, the record on stderr, exit 1 —
// instead of a stream cut short with a transport error.
func TestUndecodableRecordIsNamedByExportThroughTheAPI(t *testing.T) {
	path, bad := spoiledStoreFile(t)
	s, err := boltstore.Open(path, boltstore.Options{}) // held, as by `slackpoll run`
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Store: s, Configured: []string{"C0AAAAAAA"}}))
	defer srv.Close()
	cfg := writeConfig(t, cfgOpts{store: path, listen: srv.Listener.Addr().String(), convs: []string{"C0AAAAAAA"}})
	code, out, errOut := runCLI(context.Background(), "export", "--config", cfg)
	if code != ExitRuntime {
		t.Errorf("export exit %d, want %d; stderr:\n%s", code, ExitRuntime, errOut)
	}
	wantContains(t, "export stdout", out, `"kind":"conversation"`, "1700000001.000000", "1700000003.000000")
	wantContains(t, "export stderr", errOut, "C0AAAAAAA/"+string(bad), "undecodable")
	if strings.Contains(errOut, "cut the answer short") {
		t.Errorf("export through the API reports a cut stream:\n%s", errOut)
	}
}

// flipFirst flips bit 2 of byte at of the first value of a top-level bucket of the
// store file at path (the store closed).
func flipFirst(t *testing.T, path, bucket string, at int) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(btx *bbolt.Tx) error {
		b := btx.Bucket([]byte(bucket))
		k, v := b.Cursor().First()
		if k == nil {
			return fmt.Errorf("bucket %s is empty", bucket)
		}
		nv := append([]byte(nil), v...)
		nv[at] ^= 0x04
		return b.Put(k, nv)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// One flipped bit in the tail index or the watched set — both derived from the
// messages — stopped `once` and `run` at every start (a tick that cannot read them
// fails), and status's check did not see it. Status now reports them, and the
// daemon skips them, reports them and rebuilds them.
func TestDamagedIndexesStopNothingAndStatusSeesThem(t *testing.T) {
	_, cfg := onceWorkspace(t)
	once(t, cfg)
	code, out, errOut := runCLI(context.Background(), "export", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("export: %d %s", code, errOut)
	}
	var line struct {
		Channel string `json:"channel"`
		TS      string `json:"ts"`
	}
	if err := json.Unmarshal([]byte(strings.Split(out, "\n")[1]), &line); err != nil || line.TS == "" {
		t.Fatalf("export's second line %q: %v", strings.Split(out, "\n")[1], err)
	}
	if code, _, errOut := runCLI(context.Background(), "track", "--config", cfg, "--record", "ticket-1", line.Channel, line.TS); code != ExitOK {
		t.Fatalf("track: %d %s", code, errOut)
	}
	c, err := config.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	flipFirst(t, c.Store.Path, "tail", 1+rm.TSKeyLen+1+3) // a digit of the first entry's ts
	flipFirst(t, c.Store.Path, "watched", 3)              // a digit of the entry's ts

	code, out, errOut = runCLI(context.Background(), "status", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("status: %d %s", code, errOut)
	}
	wantContains(t, "status of the damaged store", out, "tail index entry", "watched set entry", "rebuilt by the daemon's next write")

	if code, _, errOut := runCLI(context.Background(), "once", "--config", cfg); code != ExitOK {
		t.Fatalf("once on a store with a damaged tail index and watched set: exit %d: %s", code, errOut)
	}
	_, out, _ = runCLI(context.Background(), "status", "--config", cfg)
	if strings.Contains(out, "tail index") || strings.Contains(out, "watched set") {
		t.Errorf("status after once still reports the indexes:\n%s", out)
	}
	if code, out, errOut := runCLI(context.Background(), "show", "--config", cfg, "--record", "ticket-1"); code != ExitOK || !strings.Contains(out, line.TS) {
		t.Errorf("show --record ticket-1 after the rebuild: %d %s %s", code, out, errOut)
	}
}
