package boltstore

// arenaChunk is the allocation unit of an arena: one allocation serves many values.
const arenaChunk = 64 << 10

// arenaKeep bounds the memory an arena keeps for the next transaction after reset.
const arenaKeep = 4 << 20

// arena hands out byte slices that stay valid (never reused) for the life of a
// transaction, because bbolt keeps Put's value slice until commit. Carving values from
// 64 KiB chunks saves an allocation per message on a 999-message page; reset recycles
// the chunks once the transaction is over.
type arena struct {
	buf  []byte   // the chunk being carved
	used [][]byte // chunks handed out in this transaction, buf included
	free [][]byte // chunks of earlier transactions, ready for reuse
}

// alloc returns an empty slice with capacity at least n, carved from the current chunk.
// The caller appends at most n bytes and then calls commit with the result.
func (a *arena) alloc(n int) []byte {
	if cap(a.buf)-len(a.buf) < n {
		if n > arenaChunk/4 {
			// A big value gets its own allocation instead of wasting a chunk.
			return make([]byte, 0, n)
		}
		if k := len(a.free); k > 0 {
			a.buf, a.free = a.free[k-1][:0], a.free[:k-1]
		} else {
			a.buf = make([]byte, 0, arenaChunk)
		}
		a.used = append(a.used, a.buf)
	}
	return a.buf[len(a.buf):][:0:n]
}

// commit marks v (returned by alloc, then appended to) as used. If v outgrew its
// capacity, append moved it elsewhere and the chunk is untouched.
func (a *arena) commit(v []byte) {
	end := len(a.buf) + len(v)
	if end <= cap(a.buf) && len(v) > 0 && &a.buf[:end][len(a.buf)] == &v[0] {
		a.buf = a.buf[:end]
	}
}

// reset makes every chunk reusable. Call it only when no transaction uses the values.
func (a *arena) reset() {
	a.free = append(a.free, a.used...)
	if len(a.free)*arenaChunk > arenaKeep {
		a.free = a.free[:arenaKeep/arenaChunk]
	}
	clear(a.used)
	a.used, a.buf = a.used[:0], nil
}
