package boltstore

// arenaChunk is the allocation unit of an arena: one allocation serves many values.
const arenaChunk = 64 << 10

// arena hands out byte slices that stay valid (never reused) for the life of a
// transaction, because bbolt keeps Put's value slice until commit. Carving values from
// 64 KiB chunks saves an allocation per message on a 999-message page.
type arena struct {
	buf []byte
}

// alloc returns an empty slice with capacity at least n, carved from the current chunk.
// The caller appends at most n bytes and then calls commit with the result.
func (a *arena) alloc(n int) []byte {
	if cap(a.buf)-len(a.buf) < n {
		size := arenaChunk
		if n > size/4 {
			// A big value gets its own allocation instead of wasting a chunk.
			return make([]byte, 0, n)
		}
		a.buf = make([]byte, 0, size)
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
