package boltstore

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// The feed mark is a small file next to the store, <store>.feedmark, that remembers
// the highest seq the store at that path may have handed out. It lives outside the
// store file on purpose: a store put back from a backup — by `slackpoll restore`, or
// by copying the file — carries the older feed of the backup and cannot know, by
// itself, which seqs came after. The mark can.
//
// Invariant: no change with a seq above the mark was ever committed at this path.
// A write transaction that assigns a seq above it first moves the mark markAhead
// beyond (synced), so the mark is written once per markAhead changes, not per
// commit; a clean Close brings it back down to the last seq committed. Open (for
// writing) compares the two: a store whose feed ends below the mark is older than
// what was handed out, and its sequence is moved up to the mark so that no seq is
// ever assigned twice (see catchUpFeed).
//
// The file holds two fixed-width slots, written in turn, each with a generation and
// a checksum; the valid slot of the highest generation wins, so a write torn by a
// crash leaves the previous value, which still holds the invariant (the commit that
// needed the new value had not happened). It is plain text:
//
//	slackpoll-feedmark v1 <generation, 16 hex> <seq, 20 decimal> <crc32, 8 hex>
const (
	markSuffix = ".feedmark"
	markAhead  = 1000
	markPrefix = "slackpoll-feedmark v1 "
	markSlot   = len(markPrefix) + 16 + 1 + 20 + 1 + 8 + 1
)

// MarkPath returns the path of the feed mark of the store at storePath.
func MarkPath(storePath string) string { return storePath + markSuffix }

// feedMark is the feed mark of one store path, as its writer holds it.
type feedMark struct {
	path   string
	noSync bool
	// known is set once a valid mark was read or written; seq and gen are its value
	// and generation.
	known    bool
	seq, gen uint64
	// owner is the store file's, given to a mark file that root creates, so that a
	// daemon running as the store's owner can write it.
	owner *fileOwner
}

// fileOwner is a uid and gid.
type fileOwner struct{ uid, gid int }

func markLine(gen, seq uint64) string {
	body := fmt.Sprintf("%s%016x %020d ", markPrefix, gen, seq)
	return fmt.Sprintf("%s%08x\n", body, crc32.ChecksumIEEE([]byte(body)))
}

// parseMarkLine returns the generation and seq of one slot; ok is false for a slot
// that is empty, torn or not a mark.
func parseMarkLine(b []byte) (gen, seq uint64, ok bool) {
	if len(b) != markSlot || !strings.HasPrefix(string(b), markPrefix) || b[markSlot-1] != '\n' {
		return 0, 0, false
	}
	fields := strings.Fields(string(b[len(markPrefix):]))
	if len(fields) != 3 {
		return 0, 0, false
	}
	body := string(b[:markSlot-9])
	sum, err := strconv.ParseUint(fields[2], 16, 32)
	if err != nil || uint32(sum) != crc32.ChecksumIEEE([]byte(body)) {
		return 0, 0, false
	}
	gen, err1 := strconv.ParseUint(fields[0], 16, 64)
	seq, err2 := strconv.ParseUint(fields[1], 10, 64)
	return gen, seq, err1 == nil && err2 == nil
}

// readMark reads the feed mark at path: known is false when there is no mark file.
// A file with no valid slot is an error that says what to do.
func readMark(path string) (seq, gen uint64, known bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("feed mark %s: %w", path, err)
	}
	for i := 0; i+markSlot <= len(b) && i < 2*markSlot; i += markSlot {
		if g, s, ok := parseMarkLine(b[i : i+markSlot]); ok && (!known || g > gen) {
			seq, gen, known = s, g, true
		}
	}
	if !known {
		return 0, 0, false, fmt.Errorf("feed mark %s is unreadable: it is not a file slackpoll wrote, or was damaged; move it aside to go on (a store restored from an older copy before that goes unnoticed by the change feed: consumers must then resynchronise)", path)
	}
	return seq, gen, true, nil
}

// load reads the mark from its file.
func (m *feedMark) load() error {
	seq, gen, known, err := readMark(m.path)
	if err != nil {
		return err
	}
	m.seq, m.gen, m.known = seq, gen, known
	return nil
}

// write sets the mark to seq: it writes the slot after the current one and syncs
// it (and the directory, when it created the file) unless noSync.
func (m *feedMark) write(seq uint64) error {
	_, statErr := os.Stat(m.path)
	created := errors.Is(statErr, fs.ErrNotExist)
	f, err := os.OpenFile(m.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("feed mark %s: %w (slackpoll must be able to write next to its store)", m.path, err)
	}
	defer func() { _ = f.Close() }() // synced below; a close error after a sync loses nothing
	if created && m.owner != nil && os.Geteuid() == 0 {
		if err := f.Chown(m.owner.uid, m.owner.gid); err != nil {
			return fmt.Errorf("feed mark %s: %w", m.path, err)
		}
	}
	gen := m.gen + 1
	if _, err := f.WriteAt([]byte(markLine(gen, seq)), int64(gen%2)*int64(markSlot)); err != nil {
		return fmt.Errorf("feed mark %s: %w", m.path, err)
	}
	if !m.noSync {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("feed mark %s: %w", m.path, err)
		}
		if created {
			if err := syncDir(filepath.Dir(m.path)); err != nil {
				return fmt.Errorf("feed mark %s: %w", m.path, err)
			}
		}
	}
	m.seq, m.gen, m.known = seq, gen, true
	return nil
}

// syncDir syncs a directory, so that a file created or renamed in it survives a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }() // read-only
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err // some file systems cannot sync a directory: nothing more to do there
	}
	return nil
}

// Remove deletes the store file at path and the files kept beside it (the feed
// mark): what purging a workspace removes. The store must be closed. A file already
// gone is not an error.
func Remove(path string) error {
	for _, p := range []string{path, path + markSuffix} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}
