//go:build unix

package boltstore

import (
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
