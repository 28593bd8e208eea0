//go:build unix

package boltstore

import (
	"errors"
	"os"
	"syscall"
)

// releaseFile unlocks and closes the store file bbolt opened, without bbolt. Closing
// alone would keep the lock: the memory map holds the open file, and with it the
// flock, until it is unmapped.
func releaseFile(f *os.File) {
	if f == nil {
		return
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) // best effort: the process may exit next
	_ = f.Close()
}

// ownerOf returns the uid and gid of the file fi describes.
func ownerOf(fi os.FileInfo) *fileOwner {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return &fileOwner{uid: int(st.Uid), gid: int(st.Gid)}
	}
	return nil
}

// lockExclusive opens the file at path and takes an exclusive lock on it without
// waiting, as bbolt locks a store it writes; locked is false (and f nil) when another
// process holds a lock on it. Release it with releaseFile.
func lockExclusive(path string) (f *os.File, locked bool, err error) {
	f, err = os.Open(path)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return f, true, nil
}
