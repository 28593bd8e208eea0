package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"slices"
)

// A page walk over the file's bytes, read with ReadAt rather than through bbolt's
// memory map. bbolt's own consistency check (Tx.Check) runs in a goroutine of its
// own, where a page number or offset pointing past the end of the file faults the
// whole process (a fault becomes a recoverable panic only in a goroutine that asked
// for it with debug.SetPanicOnFault). The walk reads what that check would read and
// fails, with an error, on anything that would take it outside the file or round a
// loop: afterwards Tx.Check only meets memory inside the file. A read through the
// file cannot fault at all.
//
// The layout read here is bbolt's file format version 2 (go.etcd.io/bbolt, package
// internal/common: page.go, meta.go, bucket.go), in the machine's byte order, as
// bbolt writes it:
//
//	page header  id(8) flags(2) count(2) overflow(4)
//	meta         magic(4) version(4) page size(4) flags(4) root bucket{root(8) sequence(8)}
//	             freelist(8) pgid(8) txid(8) checksum(8: FNV-64a of the fields before it)
//	branch elem  pos(4) ksize(4) pgid(8)     key at elem+pos
//	leaf elem    flags(4) pos(4) ksize(4) vsize(4)   key at elem+pos, value after it
//	bucket value root(8) sequence(8), then the bucket's page inline when root is 0
const (
	pageHeaderSize  = 16
	pageElementSize = 16 // branch and leaf elements alike
	bucketHeader    = 16

	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	metaPageFlag     = 0x04
	freelistPageFlag = 0x10
	bucketLeafFlag   = 0x01

	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	noFreelist     = ^uint64(0)
	metaChecksumAt = pageHeaderSize + 56 // offset of the checksum in a meta page
)

var nativeEndian = binary.NativeEndian

// fileMeta is what the walk needs of one meta page.
type fileMeta struct {
	pageSize                  uint32
	root, freelist, hwm, txid uint64
}

// parseMeta reads the meta page at the start of p; ok is false unless its magic,
// version and checksum hold.
func parseMeta(p []byte) (m fileMeta, ok bool) {
	if len(p) < metaChecksumAt+8 {
		return m, false
	}
	h := fnv.New64a()
	_, _ = h.Write(p[pageHeaderSize:metaChecksumAt])
	if nativeEndian.Uint32(p[16:]) != boltMagic || nativeEndian.Uint32(p[20:]) != boltVersion ||
		nativeEndian.Uint64(p[metaChecksumAt:]) != h.Sum64() {
		return m, false
	}
	return fileMeta{
		pageSize: nativeEndian.Uint32(p[24:]),
		root:     nativeEndian.Uint64(p[32:]),
		freelist: nativeEndian.Uint64(p[48:]),
		hwm:      nativeEndian.Uint64(p[56:]),
		txid:     nativeEndian.Uint64(p[64:]),
	}, true
}

// readMetas returns the valid meta pages of the file, as bbolt finds them: the first
// at offset 0, the second one page size further (the page size taken from the first,
// or probed from 1 KiB up as bbolt does when the first is unreadable).
func readMetas(f io.ReaderAt) []fileMeta {
	var out []fileMeta
	buf := make([]byte, metaChecksumAt+8)
	if _, err := f.ReadAt(buf, 0); err == nil {
		if m, ok := parseMeta(buf); ok {
			out = append(out, m)
			if _, err := f.ReadAt(buf, int64(m.pageSize)); err == nil {
				if m1, ok := parseMeta(buf); ok && m1.pageSize == m.pageSize {
					out = append(out, m1)
				}
			}
			return out
		}
	}
	for i := range 15 {
		if _, err := f.ReadAt(buf, int64(1024)<<i); err == nil {
			if m, ok := parseMeta(buf); ok && int64(m.pageSize) == int64(1024)<<i {
				return append(out, m)
			}
		}
	}
	return out
}

// newestMeta returns the valid meta with the highest txid: the one bbolt opens.
func newestMeta(metas []fileMeta) (fileMeta, bool) {
	var best fileMeta
	for i, m := range metas {
		if i == 0 || m.txid > best.txid {
			best = m
		}
	}
	return best, len(metas) > 0
}

// errShort is the cause of a damagedError for a file shorter than its pages.
type errShort struct{ size, need int64 }

func (e errShort) Error() string {
	return fmt.Sprintf("the file is truncated: it has %d bytes, its pages need %d", e.size, e.need)
}

// checkLength fails when the file is shorter than the pages its newest meta page
// counts: bbolt would map the missing pages and fault, or read zeros, on the first
// access to one of them. bbolt grows the file before it writes a meta page that
// counts more pages, so an intact file is never shorter. The meta pages are read
// before the size, so that a writer growing the file meanwhile cannot make an intact
// file look short. A file without a valid meta page is left to bbolt to refuse.
func checkLength(f *os.File) error {
	m, ok := newestMeta(readMetas(f))
	if !ok || m.pageSize == 0 {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if need := int64(m.hwm) * int64(m.pageSize); fi.Size() < need {
		return errShort{size: fi.Size(), need: need}
	}
	return nil
}

// walkPages walks the pages the meta page of transaction txid reaches, reading f, and
// returns the first problem that would take a reader of them outside the file or
// round a loop: a page past the end or past the high water mark, a page reached
// twice, a page whose header names another page or an unknown type, an element, key
// or value past its page's end, a freelist longer than its page. It checks no key
// order and no unreachable pages: Tx.Check does, safely, once this walk passed.
func walkPages(f *os.File, txid uint64) error {
	var meta fileMeta
	found := false
	for _, m := range readMetas(f) {
		if m.txid == txid {
			meta, found = m, true
		}
	}
	if !found {
		return fmt.Errorf("no meta page of transaction %d: the file changed during the check", txid)
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	w := &pageWalk{f: f, size: fi.Size(), ps: int64(meta.pageSize), hwm: meta.hwm}
	if w.ps < 1024 || w.ps > 1<<24 {
		return fmt.Errorf("page size %d out of range", w.ps)
	}
	if need := int64(w.hwm) * w.ps; w.size < need {
		return errShort{size: w.size, need: need}
	}
	w.seen = make([]uint64, (w.hwm+63)/64)
	w.mark(0)
	w.mark(1)
	if meta.freelist != noFreelist {
		if err := w.freelist(meta.freelist); err != nil {
			return err
		}
	}
	return w.tree(meta.root, 0)
}

// pageWalk is the state of walkPages.
type pageWalk struct {
	f        io.ReaderAt
	size, ps int64
	hwm      uint64
	seen     []uint64 // bitset of the pages reached or freed
}

// maxDepth bounds the nesting of branch pages and buckets the walk follows. bbolt
// trees are a few levels deep; a deeper one is a loop the seen set missed, or damage.
const maxDepth = 64

func (w *pageWalk) marked(id uint64) bool { return w.seen[id/64]&(1<<(id%64)) != 0 }
func (w *pageWalk) mark(id uint64)        { w.seen[id/64] |= 1 << (id % 64) }

// read returns page id with its overflow pages, after checking that its type is one
// of want and that they lie below the high water mark, inside the file, and were not
// reached before (marking them).
func (w *pageWalk) read(id uint64, want ...uint16) ([]byte, error) {
	if id < 2 || id >= w.hwm {
		return nil, fmt.Errorf("page %d: out of range [2, %d)", id, w.hwm)
	}
	head := make([]byte, pageHeaderSize)
	if _, err := w.f.ReadAt(head, int64(id)*w.ps); err != nil {
		return nil, fmt.Errorf("page %d: %w", id, err)
	}
	if got := nativeEndian.Uint64(head); got != id {
		return nil, fmt.Errorf("page %d: its header names page %d", id, got)
	}
	if flags := nativeEndian.Uint16(head[8:]); !slices.Contains(want, flags) {
		return nil, fmt.Errorf("page %d: unexpected type %#x", id, flags)
	}
	overflow := uint64(nativeEndian.Uint32(head[12:]))
	if id+overflow >= w.hwm {
		return nil, fmt.Errorf("page %d: %d overflow pages run past the high water mark %d", id, overflow, w.hwm)
	}
	for i := id; i <= id+overflow; i++ {
		if w.marked(i) {
			return nil, fmt.Errorf("page %d: reached twice, or both reached and free", i)
		}
		w.mark(i)
	}
	p := make([]byte, int64(overflow+1)*w.ps)
	if _, err := w.f.ReadAt(p, int64(id)*w.ps); err != nil {
		return nil, fmt.Errorf("page %d: %w", id, err)
	}
	return p, nil
}

// freelist checks the freelist page and marks the pages it frees.
func (w *pageWalk) freelist(id uint64) error {
	p, err := w.read(id, freelistPageFlag)
	if err != nil {
		return fmt.Errorf("freelist %w", err)
	}
	start, count := pageHeaderSize, uint64(nativeEndian.Uint16(p[10:]))
	if count == 0xFFFF { // the real count is the first element
		count, start = nativeEndian.Uint64(p[pageHeaderSize:]), pageHeaderSize+8
	}
	if count > uint64(len(p)-start)/8 {
		return fmt.Errorf("freelist page %d: %d ids do not fit in it", id, count)
	}
	for i := range count {
		free := nativeEndian.Uint64(p[start+int(i)*8:])
		if free < 2 || free >= w.hwm {
			return fmt.Errorf("freelist page %d: frees page %d, out of range [2, %d)", id, free, w.hwm)
		}
		if w.marked(free) {
			return fmt.Errorf("freelist page %d: page %d freed twice, or both free and in use", id, free)
		}
		w.mark(free)
	}
	return nil
}

// tree walks the bucket tree rooted at page id.
func (w *pageWalk) tree(id uint64, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("page %d: nested deeper than %d", id, maxDepth)
	}
	p, err := w.read(id, branchPageFlag, leafPageFlag)
	if err != nil {
		return err
	}
	return w.elements(p, id, depth)
}

// elements checks the elements of page p (a page of the file, or a bucket's inline
// page: id 0) and walks what they reach.
func (w *pageWalk) elements(p []byte, id uint64, depth int) error {
	flags, count := nativeEndian.Uint16(p[8:]), int(nativeEndian.Uint16(p[10:]))
	if pageHeaderSize+count*pageElementSize > len(p) {
		return fmt.Errorf("page %d: %d elements do not fit in it", id, count)
	}
	for i := range count {
		at := pageHeaderSize + i*pageElementSize
		e := p[at : at+pageElementSize]
		if flags == branchPageFlag {
			pos, ksize := int64(nativeEndian.Uint32(e)), int64(nativeEndian.Uint32(e[4:]))
			if int64(at)+pos+ksize > int64(len(p)) {
				return fmt.Errorf("page %d: key %d runs past the page", id, i)
			}
			if err := w.tree(nativeEndian.Uint64(e[8:]), depth+1); err != nil {
				return err
			}
			continue
		}
		lflags := nativeEndian.Uint32(e)
		pos, ksize, vsize := int64(nativeEndian.Uint32(e[4:])), int64(nativeEndian.Uint32(e[8:])), int64(nativeEndian.Uint32(e[12:]))
		end := int64(at) + pos + ksize + vsize
		if end > int64(len(p)) {
			return fmt.Errorf("page %d: key or value %d runs past the page", id, i)
		}
		if lflags&bucketLeafFlag == 0 {
			continue
		}
		v := p[int64(at)+pos+ksize : end]
		if len(v) < bucketHeader {
			return fmt.Errorf("page %d: bucket %d has a %d-byte header", id, i, len(v))
		}
		if root := nativeEndian.Uint64(v); root != 0 {
			if err := w.tree(root, depth+1); err != nil {
				return err
			}
			continue
		}
		inline := v[bucketHeader:]
		if len(inline) < pageHeaderSize || nativeEndian.Uint16(inline[8:]) != leafPageFlag {
			return fmt.Errorf("page %d: inline bucket %d is not a leaf page", id, i)
		}
		if depth+1 > maxDepth {
			return errors.New("buckets nested too deep")
		}
		if err := w.elements(inline, 0, depth+1); err != nil {
			return fmt.Errorf("page %d, inline bucket %d: %w", id, i, err)
		}
	}
	return nil
}
