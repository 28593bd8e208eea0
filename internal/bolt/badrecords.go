package boltstore

import (
	"fmt"
	"slices"
	"sync"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// badRecords are the stored records a read found undecodable (a flipped bit: bbolt
// checksums only its meta pages), by record name. Reads skip them, as absent, so that
// one bad record stops neither the daemon nor an export; they are reported through
// Tx.Undecodable, and forgotten once a committed write replaces them.
type badRecords struct {
	mu sync.Mutex
	m  map[string]string // record name → decode error
}

func (b *badRecords) add(name string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]string{}
	}
	b.m[name] = err.Error()
}

func (b *badRecords) heal(names []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, n := range names {
		delete(b.m, n)
	}
}

func (b *badRecords) list() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.m))
	for n, e := range b.m {
		out = append(out, n+": "+e)
	}
	slices.Sort(out)
	return out
}

func messageName(channel string, k []byte) string {
	return fmt.Sprintf("message %s/%s", channel, keyString(k))
}

func jsonName(bucket, key []byte) string {
	return fmt.Sprintf("%s/%s", bucket, key)
}

// Undecodable implements readmodel.Tx.
func (t *tx) Undecodable() []string { return t.bad.list() }

var _ interface{ Undecodable() []string } = readmodel.Tx(nil)
