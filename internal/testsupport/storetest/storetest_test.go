package storetest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackpoll/slackpoll/internal/boltstore"
	rm "github.com/slackpoll/slackpoll/internal/readmodel"
	"github.com/slackpoll/slackpoll/internal/testsupport/storetest"
)

// Check must notice a zeroed data page of a valid store (the meta pages are intact,
// so the file still opens): that is what every test store is checked for when its
// test ends.
func TestCheckFlagsCorruption(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s := storetest.OpenAt(t, path, boltstore.Options{NoSync: true})
	err := s.Update(func(tx rm.Tx) error {
		for i := range 2000 {
			m := rm.Message{Channel: "C0CHECK01", TS: rm.TSFromUnix(int64(1000 + i)), Text: strings.Repeat("x", 100)}
			if err := tx.PutMessage(m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if bad := storetest.Check(s.DB()); len(bad) != 0 {
		t.Fatalf("intact store: %v", bad)
	}
	pageSize := s.DB().Info().PageSize
	storetest.Close(t, s)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	// A page in the middle of the file: past the two meta pages and the freelist.
	page := st.Size() / int64(pageSize) / 2
	if _, err := f.WriteAt(make([]byte, pageSize), page*int64(pageSize)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s, err = boltstore.Open(path, boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatalf("corrupt data page should still open (meta intact): %v", err)
	}
	defer s.Close()
	if bad := storetest.Check(s.DB()); len(bad) == 0 {
		t.Fatal("bbolt check found nothing in a store with a zeroed page")
	} else {
		t.Logf("found: %v", bad[0])
	}
}
