package boltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// badRecords are the stored records reads found undecodable (a flipped bit: bbolt
// checksums only its meta pages), by record name. Reads skip them, as absent, so that
// one bad record stops neither the daemon nor an export; Tx.Undecodable reports them.
// Each entry knows how to read its record again, so the report is exact for the
// transaction that asks: a record replaced since (a healed message) drops out.
type badRecords struct {
	mu sync.Mutex
	m  map[string]badRecord
	// damaged holds the derived indexes (indexTail, indexWatched) a read found
	// damaged, for the next write to rebuild; rebuilds counts each index's rebuilds.
	damaged  map[string]bool
	rebuilds map[string]int
}

// damage marks index for rebuilding and returns its rebuild count.
func (b *badRecords) damage(index string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.damaged == nil {
		b.damaged = map[string]bool{}
	}
	b.damaged[index] = true
	return b.rebuilds[index]
}

// generation returns how many times index was rebuilt.
func (b *badRecords) generation(index string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rebuilds[index]
}

// toRebuild returns the indexes marked damaged, sorted.
func (b *badRecords) toRebuild() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.damaged))
	for index := range b.damaged {
		out = append(out, index)
	}
	slices.Sort(out)
	return out
}

// rebuilt clears the damaged marks of indexes, after the transaction that rebuilt
// them committed.
func (b *badRecords) rebuilt(indexes []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rebuilds == nil {
		b.rebuilds = map[string]int{}
	}
	for _, index := range indexes {
		delete(b.damaged, index)
		b.rebuilds[index]++
	}
}

type badRecord struct {
	err string
	// bad reports whether the record is still undecodable as t sees it.
	bad func(t *tx) bool
}

func (b *badRecords) add(name string, err error, bad func(t *tx) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]badRecord{}
	}
	b.m[name] = badRecord{err: err.Error(), bad: bad}
}

// list returns "name: error" of the records still undecodable in t, sorted, and
// forgets the others.
func (b *badRecords) list(t *tx) []string {
	b.mu.Lock()
	all := make(map[string]badRecord, len(b.m))
	for n, r := range b.m {
		all[n] = r
	}
	b.mu.Unlock()
	out := make([]string, 0, len(all))
	for n, r := range all {
		if r.bad(t) {
			out = append(out, n+": "+r.err)
			continue
		}
		b.mu.Lock()
		delete(b.m, n)
		b.mu.Unlock()
	}
	slices.Sort(out)
	return out
}

// addMessage records the undecodable message value of (channel, k).
func (t *tx) addMessage(channel string, k []byte, err error) {
	key := bytes.Clone(k)
	t.bad.add(fmt.Sprintf("message %s/%s", channel, keyString(k)), err, func(t *tx) bool {
		cb, err := t.channel(channel, false)
		if err != nil || cb == nil {
			return false
		}
		v := cb.msgs.Get(key)
		if v == nil {
			return false
		}
		_, err = decodeMessage(channel, v)
		return err != nil
	})
}

// addJSON records the undecodable JSON value under key in bucket, which decodes into
// a value of out's type.
func (t *tx) addJSON(bucket, k []byte, out any, err error) {
	key := bytes.Clone(k)
	typ := reflect.TypeOf(out).Elem()
	t.bad.add(fmt.Sprintf("%s/%s", bucket, key), err, func(t *tx) bool {
		b := t.btx.Bucket(bucket)
		if b == nil {
			return false
		}
		v := b.Get(key)
		return v != nil && decodeJSON(v, reflect.New(typ).Interface()) != nil
	})
}

// addChange records the undecodable change under key k of the feed.
func (t *tx) addChange(k []byte, err error) {
	key := bytes.Clone(k)
	t.bad.add("change "+seqName(key), err, func(t *tx) bool {
		b := t.btx.Bucket(bChanges)
		if b == nil {
			return false
		}
		v := b.Get(key)
		return v != nil && decodeJSON(v, &readmodel.Change{}) != nil
	})
}

// addOutbox records the undecodable outbox row of webhook under key k.
func (t *tx) addOutbox(webhook string, k []byte, err error) {
	key := bytes.Clone(k)
	t.bad.add("outbox "+webhook+"/"+seqName(key), err, func(t *tx) bool {
		root := t.btx.Bucket(bOutbox)
		if root == nil || root.Bucket([]byte(webhook)) == nil {
			return false
		}
		v := root.Bucket([]byte(webhook)).Get(key)
		return v != nil && decodeJSON(v, &readmodel.OutboxRow{}) != nil
	})
}

// seqName shows a feed or outbox key: its seq, or its bytes when it is not 8 long.
func seqName(k []byte) string {
	if len(k) != 8 {
		return fmt.Sprintf("%x", k)
	}
	return fmt.Sprint(binary.BigEndian.Uint64(k))
}

// Undecodable implements readmodel.Tx.
func (t *tx) Undecodable() []string { return t.bad.list(t) }
