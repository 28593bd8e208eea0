package installs

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"
)

// bucketName is the Registry's one bucket: team_id → sealed record.
var bucketName = []byte("installations")

// lockTimeout is how long OpenRegistry waits for the file lock of another process.
const lockTimeout = time.Second

// Registry is the set of installations, each record sealed under its team ID, in one
// bbolt file (mode 0600). Every write is one fsynced transaction. It is safe for
// concurrent use; one process holds the file at a time.
type Registry struct {
	db   *bolt.DB
	key  *Key
	path string
}

// DamagedError lists records that did not open: a wrong key, a damaged byte, or a
// record copied under another team ID. The other records are unaffected.
type DamagedError struct {
	TeamIDs []string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("installations: the records of %s do not open (%v): register them again (PUT) or restore the key", strings.Join(e.TeamIDs, ", "), errOpen)
}

// Unwrap gives errOpen, for errors.Is in this package's tests.
func (e *DamagedError) Unwrap() error { return errOpen }

// OpenRegistry opens or creates the registry file at path (mode 0600; an existing file
// is set to 0600). It waits at most 1 s for another process's lock and then fails
// saying so. key nil → ErrNoKey.
func OpenRegistry(path string, key *Key) (*Registry, error) {
	if key == nil {
		return nil, ErrNoKey
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout})
	if errors.Is(err, bberrors.ErrTimeout) {
		return nil, fmt.Errorf("installations %s: another slackpoll holds it (still locked after %v)", path, lockTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("installations %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("installations %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketName)
		return err
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("installations %s: %w", path, err)
	}
	return &Registry{db: db, key: key, path: path}, nil
}

// Close closes the file.
func (r *Registry) Close() error { return r.db.Close() }

// validTeamID accepts Slack's team and enterprise IDs: "T" or "E" and 1 to 20
// uppercase letters or digits.
func validTeamID(id string) bool {
	if len(id) < 2 || len(id) > 21 || (id[0] != 'T' && id[0] != 'E') {
		return false
	}
	for i := 1; i < len(id); i++ {
		if c := id[i]; (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Put stores in under in.TeamID, replacing any record of that team, even one that
// does not open (this is how a damaged record is registered again). The team ID must
// look like Slack's ("T…" or "E…") and the bot token must be set.
func (r *Registry) Put(in Installation) error {
	if err := checkRecord(in.TeamID, in); err != nil {
		return err
	}
	plain, err := encodeRecord(in)
	if err != nil {
		return fmt.Errorf("installations: %s: %w", in.TeamID, err)
	}
	return r.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketName).Put([]byte(in.TeamID), r.key.seal(in.TeamID, plain))
	})
}

// checkRecord validates a record about to be stored under teamID.
func checkRecord(teamID string, in Installation) error {
	switch {
	case !validTeamID(teamID):
		return fmt.Errorf("installations: team ID %q: want T or E and 1-20 uppercase letters or digits", teamID)
	case in.TeamID != teamID:
		return fmt.Errorf("installations: record of %s renamed to %q", teamID, in.TeamID)
	case in.BotToken == "":
		return fmt.Errorf("installations: %s: the bot token is empty", teamID)
	}
	return nil
}

// Update runs fn on the record of teamID (zero with found false when there is none)
// and stores what fn leaves, all in one fsynced transaction: a read-modify-write no
// other writer can interleave with. fn's error aborts it and is returned as is.
// A record that does not open is a *DamagedError (fn is not called).
func (r *Registry) Update(teamID string, fn func(in *Installation, found bool) error) error {
	if !validTeamID(teamID) {
		return fmt.Errorf("installations: team ID %q: want T or E and 1-20 uppercase letters or digits", teamID)
	}
	return r.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketName)
		var cur Installation
		found := false
		if v := b.Get([]byte(teamID)); v != nil {
			in, err := r.open(teamID, v)
			if err != nil {
				return err
			}
			cur, found = in, true
		}
		if err := fn(&cur, found); err != nil {
			return err
		}
		if err := checkRecord(teamID, cur); err != nil {
			return err
		}
		plain, err := encodeRecord(cur)
		if err != nil {
			return fmt.Errorf("installations: %s: %w", teamID, err)
		}
		return b.Put([]byte(teamID), r.key.seal(teamID, plain))
	})
}

// open unseals and decodes the record stored under teamID.
func (r *Registry) open(teamID string, sealed []byte) (Installation, error) {
	plain, err := r.key.open(teamID, sealed)
	if err != nil {
		return Installation{}, &DamagedError{TeamIDs: []string{teamID}}
	}
	in, err := decodeRecord(plain)
	if err != nil || in.TeamID != teamID {
		return Installation{}, &DamagedError{TeamIDs: []string{teamID}}
	}
	return in, nil
}

// Get returns the record of teamID; found is false when there is none. A record that
// does not open is a *DamagedError naming the team.
func (r *Registry) Get(teamID string) (in Installation, found bool, err error) {
	err = r.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketName).Get([]byte(teamID))
		if v == nil {
			return nil
		}
		in, err = r.open(teamID, v)
		found = err == nil
		return err
	})
	return in, found, err
}

// List returns every record that opens, sorted by team ID (bbolt's key order). When
// some do not, it returns the others and a *DamagedError naming those teams.
func (r *Registry) List() ([]Installation, error) {
	var out []Installation
	var bad []string
	err := r.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketName).ForEach(func(k, v []byte) error {
			in, err := r.open(string(k), v)
			if err != nil {
				bad = append(bad, string(k))
				return nil
			}
			out = append(out, in)
			return nil
		})
	})
	if err != nil {
		return out, fmt.Errorf("installations %s: %w", r.path, err)
	}
	if len(bad) > 0 {
		return out, &DamagedError{TeamIDs: bad}
	}
	return out, nil
}

// Delete removes the record of teamID; deleting a missing record is not an error.
func (r *Registry) Delete(teamID string) error {
	return r.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketName).Delete([]byte(teamID))
	})
}
