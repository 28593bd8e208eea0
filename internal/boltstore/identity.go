package boltstore

import (
	"errors"
	"fmt"
	"os"
)

// ErrReplaced is matched (errors.Is) by the error of View and Update when the file at
// the store's path is no longer the one the Store opened: deleted, moved away or
// replaced. Writing on would go into a file no one will open again, while a second
// daemon may already run on the new one.
var ErrReplaced = errors.New("store file deleted or replaced")

// checkIdentity fails with ErrReplaced unless path still names the file that was
// opened (same device and inode). One stat per transaction.
func (s *Store) checkIdentity() error {
	if s.opened == nil {
		return nil
	}
	now, err := os.Stat(s.path)
	if err == nil && os.SameFile(s.opened, now) {
		return nil
	}
	what := "replaced by another file"
	if err != nil {
		what = "deleted or moved away"
	}
	return fmt.Errorf("%w: store %s was %s while slackpoll had it open: stopping so that nothing is written into a file no one will open again (restart to use the file now at that path)",
		ErrReplaced, s.path, what)
}
