package boltstore

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"

	bolt "go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// Bucket and key names (see doc.go).
var (
	bMeta    = []byte("meta")
	bConv    = []byte("conv")
	bChan    = []byte("chan")
	bTail    = []byte("tail")
	bUsers   = []byte("users")
	bRecords = []byte("records")
	bPacing  = []byte("pacing")
	bState   = []byte("state")

	bMsgs    = []byte("m")
	bThreads = []byte("t")
	bReads   = []byte("r")
	kCounts  = []byte("n")

	kSchema   = []byte("schema")
	kIdentity = []byte("identity")
	kLastTick = []byte("last_tick")
)

var _ readmodel.Tx = (*tx)(nil)

// tx is one readmodel.Tx over a bbolt transaction. It caches the nested buckets of the
// channels it touched and buffers counter changes until commit; its scratch memory is
// reused from one write transaction to the next.
type tx struct {
	btx   *bolt.Tx
	chans map[string]*chanBuckets
	// deltas holds counter changes per channel not yet written (see flushCounts).
	deltas map[string]*counts
	// lastDelta caches deltas[lastDeltaChan]: a page writes one channel.
	lastDeltaChan string
	lastDelta     *counts
	// bad is the store's set of undecodable records.
	bad *badRecords
	// stale is the store's set of tile indexes to rebuild (nil: none kept).
	stale *staleTiles
	*scratch
}

// scratch is the memory of a write transaction that outlives it, for the next one.
// The scratches are pooled by the process, not kept per Store: a daemon of many
// workspaces holds each store open while it idles between ticks, and a scratch keeps
// what its largest transaction needed (up to the arena's 4 MiB, and the tail queue's
// arrays), which 1,000 idle stores would keep 1,000 times.
type scratch struct {
	// arena holds the values handed to Put, which bbolt keeps until commit.
	arena arena
	// tail holds the queued tail index changes (see flushTail); chunkBuf, oldChunkKey,
	// items and merged are flushTail's working memory.
	tail                  tailQueue
	chunkBuf, oldChunkKey []byte
	items, merged         []tailItem
	// kbuf, key, parent and oldParent are scratch for keys; bbolt copies keys on Put.
	kbuf                   []byte
	key, parent, oldParent [tsKeyLen]byte
	// tiles are the queued tile index changes (see flushTiles); blocks is the
	// lookup's working memory.
	tiles  []tileChange
	blocks []block
	// written counts the message values this transaction put (content changed).
	written int
}

// scratches holds the scratches between write transactions, for every store.
var scratches = sync.Pool{New: func() any { return new(scratch) }}

// reset readies s for the next transaction, after the last one ended.
func (s *scratch) reset() {
	s.arena.reset()
	clear(s.tail.out)
	s.tail.puts, s.tail.dels, s.tail.seq = s.tail.puts[:0], s.tail.dels[:0], 0
	clear(s.items)
	clear(s.merged)
	clear(s.tiles)
	s.tiles = s.tiles[:0]
	s.written = 0
}

// chanBuckets are the nested buckets of one channel, valid for the transaction.
type chanBuckets struct {
	root, msgs, threads *bolt.Bucket
	// reads holds the read times of format-3 messages; nil in a read transaction
	// over a store made before it (no message has any there).
	reads *bolt.Bucket
	// msgCursor serves get, readCursor readTimes: one cursor each, repositioned by
	// each Seek, instead of the new cursor (and its stack allocations) Bucket.Get
	// makes per call.
	msgCursor, readCursor, threadsCursor *bolt.Cursor
	// readLast is the key readCursor stands on (nil: past the end, or not yet used).
	readLast []byte
}

// readTimes returns the read-times value under k (nil: none). Walks in key order,
// the common case, step the cursor instead of seeking.
func (cb *chanBuckets) readTimes(k []byte) []byte {
	if cb.reads == nil {
		return nil
	}
	if cb.readCursor == nil {
		cb.readCursor = cb.reads.Cursor()
	}
	// After a hit below k, the next record is most often k's own.
	if last := cb.readLast; last != nil && bytes.Compare(last, k) < 0 {
		ck, v := cb.readCursor.Next()
		if c := bytes.Compare(ck, k); ck != nil && c >= 0 {
			cb.readLast = ck
			if c == 0 {
				return v
			}
			return nil
		}
	}
	ck, v := cb.readCursor.Seek(k)
	cb.readLast = ck
	if !bytes.Equal(ck, k) {
		return nil
	}
	return v
}

// threadCursor returns a cursor over the thread index, one per transaction in a read
// transaction (an export asks for the replies of every message); a write transaction
// gets a new one each time, since its Puts move the pages under an old one.
func (cb *chanBuckets) threadCursor() *bolt.Cursor {
	if cb.threads.Writable() {
		return cb.threads.Cursor()
	}
	if cb.threadsCursor == nil {
		cb.threadsCursor = cb.threads.Cursor()
	}
	return cb.threadsCursor
}

// decode decodes the message value v under k with its read times.
func (cb *chanBuckets) decode(channel string, k, v []byte) (readmodel.Message, error) {
	var rt []byte
	if len(v) > 0 && v[0] == formatMessage {
		rt = cb.readTimes(k)
	}
	return decodeMessage(channel, v, rt)
}

// header reads the header of the message value v under k.
func (cb *chanBuckets) header(k, v []byte) (header, error) {
	var rt []byte
	if len(v) > 0 && v[0] == formatMessage {
		rt = cb.readTimes(k)
	}
	return readHeader(v, rt)
}

// get returns the message value under k, like msgs.Get(k).
func (cb *chanBuckets) get(k []byte) []byte {
	if cb.msgCursor == nil {
		cb.msgCursor = cb.msgs.Cursor()
	}
	ck, v := cb.msgCursor.Seek(k)
	if !bytes.Equal(ck, k) {
		return nil
	}
	return v
}

// newTx wraps btx. A write transaction gets the store's scratch; a read transaction,
// which writes nothing, a fresh one.
func newTx(btx *bolt.Tx, s *scratch, bad *badRecords) *tx {
	if s == nil {
		s = new(scratch)
	}
	return &tx{btx: btx, scratch: s, bad: bad}
}

// errReadOnly is returned by write methods on a View transaction.
var errReadOnly = errors.New("store: write in a read-only transaction")

func (t *tx) writable() error {
	if !t.btx.Writable() {
		return errReadOnly
	}
	return nil
}

// bucket returns a top-level bucket; a missing one means the file lost its layout.
func (t *tx) bucket(name []byte) (*bolt.Bucket, error) {
	b := t.btx.Bucket(name)
	if b == nil {
		return nil, fmt.Errorf("store: bucket %s missing: %w", name, bberrors.ErrBucketNotFound)
	}
	return b, nil
}

// channel returns the nested buckets of a channel, creating them when create is set
// (write transactions only). It returns nil, nil for a channel with no bucket yet.
func (t *tx) channel(id string, create bool) (*chanBuckets, error) {
	if cb, ok := t.chans[id]; ok {
		return cb, nil
	}
	if err := checkChannel(id); err != nil {
		return nil, err
	}
	all, err := t.bucket(bChan)
	if err != nil {
		return nil, err
	}
	root := all.Bucket([]byte(id))
	if root == nil {
		if !create {
			return nil, nil
		}
		if root, err = all.CreateBucket([]byte(id)); err != nil {
			return nil, fmt.Errorf("store: create channel %s: %w", id, err)
		}
	}
	cb := &chanBuckets{root: root}
	if cb.msgs, err = nestedBucket(root, bMsgs, create); err != nil {
		return nil, fmt.Errorf("store: channel %s: %w", id, err)
	}
	if cb.threads, err = nestedBucket(root, bThreads, create); err != nil {
		return nil, fmt.Errorf("store: channel %s: %w", id, err)
	}
	if cb.reads = root.Bucket(bReads); cb.reads == nil && create {
		if cb.reads, err = root.CreateBucket(bReads); err != nil {
			return nil, fmt.Errorf("store: channel %s: %w", id, err)
		}
	}
	if t.chans == nil {
		t.chans = make(map[string]*chanBuckets)
	}
	t.chans[id] = cb
	return cb, nil
}

func nestedBucket(root *bolt.Bucket, name []byte, create bool) (*bolt.Bucket, error) {
	if create {
		return root.CreateBucketIfNotExists(name)
	}
	if b := root.Bucket(name); b != nil {
		return b, nil
	}
	return nil, fmt.Errorf("bucket %s missing: %w", name, bberrors.ErrBucketNotFound)
}

// checkChannel rejects IDs that cannot be a key: empty, containing the tail-key
// separator 0x00, or absurdly long.
func checkChannel(id string) error {
	switch {
	case id == "":
		return errors.New("store: empty channel ID")
	case strings.IndexByte(id, 0) >= 0:
		return fmt.Errorf("store: channel ID %q contains a NUL byte", id)
	case len(id) > 255:
		return fmt.Errorf("store: channel ID %.20q… is longer than 255 bytes", id)
	}
	return nil
}

// checkTS rejects a ts that has no sort key.
func checkTS(what string, ts readmodel.TS) error {
	if !ts.Valid() {
		return fmt.Errorf("store: invalid %s %q: want <seconds>.<microseconds>", what, ts)
	}
	return nil
}

// stopped maps readmodel.ErrStopIteration, the callback's way to end a walk, to nil.
func stopped(err error) error {
	if errors.Is(err, readmodel.ErrStopIteration) {
		return nil
	}
	return err
}
