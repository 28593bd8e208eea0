package boltstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// A store file deleted, moved away or replaced under an open Store: every later
// transaction fails saying so, instead of writing into a file no one will open again.
func TestStoreFileDeletedOrReplacedIsAnError(t *testing.T) {
	for name, change := range map[string]func(t *testing.T, path string){
		"deleted": func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		},
		"moved away": func(t *testing.T, path string) {
			if err := os.Rename(path, path+".old"); err != nil {
				t.Fatal(err)
			}
		},
		"replaced by a copy": func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tmp := filepath.Join(filepath.Dir(path), "copy")
			if err := os.WriteFile(tmp, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "slackpoll.db")
			s, err := Open(path, Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			putAll(t, s, msg("1700000001.000000"))
			change(t, path)
			err = s.Update(func(tx readmodel.Tx) error { return tx.PutMessage(msg("1700000002.000000")) })
			if !errors.Is(err, ErrReplaced) || !strings.Contains(err.Error(), path) {
				t.Errorf("Update after the file was %s: %v, want ErrReplaced naming the path", name, err)
			}
			if err := s.View(func(readmodel.Tx) error { return nil }); !errors.Is(err, ErrReplaced) {
				t.Errorf("View after the file was %s: %v, want ErrReplaced", name, err)
			}
		})
	}
}
