// Package boltstore implements readmodel.Store over bbolt (go.etcd.io/bbolt): one file,
// one writer at a time (an exclusive flock), any number of concurrent readers.
//
// # Layout
//
// Keys are byte strings; "|" below means concatenation, never a separator byte.
// tskey is readmodel.TS.Key(): 12 bytes, big-endian seconds (8) then microseconds (4),
// so byte order is time order ("999999999.000001" sorts before "1000000000.000000").
//
//	meta/                        "schema" → decimal schema version ("1"), written on creation
//	conv/                        conversation ID → conversation (JSON, format 1)
//	chan/<channel>/              one nested bucket per channel:
//	    m/                       tskey → message (binary, see codec_message.go); one record per
//	                             (channel, ts) for every message, replies included: a
//	                             thread_broadcast is one record, in the timeline and in its thread.
//	                             Its content only: put when its bytes change
//	    r/                       tskey → the message's read times (last_polled_at,
//	                             thread_synced_at, which is its tail time), for a message
//	                             read at least once: a read that finds the message as
//	                             stored writes only this. Messages of format 2 (earlier
//	                             releases) hold theirs inline and have none here
//	    t/                       parent tskey | reply tskey → "" (the thread index: Replies is a
//	                             prefix scan of 12 bytes)
//	    "n"                      counters: messages, threads, tracked (3 × uint64 big-endian)
//	    i/                       the tile index: tskey → uvarint count of the timeline records
//	                             from it to the next key (blocks of at most 1024), and "v" →
//	                             format(1) uvarint(messages counter) uvarint(sum of counts),
//	                             the stamp that says which records it describes (see
//	                             tiles.go); derived data, rebuilt on open when missing or
//	                             stale
//	tail/                        the tail index, one entry per tracked message (m.IsTracked()),
//	                             ordered by polled | channel | 0x00 | tskey, where polled is
//	                             RotatedAt() as big-endian unix nanoseconds (8 bytes), 0 for
//	                             never polled: a walk from First yields never-polled first,
//	                             then least recently polled, ties by channel then ts. Entries
//	                             with the same polled and channel are packed into chunks of
//	                             at most 64 (see tail_chunks.go):
//	                             polled | channel | 0x00 | tskey of the chunk's last entry →
//	                             format(1) { tskey(12) uvarint(len) exact ts }
//	users/                       user ID → user (JSON, format 1)
//	records/                     record key → Ref (binary: format(1) channel ts)
//	watched/                     channel | 0x00 | tskey → exact ts: the watched set (record-keyed
//	                             and tracked-on-request messages); added on open to stores
//	                             made before it, filled from records/
//	pacing/                      Slack method name → MethodState (JSON, format 1)
//	state/                       "identity" → Identity, "last_tick" → TickSummary (JSON, format 1)
//	changes/                     seq (8 bytes big-endian) → readmodel.Change (JSON, format 1): the
//	                             change feed; seqs come from the bucket's NextSequence and are
//	                             never reused; pruned from the front by retention
//	outbox/<webhook>/            seq → readmodel.OutboxRow (JSON, format 1): one nested bucket per
//	                             webhook; a row is deleted when delivered. Beside the rows:
//	    c/                       channel | 0x00 | seq → due(8) | enqueued(8), unix nanoseconds: the
//	                             pending rows by conversation (the first of each is its head)
//	    p/                       seq → 1: the parked rows
//	    "n"                      counts: pending, parked, dropped, last dropped seq (4 × uint64);
//	                             index and counts are added on open to stores made before them
//	                             (see outbox.go)
//
// The exact ts string lives in the message value (and the tail value), so a ts comes
// back byte-identical ("1718906000.000100"); the key only orders. Two ts strings with the
// same time ("1.5" and "1.500000") share one key; Slack always sends six fraction digits.
//
// Channel IDs must be non-empty and contain no 0x00 byte (the tail key separator, which
// also keeps shorter channel IDs sorting first: "C1" < "C12").
//
// # Values
//
// Every value starts with a format byte so the encoding can change without a schema
// bump. Messages use a compact hand-written binary encoding (uvarint-length strings,
// varints), because applying a 999-message history page must cost about the same as
// writing its bytes; the rarely written values (conversations, users, pacing, identity,
// last tick) use encoding/json behind the format byte. A value that cannot be decoded is
// an error naming its bucket and key, never a panic.
//
// # Counters
//
// Counts(channel) must be cheap at any size, so PutMessage and DeleteMessage keep
// per-channel counters. Within one Update they accumulate in memory and are written once,
// just before commit. Tail index changes are queued the same way and applied in key
// order before commit or the next TailOldest (see tail.go).
//
// # Cost
//
// PutMessage reads the old record's header (one seek, and one for its read times),
// writes the record when its content changed and its read times when they did (a Put
// each) and queues its tail change; a thread reply adds one thread index Put when its thread
// changes. Applying a 999-message page costs about 1.8× writing the same encoded bytes
// with raw bbolt Puts (BenchmarkApplyHistoryPage vs BenchmarkRawPutPage). TailOldest(25)
// costs the same with 10k or 1M tracked messages (BenchmarkTailOldest). TimelineTile reads
// the tile index's blocks, at most one block of records and the tile
// (BenchmarkTimelineTile).
package boltstore
