package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Primitives of the binary value encodings: strings as uvarint length + bytes, ints as
// zigzag varints, times as (varint seconds, uvarint nanoseconds) in UTC.

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

// maxVarint is the most bytes a varint takes; size estimates use it per number.
const maxVarint = binary.MaxVarintLen64

var errTruncated = errors.New("value truncated")

// reader decodes a value. It reads from a string copy of the bbolt bytes, so every
// string it returns shares that one copy (one allocation per value) and none points
// into bbolt's memory map. The first error sticks; later reads return zero values.
type reader struct {
	s   string
	off int
	err error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.s) {
		r.fail(errTruncated)
		return 0
	}
	c := r.s[r.off]
	r.off++
	return c
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	var x uint64
	var shift uint
	for i := 0; i < maxVarint; i++ {
		if r.off >= len(r.s) {
			r.fail(errTruncated)
			return 0
		}
		c := r.s[r.off]
		r.off++
		if c < 0x80 {
			if i == maxVarint-1 && c > 1 {
				break
			}
			return x | uint64(c)<<shift
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	r.fail(errors.New("varint overflows 64 bits"))
	return 0
}

func (r *reader) varint() int64 {
	ux := r.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

// int reads a varint that must fit an int.
func (r *reader) int() int {
	x := r.varint()
	if int64(int(x)) != x {
		r.fail(fmt.Errorf("integer %d out of range", x))
		return 0
	}
	return int(x)
}

// count reads a length that must fit in what is left of the value, at least min bytes
// per element, so a corrupt length cannot make us allocate gigabytes.
func (r *reader) count(min int) int {
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.s)-r.off)/uint64(min) {
		r.fail(fmt.Errorf("length %d exceeds the value", n))
		return 0
	}
	return int(n)
}

func (r *reader) string() string {
	n := r.count(1)
	if r.err != nil {
		return ""
	}
	s := r.s[r.off : r.off+n]
	r.off += n
	return s
}

func (r *reader) time() time.Time {
	sec := r.varint()
	nsec := r.uvarint()
	if r.err == nil && nsec >= 1e9 {
		r.fail(fmt.Errorf("nanoseconds %d out of range", nsec))
	}
	if r.err != nil {
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

// end fails unless the whole value was read: trailing bytes mean another format.
func (r *reader) end() error {
	if r.err == nil && r.off != len(r.s) {
		r.fail(fmt.Errorf("%d trailing bytes", len(r.s)-r.off))
	}
	return r.err
}
