package boltstore

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// Backup writes a consistent copy of the whole store file to w and returns the bytes
// written. It runs in one read transaction (bbolt's Tx.WriteTo), so the daemon keeps
// writing meanwhile and the copy is the store as of the transaction's start: a valid
// store file that Open accepts. A long copy delays the growth of the file (bbolt
// cannot remap it while a read transaction is open), not the writes that fit.
func (s *Store) Backup(w io.Writer) (int64, error) {
	var n int64
	err := s.db.View(func(btx *bolt.Tx) error {
		var err error
		n, err = btx.WriteTo(w)
		return err
	})
	return n, err
}

// WriteFileAtomic writes what fill writes to path, never leaving a partial file
// there: it fills a temporary file in path's directory (mode 0600: a store holds
// message texts), syncs it, and renames it onto path. On error the temporary file is
// removed and path is untouched.
func WriteFileAtomic(path string, fill func(io.Writer) (int64, error)) (n int64, err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("backup %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close() // already failed; the file is removed
			_ = os.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o600); err != nil {
		return 0, fmt.Errorf("backup %s: %w", path, err)
	}
	if n, err = fill(f); err != nil {
		return n, fmt.Errorf("backup %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return n, fmt.Errorf("backup %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return n, fmt.Errorf("backup %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return n, fmt.Errorf("backup %s: %w", path, err)
	}
	return n, nil
}
