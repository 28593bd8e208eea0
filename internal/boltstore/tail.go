package boltstore

import (
	"bytes"
	"slices"

	"github.com/slackpoll/slackpoll/internal/readmodel"
)

// Tail index changes are queued by PutMessage and DeleteMessage and applied once, in
// key order, before the next tail read and before commit (see tail_chunks.go for how
// they are stored). A page's keys already arrive sorted (one channel, one poll time, ts
// descending), so applying needs no sort in the common case.

// tailOp is one queued change: put key → val, or delete key (val nil). seq is its
// position in the queue: for a key changed twice, the later change wins.
type tailOp struct {
	key, val []byte
	seq      int
}

// tailQueue holds the queued puts and deletes separately, so each list stays sorted
// when the pages are.
type tailQueue struct {
	puts, dels []tailOp
	seq        int
	// out is pendingTail's result, kept for reuse.
	out []tailOp
}

func (q *tailQueue) add(list *[]tailOp, key, val []byte) {
	*list = append(*list, tailOp{key: key, val: val, seq: q.seq})
	q.seq++
}

// tailKeyInArena builds a tail key in the arena: queued keys must outlive the call.
func (t *tx) tailKeyInArena(polled uint64, channel string, tsKey []byte) []byte {
	k := t.arena.alloc(8 + len(channel) + 1 + tsKeyLen)
	k = appendTailKey(k, polled, channel, tsKey)
	t.arena.commit(k)
	return k
}

// tailPut queues the tail entry of a tracked message; the value is its exact ts.
func (t *tx) tailPut(d *counts, polled uint64, channel string, tsKey []byte, ts readmodel.TS) {
	k := t.tailKeyInArena(polled, channel, tsKey)
	v := t.arena.alloc(len(ts))
	v = append(v, ts...)
	t.arena.commit(v)
	t.tail.add(&t.tail.puts, k, v)
	d.tracked++
}

// tailDelete queues the removal of the tail entry of a tracked message polled at polled.
func (t *tx) tailDelete(d *counts, polled uint64, channel string, tsKey []byte) {
	t.tail.add(&t.tail.dels, t.tailKeyInArena(polled, channel, tsKey), nil)
	d.tracked--
}

// sortOps puts ops in ascending key order (ties by seq): a no-op for an ascending list,
// a reversal for a strictly descending one, else a sort.
func sortOps(ops []tailOp) {
	asc, desc := true, true
	for i := 1; i < len(ops) && (asc || desc); i++ {
		c := bytes.Compare(ops[i-1].key, ops[i].key)
		asc = asc && (c < 0 || c == 0 && ops[i-1].seq < ops[i].seq)
		desc = desc && c > 0
	}
	switch {
	case asc:
	case desc:
		slices.Reverse(ops)
	default:
		slices.SortFunc(ops, func(a, b tailOp) int {
			if c := bytes.Compare(a.key, b.key); c != 0 {
				return c
			}
			return a.seq - b.seq
		})
	}
}

// cancelOverridden drops, for each key both put and deleted, whichever list's change
// came first. Both lists are sorted; a put or delete repeated within one list is
// harmless (the value of a key is always the same ts).
func cancelOverridden(puts, dels []tailOp) (keepPuts, keepDels []tailOp) {
	keepPuts, keepDels = puts[:0:0], dels[:0:0]
	dropPut := make(map[int]bool)
	dropDel := make(map[int]bool)
	i, j := 0, 0
	for i < len(puts) && j < len(dels) {
		switch c := bytes.Compare(puts[i].key, dels[j].key); {
		case c < 0:
			i++
		case c > 0:
			j++
		default:
			// Find the last change of this key in each list.
			ie, je := i, j
			for ie+1 < len(puts) && bytes.Equal(puts[ie+1].key, puts[i].key) {
				ie++
			}
			for je+1 < len(dels) && bytes.Equal(dels[je+1].key, dels[j].key) {
				je++
			}
			if puts[ie].seq > dels[je].seq {
				for ; j <= je; j++ {
					dropDel[j] = true
				}
			} else {
				for ; i <= ie; i++ {
					dropPut[i] = true
				}
			}
			i, j = ie+1, je+1
		}
	}
	if len(dropPut) == 0 && len(dropDel) == 0 {
		return puts, dels
	}
	for i, op := range puts {
		if !dropPut[i] {
			keepPuts = append(keepPuts, op)
		}
	}
	for j, op := range dels {
		if !dropDel[j] {
			keepDels = append(keepDels, op)
		}
	}
	return keepPuts, keepDels
}

// pendingTail returns the queued changes as one list in ascending key order, each key
// once (the last change wins), and empties the queue. The list is valid until the next
// call.
func (q *tailQueue) pendingTail() []tailOp {
	sortOps(q.puts)
	sortOps(q.dels)
	puts, dels := cancelOverridden(q.puts, q.dels)
	out := q.out[:0]
	for len(puts) > 0 || len(dels) > 0 {
		var op tailOp
		if len(dels) == 0 || len(puts) > 0 && bytes.Compare(puts[0].key, dels[0].key) <= 0 {
			op, puts = puts[0], puts[1:]
		} else {
			op, dels = dels[0], dels[1:]
		}
		// A repeated identical change (same key, same list) is applied once.
		if n := len(out); n > 0 && bytes.Equal(out[n-1].key, op.key) {
			out[n-1] = op
			continue
		}
		out = append(out, op)
	}
	q.puts, q.dels, q.out = q.puts[:0], q.dels[:0], out
	return out
}
