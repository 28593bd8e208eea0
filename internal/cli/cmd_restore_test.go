package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	boltstore "github.com/slackpoll/slackpoll/internal/bolt"
	"github.com/slackpoll/slackpoll/internal/httpapi"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// feedLines runs `slackpoll changes --after after` and returns the changes printed,
// the exit status and stderr.
func feedLines(t *testing.T, cfg string, after uint64) ([]rm.Change, int, string) {
	t.Helper()
	code, out, errOut := runCLI(context.Background(), "changes", "--config", cfg, "--after", fmt.Sprint(after))
	var changes []rm.Change
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var c rm.Change
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("changes printed %q: %v", line, err)
		}
		changes = append(changes, c)
	}
	return changes, code, errOut
}

func once(t *testing.T, cfg string) {
	t.Helper()
	if code, _, errOut := runCLI(context.Background(), "once", "--config", cfg); code != ExitOK {
		t.Fatalf("once: exit %d: %s", code, errOut)
	}
}

// A store put back from a backup — by `slackpoll restore`, or by copying the file —
// must never answer a feed cursor handed out before the restore as if nothing
// happened, even once the restored daemon has written more changes than the
// consumer was ahead (its first ticks read again what changed since the backup),
// and must never give a seq handed out before to another change. A consumer at the
// backup's point follows on and sees what changed since, again.
func TestRestoredStoreNeverAnswersACursorFromBeforeIt(t *testing.T) {
	for _, how := range []string{"slackpoll restore", "a plain copy"} {
		t.Run(how, func(t *testing.T) {
			fake, _ := onceWorkspace(t)
			srv := httptest.NewServer(fake)
			defer srv.Close()
			store := filepath.Join(t.TempDir(), "slackpoll.db")
			cfg := writeConfig(t, cfgOpts{
				store: store, apiURL: srv.URL, slack: fake.Token(), convs: []string{"C0GENERAL"},
				extra: "changes:\n  backfill: true\n",
			})
			once(t, cfg)
			atBackup, _, _ := feedLines(t, cfg, 0)
			backupPoint := atBackup[len(atBackup)-1].Seq
			backup := filepath.Join(t.TempDir(), "backup.db")
			if code, _, errOut := runCLI(context.Background(), "backup", "--config", cfg, backup); code != ExitOK {
				t.Fatalf("backup: exit %d: %s", code, errOut)
			}

			// After the backup: three posts, read by a consumer that follows closely.
			for i := range 3 {
				if _, err := fake.Post("C0GENERAL", "U0AVERY00", fmt.Sprintf("after the backup %d", i)); err != nil {
					t.Fatal(err)
				}
			}
			once(t, cfg)
			ahead, _, _ := feedLines(t, cfg, 0)
			cursor := ahead[len(ahead)-1].Seq
			if cursor <= backupPoint+2 {
				t.Fatalf("feed after the backup ends at %d, want more than 2 past %d", cursor, backupPoint)
			}

			switch how {
			case "slackpoll restore":
				code, out, errOut := runCLI(context.Background(), "restore", "--config", cfg, backup)
				if code != ExitOK {
					t.Fatalf("restore: exit %d: %s", code, errOut)
				}
				wantContains(t, "restore's output", out, fmt.Sprintf("seqs %d to %d are never used again", backupPoint+1, cursor))
			case "a plain copy":
				b, err := os.ReadFile(backup)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(store, b, 0o600); err != nil {
					t.Fatal(err)
				}
			}

			// The restored daemon reads again what changed since the backup, and more.
			if _, err := fake.Post("C0GENERAL", "U0AVERY00", "after the restore"); err != nil {
				t.Fatal(err)
			}
			once(t, cfg)

			if got, code, errOut := feedLines(t, cfg, cursor); code == ExitOK || len(got) > 0 || !strings.Contains(errOut, "before the store was restored") {
				t.Errorf("changes --after %d (a cursor from before the restore): exit %d, %d changes, stderr %q; want an error naming the restore", cursor, code, len(got), errOut)
			}
			since, code, errOut := feedLines(t, cfg, backupPoint)
			if code != ExitOK {
				t.Fatalf("changes --after %d (the backup's point): exit %d: %s", backupPoint, code, errOut)
			}
			texts := ""
			for _, c := range since {
				if c.Seq <= cursor {
					t.Errorf("change %s after the restore got seq %d, handed out before it (up to %d)", c.Kind, c.Seq, cursor)
				}
				if c.After != nil && c.After.Text != nil {
					texts += *c.After.Text + ";"
				}
			}
			for _, want := range []string{"after the backup 0", "after the backup 2", "after the restore"} {
				if !strings.Contains(texts, want) {
					t.Errorf("the feed after the backup's point lacks the post %q: %s", want, texts)
				}
			}

			_, out, _ := runCLI(context.Background(), "status", "--config", cfg)
			wantContains(t, "status", out, "change feed: restored", fmt.Sprintf("to seq %d; seqs %d to", backupPoint, backupPoint+1))

			// Through the daemon's API: 410 Gone with the restore point.
			s, err := boltstore.Open(store, boltstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			api := httptest.NewServer(httpapi.New(httpapi.Options{Store: s}))
			defer api.Close()
			resp, err := http.Get(fmt.Sprintf("%s/v1/changes?after=%d", api.URL, cursor))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Error   string `json:"error"`
				Restore *struct {
					Seq       uint64 `json:"seq"`
					SkippedTo uint64 `json:"skipped_to"`
				} `json:"restore"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusGone || body.Restore == nil || body.Restore.Seq != backupPoint || body.Restore.SkippedTo < cursor {
				t.Errorf("GET /v1/changes?after=%d: %d %+v (restore %+v), want 410 with restore point %d, skipped to at least %d",
					cursor, resp.StatusCode, body, body.Restore, backupPoint, cursor)
			}
		})
	}
}
