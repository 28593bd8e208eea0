package crashtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	boltstore "github.com/slackpoll/slackpoll/internal/bolt"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
)

// writeStore writes a store at path holding conversation channel with n messages of
// text, in transactions of 256.
func writeStore(t *testing.T, path, channel string, n int, text string) {
	t.Helper()
	s, err := boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 256 {
		err := s.Update(func(tx rm.Tx) error {
			if err := tx.PutConversation(rm.Conversation{ID: channel, Name: strings.ToLower(channel), Type: rm.TypePublicChannel, Status: rm.StatusOK}); err != nil {
				return err
			}
			for j := i; j < min(i+256, n); j++ {
				if err := tx.PutMessage(rm.Message{Channel: channel, TS: rm.TS(fmt.Sprintf("16%08d.000000", j)), User: "U1", Text: text}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeDamagedStore writes a store of 3,000 messages and damages it with damage.
func writeDamagedStore(t *testing.T, path string, damage func(f *os.File, size int64) error) {
	t.Helper()
	writeStore(t, path, "C0GENERAL", 3000, strings.Repeat("text ", 20))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := damage(f, fi.Size()); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedStoreFailsEveryCommandCleanly runs the built binary's commands on a
// truncated and on an overwritten store: each exits 1 saying the store is damaged and
// what to do — never a Go panic, a fault (exit 2) or a healthy status table.
func TestDamagedStoreFailsEveryCommandCleanly(t *testing.T) {
	bin := slackpollBinary(t)
	for name, damage := range map[string]func(f *os.File, size int64) error{
		"truncated to half": func(f *os.File, size int64) error { return f.Truncate(size / 2) },
		"pages overwritten": func(f *os.File, size int64) error {
			_, err := f.WriteAt(make([]byte, 8*4096), size/2/4096*4096)
			return err
		},
	} {
		for _, args := range [][]string{{"status"}, {"status", "--json"}, {"export"}} {
			t.Run(name+"/"+strings.Join(args, " "), func(t *testing.T) {
				dir := t.TempDir()
				store := filepath.Join(dir, "slackpoll.db")
				writeDamagedStore(t, store, damage)
				cfg := filepath.Join(dir, "slackpoll.yaml")
				if err := os.WriteFile(cfg, []byte(fmt.Sprintf("store:\n  path: %q\nconversations: [C0GENERAL]\n", store)), 0o600); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(bin, append([]string{args[0], "--config", cfg}, args[1:]...)...)
				cmd.Env = []string{"HOME=" + dir}
				var stdout, stderr strings.Builder
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				code := cmd.ProcessState.ExitCode()
				if code != 1 {
					t.Errorf("exit %d (%v), want 1; stderr:\n%.3000s", code, err, stderr.String())
				}
				out := stderr.String()
				for _, bad := range []string{"panic", "goroutine ", "SIGSEGV", "SIGBUS", "fatal error"} {
					if strings.Contains(out, bad) {
						t.Errorf("stderr shows %q:\n%.3000s", bad, out)
					}
				}
				if !strings.Contains(out, "is damaged") || !strings.Contains(out, "restore a backup or move it aside") {
					t.Errorf("stderr does not say the store is damaged and what to do:\n%.3000s", out)
				}
			})
		}
	}
}
