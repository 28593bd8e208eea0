package boltstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// RestoreResult says what Restore did.
type RestoreResult struct {
	// FeedSeq is the last seq of the restored store's feed, as backed up.
	FeedSeq uint64
	// Restore is the gap Restore recorded, nil when the store it replaced had handed
	// out no seq past FeedSeq.
	Restore *readmodel.FeedRestore
	// Replaced is where the store that was at the path is kept ("" when there was
	// none).
	Replaced string
	// UID and GID own the restored file (-1 where the system has none).
	UID, GID int
	// Warnings are what the operator should know: a replaced store that could not be
	// read, a feed mark that was unreadable.
	Warnings []string
}

// ErrInUse is matched (errors.Is) by the error of Restore when a process holds the
// store at the destination (a running daemon).
var ErrInUse = errors.New("store in use")

// Restore puts a copy of the store file src at dst, ready for the daemon:
//
//   - src must open as a store of this schema version and pass Check;
//   - dst must not be held by another process (a running daemon): ErrInUse;
//   - the copy's feed sequence is moved past every seq the store it replaces may
//     have handed out (its last seq, and the feed mark next to it), and the restore
//     is recorded (readmodel.FeedRestore, By ByRestore), so that no seq is assigned
//     twice and a cursor handed out before gets 410 Gone with the restore point;
//   - it gets mode 0600 and the owner of the store it replaces, else of dst's
//     directory (the daemon's user); changing the owner needs root;
//   - it replaces dst atomically (rename); the store it replaces is kept next to it,
//     named in RestoreResult.Replaced; the feed mark is updated.
//
// A symlink at dst is followed: the file it names is replaced.
func Restore(src, dst string, now time.Time) (res RestoreResult, err error) {
	res.UID, res.GID = -1, -1
	target := dst
	if t, err := filepath.EvalSymlinks(dst); err == nil {
		target = t
	}
	if same, _ := SameFile(src, target); same {
		return res, fmt.Errorf("restore: %s is the store itself: give a backup file", src)
	}
	dir := filepath.Dir(target)
	dirInfo, err := os.Stat(dir)
	if err != nil {
		return res, fmt.Errorf("restore: store directory %s: %w (create it, or fix store.path)", dir, err)
	}

	// Hold the store being replaced, so that no daemon starts on it meanwhile.
	handedOut, owner, release, err := holdReplaced(target, &res)
	if err != nil {
		return res, err
	}
	defer release()
	if owner == nil {
		owner = ownerOf(dirInfo)
	}
	if owner != nil {
		res.UID, res.GID = owner.uid, owner.gid
		if os.Geteuid() != 0 && os.Geteuid() != owner.uid {
			return res, fmt.Errorf("restore: the store belongs to uid %d (the daemon's user): run restore as root or as that user", owner.uid)
		}
	}
	markPath := MarkPath(dst)
	markSeq, markGen, markKnown, markErr := readMark(markPath)
	if markErr != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%v: it is rewritten", markErr))
	}
	if markKnown {
		handedOut = max(handedOut, markSeq)
	}

	tmp, err := copyChecked(src, dir, filepath.Base(target), &res)
	if err != nil {
		return res, err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if res.Restore, err = recordRestore(tmp, handedOut, now); err != nil {
		return res, fmt.Errorf("restore: %w", err)
	}
	if err = finishFile(tmp, owner); err != nil {
		return res, fmt.Errorf("restore: %w", err)
	}
	if _, statErr := os.Stat(target); statErr == nil {
		res.Replaced = fmt.Sprintf("%s.replaced-%s", target, now.UTC().Format("20060102T150405Z"))
		if err = os.Link(target, res.Replaced); err != nil {
			return res, fmt.Errorf("restore: keep the store it replaces as %s: %w", res.Replaced, err)
		}
	}
	if err = os.Rename(tmp, target); err != nil {
		return res, fmt.Errorf("restore: %w", err)
	}
	if err = syncDir(dir); err != nil {
		return res, fmt.Errorf("restore: %w", err)
	}
	m := &feedMark{path: markPath, owner: owner, gen: markGen}
	if err = m.write(max(handedOut, res.FeedSeq)); err != nil {
		return res, fmt.Errorf("restore: the store is in place, but: %w", err)
	}
	return res, nil
}

// holdReplaced opens the store at path, if there is one, so that no daemon starts on
// it until release: read-only through bbolt (a shared lock; a daemon's exclusive lock
// refuses it), or, when it is too damaged to open, with an exclusive lock of its own.
// It returns the last seq the store's feed assigned (0 when unknown) and its owner.
func holdReplaced(path string, res *RestoreResult) (last uint64, owner *fileOwner, release func(), err error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil, func() {}, nil
	}
	if err != nil {
		return 0, nil, nil, fmt.Errorf("restore: %w", err)
	}
	owner = ownerOf(fi)
	inUse := fmt.Errorf("restore: %w: store %s is held by another process, a running slackpoll: stop it first (systemctl stop slackpoll), then restore", ErrInUse, path)
	s, err := Open(path, Options{ReadOnly: true, LockTimeout: 100 * time.Millisecond})
	if errors.Is(err, ErrLocked) {
		return 0, nil, nil, inUse
	}
	if err == nil {
		verr := s.View(func(tx readmodel.Tx) error { _, last, err = tx.ChangeBounds(); return err })
		if verr != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the store it replaces could not be read (%v): the seqs it handed out are known from its feed mark only", verr))
		}
		return last, owner, func() { _ = s.Close() }, nil
	}
	res.Warnings = append(res.Warnings, fmt.Sprintf("the store it replaces does not open (%v): the seqs it handed out are known from its feed mark only", err))
	f, locked, lerr := lockExclusive(path)
	switch {
	case lerr != nil:
		return 0, nil, nil, fmt.Errorf("restore: %w", lerr)
	case !locked:
		return 0, nil, nil, inUse
	}
	return 0, owner, func() { releaseFile(f) }, nil
}

// copyChecked checks the store at src (schema version, every page, every record) and
// copies it consistently (Tx.WriteTo) to a new temporary file in dir, mode 0600,
// synced; it sets res.FeedSeq.
func copyChecked(src, dir, base string, res *RestoreResult) (string, error) {
	s, err := Open(src, Options{ReadOnly: true, LockTimeout: 100 * time.Millisecond})
	if err != nil {
		return "", fmt.Errorf("restore: backup %w", err)
	}
	defer func() { _ = s.Close() }() // read-only
	if err := s.Check(); err != nil {
		return "", fmt.Errorf("restore: backup %s does not pass the store check, refusing it: %w", src, err)
	}
	var bad []string
	err = s.View(func(tx readmodel.Tx) error {
		bad = tx.Undecodable()
		_, res.FeedSeq, err = tx.ChangeBounds()
		return err
	})
	if err != nil {
		return "", fmt.Errorf("restore: backup %s: %w", src, err)
	}
	if len(bad) > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the backup holds %d undecodable record(s), skipped by every read as in any store (the daemon reads messages again from Slack): %v", len(bad), bad))
	}
	f, err := os.CreateTemp(dir, "."+base+".restore-*")
	if err != nil {
		return "", fmt.Errorf("restore: %w", err)
	}
	tmp := f.Name()
	fail := func(err error) (string, error) {
		_ = f.Close()
		_ = os.Remove(tmp)
		return "", fmt.Errorf("restore: copy to %s: %w", tmp, err)
	}
	if err := f.Chmod(0o600); err != nil {
		return fail(err)
	}
	if _, err := s.Backup(f); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	return tmp, nil
}

// recordRestore moves the feed of the store file at path past handedOut and records
// the restore (see skipFeed), with bbolt directly: the file is not at its store path
// yet, and has no feed mark of its own.
func recordRestore(path string, handedOut uint64, now time.Time) (*readmodel.FeedRestore, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, err
	}
	var r *readmodel.FeedRestore
	err = db.Update(func(btx *bolt.Tx) error {
		var err error
		r, err = skipFeed(btx, handedOut, now, ByRestore)
		return err
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return r, err
}

// finishFile gives the file at path mode 0600 and, when owner is set, that owner.
func finishFile(path string, owner *fileOwner) error {
	if err := os.Chmod(path, 0o600); err != nil {
		return err
	}
	if owner == nil {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if now := ownerOf(fi); now != nil && *now == *owner {
		return nil
	}
	return os.Chown(path, owner.uid, owner.gid)
}

// SameFile reports whether a and b are one existing file.
func SameFile(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}
