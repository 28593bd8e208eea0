//go:build !unix

package boltstore

import "os"

// releaseFile closes the store file bbolt opened, without bbolt.
func releaseFile(f *os.File) {
	if f != nil {
		_ = f.Close()
	}
}
