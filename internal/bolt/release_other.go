//go:build !unix

package boltstore

import "os"

// releaseFile closes the store file bbolt opened, without bbolt.
func releaseFile(f *os.File) {
	if f != nil {
		_ = f.Close()
	}
}

// ownerOf returns nil: this system has no uid and gid to copy.
func ownerOf(os.FileInfo) *fileOwner { return nil }

// lockExclusive opens the file at path; this system's file locks are not checked.
func lockExclusive(path string) (*os.File, bool, error) {
	f, err := os.Open(path)
	return f, err == nil, err
}
