package boltstore

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// damagedStore writes a store of n messages to a new file, closes it, damages it with
// damage and returns its path.
func damagedStore(t *testing.T, n int, damage func(t *testing.T, path string, size int64)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "slackpoll.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 500 {
		update(t, s, func(tx readmodel.Tx) error {
			for j := i; j < min(i+500, n); j++ {
				m := msg(fmt.Sprintf("17000%05d.000000", j))
				m.Text = strings.Repeat("text ", 20)
				if err := tx.PutMessage(m); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	damage(t, path, fi.Size())
	return path
}

func overwrite(at func(size int64) int64, b byte, n int) func(*testing.T, string, int64) {
	return func(t *testing.T, path string, size int64) {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, n)
		for i := range buf {
			buf[i] = b
		}
		if _, err := f.WriteAt(buf, at(size)); err != nil {
			t.Fatal(err)
		}
	}
}

// overwriteRoot overwrites with 0xff the page of the root bucket the file's current
// meta page names, and the 3 after it: pages every read goes through. (A fixed page
// number could name a page freed by later commits, which no read touches: then the
// store is not damaged where it is read, and no error is right.)
func overwriteRoot(t *testing.T, path string, size int64) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var root, txid uint64
	for page := int64(0); page < 2; page++ { // the two meta pages; the newer is current
		var meta [72]byte // page header (16) + meta up to txid
		if _, err := f.ReadAt(meta[:], page*4096); err != nil {
			t.Fatal(err)
		}
		if id := binary.LittleEndian.Uint64(meta[64:]); id >= txid {
			txid, root = id, binary.LittleEndian.Uint64(meta[32:])
		}
	}
	_ = f.Close()
	if root < 2 || int64(root)*4096 >= size {
		t.Fatalf("meta names root page %d in a %d-byte file", root, size)
	}
	overwrite(func(int64) int64 { return int64(root) * 4096 }, 0xff, 4*4096)(t, path, size)
}

var damages = []struct {
	name   string
	damage func(*testing.T, string, int64)
}{
	{"truncated to half", func(t *testing.T, path string, size int64) {
		if err := os.Truncate(path, size/2); err != nil {
			t.Fatal(err)
		}
	}},
	{"truncated to 3 pages", func(t *testing.T, path string, size int64) {
		if err := os.Truncate(path, 3*4096); err != nil {
			t.Fatal(err)
		}
	}},
	{"pages in the middle overwritten with 0xff", overwrite(func(size int64) int64 { return size / 2 / 4096 * 4096 }, 0xff, 8*4096)},
	{"pages in the middle zeroed", overwrite(func(size int64) int64 { return size / 2 / 4096 * 4096 }, 0, 8*4096)},
	{"root pages overwritten with 0xff", overwriteRoot},
}

// readAll reads every stored message of C1 in one View, then writes one in an Update.
func readAll(path string, ro bool) (err error) {
	s, err := Open(path, Options{ReadOnly: ro, NoSync: true})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := s.Close(); err == nil {
			err = cerr
		}
	}()
	if err := s.View(func(tx readmodel.Tx) error {
		if _, err := tx.Counts("C1"); err != nil {
			return err
		}
		return tx.Timeline("C1", "", "", func(readmodel.Message) error { return nil })
	}); err != nil {
		return err
	}
	if ro {
		return nil
	}
	return s.Update(func(tx readmodel.Tx) error { return tx.PutMessage(msg("1800000000.000000")) })
}

// TestDamagedStoreIsAnErrorNotAPanic: a truncated or overwritten file fails Open, View
// or Update with an error that says the store is damaged and what to do; it never
// panics nor faults.
func TestDamagedStoreIsAnErrorNotAPanic(t *testing.T) {
	for _, d := range damages {
		for _, ro := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/readonly=%v", d.name, ro), func(t *testing.T) {
				path := damagedStore(t, 3000, d.damage)
				var err error
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Fatalf("panicked: %v", p)
						}
					}()
					err = readAll(path, ro)
				}()
				if err == nil {
					t.Fatal("no error from a damaged store")
				}
				t.Log(err)
				if !strings.Contains(err.Error(), "store "+path+" is damaged") ||
					!strings.Contains(err.Error(), "restore a backup or move it aside") {
					t.Errorf("err = %v, want ErrDamaged: store %s is damaged: … (restore a backup or move it aside)", err, path)
				}
			})
		}
	}
}
