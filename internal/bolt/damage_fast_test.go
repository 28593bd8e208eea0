package boltstore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// newestMetaOf returns the newest valid meta page of the store file at path.
func newestMetaOf(t *testing.T, path string) fileMeta {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, ok := newestMeta(readMetas(f))
	if !ok {
		t.Fatalf("%s has no valid meta page", path)
	}
	return m
}

// within runs fn and fails the test when it has not returned after d: a hang is a
// failure, not a test that never ends. (The goroutine of a hung fn is left behind.)
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: still blocked after %v", what, d)
	}
}

// Damage met inside a write transaction can leave bbolt's writer lock held: the
// panic's rollback re-reads the freelist page, and when that read panics too, bbolt
// never releases the lock. Every later Update, and Close, would wait for it for
// ever. The store must instead fail fast, everywhere, once it met damage, and Close
// must release the file.
func TestDamageMetInAWriteFailsFastEverywhereAfter(t *testing.T) {
	path := damagedStore(t, 3000, func(*testing.T, string, int64) {})
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	// Damage message pages and the freelist page under the open store: bbolt maps
	// the file shared, so the next transaction reads the garbage.
	m := newestMetaOf(t, path)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	overwrite(func(size int64) int64 { return size / 2 / 4096 * 4096 }, 0, 8*4096)(t, path, fi.Size())
	overwrite(func(int64) int64 { return int64(m.freelist) * int64(m.pageSize) }, 0xff, int(m.pageSize))(t, path, 0)

	var first error
	within(t, 10*time.Second, "the first Update on the damaged store", func() {
		first = s.Update(func(tx readmodel.Tx) error {
			return tx.Timeline("C1", "", "", func(readmodel.Message) error { return nil })
		})
	})
	if !errors.Is(first, ErrDamaged) {
		t.Fatalf("first Update: %v, want ErrDamaged", first)
	}
	select {
	case <-s.Failed():
	default:
		t.Error("Failed() is not closed after the store met damage")
	}
	within(t, 5*time.Second, "a second Update", func() {
		err = s.Update(func(tx readmodel.Tx) error { return tx.PutMessage(msg("1800000001.000000")) })
	})
	if !errors.Is(err, ErrDamaged) {
		t.Errorf("second Update: %v, want ErrDamaged", err)
	}
	within(t, 5*time.Second, "a View", func() {
		err = s.View(func(tx readmodel.Tx) error { _, _, err := tx.Identity(); return err })
	})
	if !errors.Is(err, ErrDamaged) {
		t.Errorf("View: %v, want ErrDamaged", err)
	}
	within(t, 5*time.Second, "Close", func() { _ = s.Close() })
	// The file lock is released: a new Open is not refused as locked.
	within(t, 5*time.Second, "Open after Close", func() {
		var s2 *Store
		s2, err = Open(path, Options{LockTimeout: 200 * time.Millisecond})
		if err == nil {
			_ = s2.Close()
		}
	})
	if errors.Is(err, ErrLocked) {
		t.Errorf("Open after Close: %v: the damaged store's lock was kept", err)
	}
}

// A file shorter than the pages its meta page counts is refused at Open, before
// bbolt reads a page it lacks, read-only or not.
func TestTruncatedStoreIsRefusedAtOpen(t *testing.T) {
	for _, ro := range []bool{false, true} {
		path := damagedStore(t, 3000, func(t *testing.T, path string, size int64) {
			if err := os.Truncate(path, size/2+1000); err != nil {
				t.Fatal(err)
			}
		})
		_, err := Open(path, Options{ReadOnly: ro})
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "truncated") {
			t.Errorf("readonly=%v: Open = %v, want ErrDamaged saying the file is truncated", ro, err)
		}
	}
}

// checkChildEnv names the store TestCheckChild checks, in a child process.
const checkChildEnv = "SLACKPOLL_TEST_CHECK_STORE"

// TestCheckChild is not a test of its own: TestCheckNeverKillsTheProcess runs it in
// a child process, where a fault in bbolt's check goroutine ("fatal error: fault")
// can only kill the child.
func TestCheckChild(t *testing.T) {
	path := os.Getenv(checkChildEnv)
	if path == "" {
		t.Skip("run by TestCheckNeverKillsTheProcess in a child process")
	}
	s, err := Open(path, Options{ReadOnly: true})
	if err == nil {
		err = s.Check()
		_ = s.Close()
	}
	fmt.Printf("check result: %v\n", err)
}

// pageOfType returns the first page of the store at path that bbolt reports as typ
// ("branch", "leaf") and that lies inside channel C1's messages, found by walking
// the page ids.
func pageOfType(t *testing.T, path, typ string) (id int, pageSize int) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(btx *bolt.Tx) error {
		m := btx.Bucket(bChan).Bucket([]byte("C1")).Bucket(bMsgs)
		root := int(m.Root())
		if typ == "branch" {
			id = root
			return nil
		}
		for i := root + 1; ; i++ {
			info, err := btx.Page(i)
			if err != nil || info == nil {
				return fmt.Errorf("no %s page after %d: %v", typ, root, err)
			}
			if info.Type == typ {
				id = i
				return nil
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return id, db.Info().PageSize
}

// patchPage writes b at offset off of page id of the file.
func patchPage(t *testing.T, path string, id, pageSize, off int, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, int64(id*pageSize+off)); err != nil {
		t.Fatal(err)
	}
}

// bbolt's Tx.Check runs in its own goroutine, where a fault on the memory map kills
// the process ("fatal error: fault", exit 2) instead of becoming a panic that guard
// recovers. Check must report every such damage as an error: a truncated file, a
// branch page naming a page past the end of the file, a key offset pointing there.
// (bbolt maps the file rounded up to a power of two: a page past the end of the file
// but inside the mapping faults where a page past the mapping panics on a bounds
// check.)
func TestCheckNeverKillsTheProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process per damage")
	}
	u64 := func(v uint64) []byte { return nativeEndian.AppendUint64(nil, v) }
	u32 := func(v uint32) []byte { return nativeEndian.AppendUint32(nil, v) }
	for _, d := range []struct {
		name   string
		damage func(t *testing.T, path string, size int64)
	}{
		{"the last pages in use truncated", func(t *testing.T, path string, _ int64) {
			m := newestMetaOf(t, path)
			if err := os.Truncate(path, int64(m.hwm-3)*int64(m.pageSize)-1000); err != nil {
				t.Fatal(err)
			}
		}},
		{"a branch element names a page past the end of the file", func(t *testing.T, path string, _ int64) {
			id, ps := pageOfType(t, path, "branch")
			patchPage(t, path, id, ps, pageHeaderSize+pageElementSize+8, u64(1<<20))
		}},
		{"a leaf key offset points past the end of the file", func(t *testing.T, path string, _ int64) {
			id, ps := pageOfType(t, path, "leaf")
			hwm := newestMetaOf(t, path).hwm
			patchPage(t, path, id, ps, pageHeaderSize+4, u32(uint32((int(hwm)+10-id)*ps)))
		}},
	} {
		t.Run(d.name, func(t *testing.T) {
			path := damagedStore(t, 3000, d.damage)
			cmd := exec.Command(os.Args[0], "-test.run=^TestCheckChild$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), checkChildEnv+"="+path)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the child checking the store died (%v):\n%.2000s", err, out)
			}
			if !strings.Contains(string(out), "check result: store "+path+" is damaged") {
				t.Fatalf("Check did not report the damage:\n%.2000s", out)
			}
			t.Log(strings.TrimSpace(string(out[strings.Index(string(out), "check result"):])))
		})
	}
}

// randomDamageEnv names the store TestCheckRandomDamageChild damages and checks.
const randomDamageEnv = "SLACKPOLL_TEST_RANDOM_DAMAGE_STORE"

// TestCheckRandomDamageChild is run by TestCheckSurvivesRandomDamage in a child
// process: it damages copies of a store at random places, then opens and checks
// each; a fault anywhere kills the child, and so fails the parent.
func TestCheckRandomDamageChild(t *testing.T) {
	src := os.Getenv(randomDamageEnv)
	if src == "" {
		t.Skip("run by TestCheckSurvivesRandomDamage in a child process")
	}
	good, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	hwm := int(newestMetaOf(t, src).hwm) * 4096
	path := src + ".damaged"
	rng := rand.New(rand.NewPCG(1, 2))
	caught := 0
	for range 150 {
		b := slices.Clone(good)
		for range 1 + rng.IntN(4) { // a few runs of garbage inside the pages in use
			at, n := 2*4096+rng.IntN(hwm-2*4096), 1+rng.IntN(64)
			for j := at; j < min(at+n, len(b)); j++ {
				b[j] = byte(rng.Uint32())
			}
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(path, Options{ReadOnly: true})
		if err == nil {
			err = s.Check()
			_ = s.Close()
		}
		if err != nil {
			caught++
		}
	}
	fmt.Printf("random damage: %d of 150 reported\n", caught)
}

// Random garbage in the pages of a store never kills the process that checks it.
func TestCheckSurvivesRandomDamage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	path := damagedStore(t, 3000, func(*testing.T, string, int64) {})
	cmd := exec.Command(os.Args[0], "-test.run=^TestCheckRandomDamageChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), randomDamageEnv+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "random damage:") {
		t.Fatalf("the child checking damaged stores died (%v):\n%.3000s", err, out)
	}
	t.Log(strings.TrimSpace(string(out[strings.Index(string(out), "random damage:"):])))
}
