package boltstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// appendChanges appends n changes of channel C1 and returns their seqs.
func appendChanges(t *testing.T, s *Store, n int) []uint64 {
	t.Helper()
	var seqs []uint64
	update(t, s, func(tx readmodel.Tx) error {
		for range n {
			c := readmodel.Change{ID: readmodel.NewEventID(), Kind: readmodel.ChangeMessagePosted, Channel: "C1"}
			if err := tx.AppendChange(&c); err != nil {
				return err
			}
			seqs = append(seqs, c.Seq)
		}
		return nil
	})
	return seqs
}

// feedOf returns the seqs of the stored changes and the restores of s.
func feedOf(t *testing.T, s *Store) (seqs []uint64, restores []readmodel.FeedRestore) {
	t.Helper()
	view(t, s, func(tx readmodel.Tx) error {
		var err error
		if restores, err = tx.FeedRestores(); err != nil {
			return err
		}
		return tx.Changes(0, func(c readmodel.Change) error { seqs = append(seqs, c.Seq); return nil })
	})
	return seqs, restores
}

func openAt(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// backupBytes returns a consistent copy of s.
func backupBytes(t *testing.T, s *Store) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := s.Backup(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A backup copied over the store file (cp, install) brings back an older feed. The
// daemon's next open finds it older than the feed mark next to it: it records the
// restore and moves the sequence past every seq handed out, so new changes never
// reuse one.
func TestPlainCopyOfAnOlderStoreNeverReissuesSeqs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slackpoll.db")
	s := openAt(t, path)
	appendChanges(t, s, 5)
	backup := backupBytes(t, s)
	handedOut := appendChanges(t, s, 5) // seqs 6..10, read by a consumer
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, backup, 0o600); err != nil { // cp backup.db slackpoll.db
		t.Fatal(err)
	}

	s = openAt(t, path)
	defer s.Close()
	r := s.Restored()
	if r == nil || r.Seq != 5 || r.SkippedTo != 10 || r.By != ByOpen {
		t.Fatalf("Restored() = %+v, want seq 5, skipped to 10, by open", r)
	}
	after := appendChanges(t, s, 3)
	for _, seq := range after {
		if slices.Contains(handedOut, seq) || seq <= 10 {
			t.Errorf("a change written after the restore got seq %d, handed out before it", seq)
		}
	}
	seqs, restores := feedOf(t, s)
	if want := []uint64{1, 2, 3, 4, 5, 11, 12, 13}; !slices.Equal(seqs, want) {
		t.Errorf("feed = %v, want %v", seqs, want)
	}
	if len(restores) != 1 || restores[0] != *r {
		t.Errorf("FeedRestores = %+v, want the one Open found", restores)
	}
}

// The feed mark runs ahead of the commits while the store is open (one synced write
// per markAhead changes), and comes back to the last seq at Close: a clean restart
// skips nothing.
func TestFeedMarkRunsAheadAndComesBackAtClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slackpoll.db")
	s := openAt(t, path)
	appendChanges(t, s, 3)
	mark := func() uint64 {
		seq, _, known, err := readMark(MarkPath(path))
		if err != nil || !known {
			t.Fatalf("feed mark: %v (known %v)", err, known)
		}
		return seq
	}
	if got := mark(); got != 3+markAhead {
		t.Errorf("mark while open = %d, want %d", got, 3+markAhead)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := mark(); got != 3 {
		t.Errorf("mark after Close = %d, want 3", got)
	}
	s = openAt(t, path)
	defer s.Close()
	if r := s.Restored(); r != nil {
		t.Errorf("a clean restart found a restore: %+v", r)
	}
	if got := appendChanges(t, s, 1); got[0] != 4 {
		t.Errorf("next seq after a clean restart = %d, want 4", got[0])
	}
}

// A torn write of the mark leaves the previous slot, which still holds: the mark
// is two slots, written in turn.
func TestFeedMarkSurvivesATornSlot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.feedmark")
	m := &feedMark{path: path, noSync: true}
	for _, seq := range []uint64{100, 200} {
		if err := m.write(seq); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Tear the newer slot (generation 2, slot 0).
	copy(b[10:20], "##########")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	seq, gen, known, err := readMark(path)
	if err != nil || !known || seq != 100 || gen != 1 {
		t.Fatalf("readMark = %d gen %d known %v %v, want 100 from the older slot", seq, gen, known, err)
	}
	if err := os.WriteFile(path, []byte("not a mark\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := readMark(path); err == nil {
		t.Error("a file that is no mark read without error")
	}
}

// restoreFixture writes a store at dst with 10 changes and a backup of it taken at
// 5 at src.
func restoreFixture(t *testing.T) (src, dst string) {
	t.Helper()
	dir := t.TempDir()
	src, dst = filepath.Join(dir, "backup.db"), filepath.Join(dir, "slackpoll.db")
	s := openAt(t, dst)
	appendChanges(t, s, 5)
	if err := os.WriteFile(src, backupBytes(t, s), 0o644); err != nil {
		t.Fatal(err)
	}
	appendChanges(t, s, 5)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return src, dst
}

// Restore puts the backup in place with its feed moved past the seqs the replaced
// store handed out, the restore recorded, mode 0600, and the replaced store kept.
func TestRestoreSkipsTheSeqsHandedOutAndKeepsTheReplacedStore(t *testing.T) {
	src, dst := restoreFixture(t)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	res, err := Restore(src, dst, at)
	if err != nil {
		t.Fatal(err)
	}
	if res.FeedSeq != 5 || res.Restore == nil || *res.Restore != (readmodel.FeedRestore{Seq: 5, SkippedTo: 10, At: at, By: ByRestore}) {
		t.Fatalf("result = %+v (restore %+v), want feed 5, skipped to 10", res, res.Restore)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("restored file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	if res.Replaced == "" {
		t.Fatal("the replaced store was not kept")
	}
	old := openAt(t, res.Replaced)
	if seqs, _ := feedOf(t, old); len(seqs) != 10 {
		t.Errorf("the kept store holds %d changes, want 10", len(seqs))
	}
	old.Close()

	s := openAt(t, dst)
	defer s.Close()
	if r := s.Restored(); r != nil {
		t.Errorf("the daemon's open found another restore: %+v", r)
	}
	if got := appendChanges(t, s, 1); got[0] != 11 {
		t.Errorf("first seq after the restore = %d, want 11", got[0])
	}
	if _, restores := feedOf(t, s); len(restores) != 1 || restores[0].By != ByRestore {
		t.Errorf("FeedRestores = %+v, want the one restore", restores)
	}
}

// A store a daemon holds is not replaced under it.
func TestRestoreRefusesAStoreInUse(t *testing.T) {
	src, dst := restoreFixture(t)
	s := openAt(t, dst)
	defer s.Close()
	_, err := Restore(src, dst, time.Now())
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("Restore under a running daemon: %v, want ErrInUse", err)
	}
	if seqs, _ := feedOf(t, s); len(seqs) != 10 {
		t.Errorf("the store in use was changed: %d changes, want 10", len(seqs))
	}
}

// Restore run by root gives the file (and the feed mark) to the owner of the store
// it replaces, or of the store's directory when there is none: the daemon's user.
func TestRestoreGivesTheStoreToTheDaemonsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's owner needs root")
	}
	src, _ := restoreFixture(t)
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	const uid, gid = 65534, 65534 // nobody
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "slackpoll.db")
	res, err := Restore(src, dst, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dst, MarkPath(dst)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if o := ownerOf(fi); o == nil || o.uid != uid || o.gid != gid || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: owner %+v mode %v, want %d:%d 0600", p, o, fi.Mode().Perm(), uid, gid)
		}
	}
	if res.UID != uid || res.Replaced != "" {
		t.Errorf("result = %+v", res)
	}
}
