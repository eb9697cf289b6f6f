package frontier

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"time"
)

// A check of the store file before bbolt maps it. bbolt trusts its file:
// a damaged page makes it panic ("assertion failed"), often on a goroutine
// of its own that no recover reaches (it walks the whole tree on open to
// rebuild the freelist), and a page beyond the end of a truncated file is
// a SIGBUS that kills the process. So the tree is walked here first with
// plain reads, checking everything bbolt's own walk would trip on: both
// meta pages, the file's length against the high-water mark, and for every
// page reached from the root its id, type, overflow, element bounds and
// nested bucket headers, and that no page is reached twice (a cycle).
//
// The on-disk format is bbolt's version 2, stable since bbolt began;
// integers are in the machine's byte order (little-endian here).

const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	pageHeaderSize = 16 // id u64, flags u16, count u16, overflow u32
	elemSize       = 16 // branch: pos, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32
	bucketHdrSize  = 16 // root pgid u64, sequence u64
	metaChecksumAt = 56 // bytes of the meta covered by its checksum

	flagBranch   = 0x01
	flagLeaf     = 0x02
	flagFreelist = 0x10
	flagBucket   = 0x01 // a leaf element that is a nested bucket

	noFreelist = ^uint64(0)
	maxDepth   = 64 // far beyond any real tree: a deeper one loops
)

var le = binary.LittleEndian

// errDamaged matches every error that says the store file is damaged:
// what verification finds, and bbolt's panics on a bad page (see guard).
var errDamaged = errors.New("frontier: damaged store")

type damage string

func (d damage) Error() string        { return string(d) }
func (d damage) Is(target error) bool { return target == errDamaged }

func damaged(format string, a ...any) error { return damage(fmt.Sprintf(format, a...)) }

// meta is the part of a meta page verification needs.
type meta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	hwm      uint64 // pages in use: every page id is below it
	txid     uint64
}

// parseMeta reads a meta page's body (after the page header); ok is false
// when it is not a valid meta (bad magic, version or checksum).
func parseMeta(b []byte) (m meta, ok bool) {
	if len(b) < 64 || le.Uint32(b) != boltMagic || le.Uint32(b[4:]) != boltVersion {
		return m, false
	}
	h := fnv.New64a()
	h.Write(b[:metaChecksumAt])
	if h.Sum64() != le.Uint64(b[metaChecksumAt:]) {
		return m, false
	}
	m = meta{pageSize: le.Uint32(b[8:]), root: le.Uint64(b[16:]), freelist: le.Uint64(b[32:]),
		hwm: le.Uint64(b[40:]), txid: le.Uint64(b[48:])}
	return m, true
}

// verifyStore checks the store at path as described above, holding a lock
// on it as bbolt will (shared for a read-only open, else exclusive), so a
// store another process is writing is found in use, never half-written.
// The lock ends with the check, before bbolt takes its own.
func verifyStore(path string, exclusive bool, timeout time.Duration) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close() // and with it the lock
	if err := lockFile(file, exclusive, timeout); err != nil {
		return err
	}
	return verifyFile(file)
}

func verifyFile(file *os.File) error {
	st, err := file.Stat()
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		return damaged("the file is empty")
	}
	m, err := readMeta(file, st.Size())
	if err != nil {
		return err
	}
	v := &verifier{r: file, ps: int64(m.pageSize), hwm: m.hwm, seen: make([]uint64, (m.hwm+63)/64)}
	switch {
	case m.hwm < 3 || m.root < 2 || m.root >= m.hwm:
		return damaged("meta page: root page %d, %d pages", m.root, m.hwm)
	case st.Size() < int64(m.hwm)*v.ps:
		return damaged("truncated: the file has %d bytes, its pages need %d", st.Size(), int64(m.hwm)*v.ps)
	}
	v.mark(0, 0)
	v.mark(1, 0)
	if m.freelist != noFreelist {
		if err := v.freelist(m.freelist); err != nil {
			return err
		}
	}
	_, err = v.tree(m.root, 0, nil, nil)
	return err
}

// readMeta returns the valid meta page with the highest transaction, as
// bbolt chooses it. One bad meta page is what a crash during its write
// leaves, and bbolt falls back to the other; both bad is damage.
func readMeta(r io.ReaderAt, size int64) (meta, error) {
	var buf [4096]byte
	var best meta
	found := false
	try := func(off int64) {
		// Like bbolt, nothing of the page header is checked: only the
		// meta's own magic, version and checksum decide, so that the tree
		// checked is the one bbolt will use.
		n, _ := r.ReadAt(buf[:], off)
		if n < pageHeaderSize+64 {
			return
		}
		if m, ok := parseMeta(buf[pageHeaderSize:n]); ok && (!found || m.txid > best.txid) && m.pageSize >= 1024 && m.pageSize&(m.pageSize-1) == 0 {
			best, found = m, true
		}
	}
	try(0)
	if found {
		try(int64(best.pageSize))
	} else {
		// The first meta page is bad: the second is one page in, and the
		// page size is only known from it (bbolt searches the same way).
		for ps := int64(1024); ps < size && ps <= 1<<24; ps <<= 1 {
			try(ps)
			if found {
				break
			}
		}
	}
	if !found {
		return best, damaged("neither meta page is valid")
	}
	return best, nil
}

type verifier struct {
	r    io.ReaderAt
	ps   int64
	hwm  uint64
	seen []uint64 // one bit per page id
	bufs [][]byte // one page buffer per tree level, so a parent's stays valid below it
}

// mark notes pages id … id+overflow as reached; a page reached twice means
// two parents share it, or a cycle.
func (v *verifier) mark(id uint64, overflow uint32) error {
	last := id + uint64(overflow)
	if last >= v.hwm || last < id {
		return damaged("page %d (+%d overflow) is beyond the %d pages in use", id, overflow, v.hwm)
	}
	for p := id; p <= last; p++ {
		if v.seen[p/64]&(1<<(p%64)) != 0 {
			return damaged("page %d is reached twice", p)
		}
		v.seen[p/64] |= 1 << (p % 64)
	}
	return nil
}

// page reads page id whole (with its overflow pages) into the buffer of
// tree level depth, after checking its header.
func (v *verifier) page(id uint64, want uint16, depth int) ([]byte, error) {
	if id >= v.hwm {
		return nil, damaged("page %d is beyond the %d pages in use", id, v.hwm)
	}
	for len(v.bufs) <= depth {
		v.bufs = append(v.bufs, make([]byte, v.ps))
	}
	b := v.bufs[depth][:v.ps]
	if _, err := v.r.ReadAt(b, int64(id)*v.ps); err != nil {
		return nil, damaged("page %d: %v", id, err)
	}
	if got := le.Uint64(b); got != id {
		return nil, damaged("page %d identifies itself as page %d", id, got)
	}
	flags, overflow := le.Uint16(b[8:]), le.Uint32(b[12:])
	if flags&want == 0 || flags&(flags-1) != 0 {
		return nil, damaged("page %d has type %#x", id, flags)
	}
	if err := v.mark(id, overflow); err != nil {
		return nil, err
	}
	if overflow > 0 {
		n := (1 + int64(overflow)) * v.ps
		if int64(cap(v.bufs[depth])) < n {
			v.bufs[depth] = make([]byte, n)
		}
		b = v.bufs[depth][:n]
		if _, err := v.r.ReadAt(b, int64(id)*v.ps); err != nil {
			return nil, damaged("page %d: %v", id, err)
		}
	}
	return b, nil
}

// freelist checks a freelist page (stores written with bbolt's default of
// syncing it): its page ids sorted, each a data page in use.
func (v *verifier) freelist(id uint64) error {
	b, err := v.page(id, flagFreelist, 0)
	if err != nil {
		return err
	}
	start, count := pageHeaderSize, uint64(le.Uint16(b[10:]))
	if count == 0xFFFF {
		count, start = le.Uint64(b[pageHeaderSize:]), pageHeaderSize+8
	}
	if count > uint64(len(b)-start)/8 {
		return damaged("freelist page %d: %d ids overflow the page", id, count)
	}
	prev := uint64(1)
	for i := range int(count) {
		p := le.Uint64(b[start+8*i:])
		if p <= prev || p >= v.hwm {
			return damaged("freelist page %d: free page %d out of order or beyond the %d pages in use", id, p, v.hwm)
		}
		prev = p
	}
	return nil
}

// tree checks the B+tree of one bucket from its root page, its keys in
// order as bbolt's Check wants them: each page's keys ascending, and a
// subtree's keys at least its branch key and below the next one (lo, hi;
// nil for no bound). Keys out of order pass bbolt's reads, but its writes
// on such a tree can make one that its own walk then fails on. It returns
// the subtree's largest key.
func (v *verifier) tree(id uint64, depth int, lo, hi []byte) ([]byte, error) {
	if depth > maxDepth {
		return nil, damaged("page %d: the tree is deeper than %d levels", id, maxDepth)
	}
	b, err := v.page(id, flagBranch|flagLeaf, depth)
	if err != nil {
		return nil, err
	}
	if le.Uint16(b[8:]) == flagLeaf {
		return v.leaf(id, b, depth, lo, hi)
	}
	// A cursor steps into a branch's first child without looking: an
	// empty branch page sends it to whatever bytes follow the header.
	count := int(le.Uint16(b[10:]))
	if count == 0 || pageHeaderSize+count*elemSize > len(b) {
		return nil, damaged("page %d: a branch page of %d elements", id, count)
	}
	key := func(i int) ([]byte, error) {
		e := pageHeaderSize + i*elemSize
		pos, ksize := int(le.Uint32(b[e:])), int(le.Uint32(b[e+4:]))
		if e+pos+ksize > len(b) || ksize == 0 {
			return nil, damaged("page %d: key %d lies outside the page", id, i)
		}
		return b[e+pos : e+pos+ksize], nil
	}
	low := lo
	var last []byte
	for i := range count {
		k, err := key(i)
		if err != nil {
			return nil, err
		}
		if err := inOrder(id, i, k, low, hi); err != nil {
			return nil, err
		}
		next := hi
		if i+1 < count {
			if next, err = key(i + 1); err != nil {
				return nil, err
			}
		}
		if last, err = v.tree(le.Uint64(b[pageHeaderSize+i*elemSize+8:]), depth+1, k, next); err != nil {
			return nil, err
		}
		low = last
	}
	return last, nil
}

// inOrder checks key i of page id against the key before it (or the
// lower bound) and the upper bound.
func inOrder(id uint64, i int, k, prev, hi []byte) error {
	c := bytes.Compare(prev, k)
	if prev != nil && (c > 0 || c == 0 && i > 0) || hi != nil && bytes.Compare(k, hi) >= 0 {
		return damaged("page %d: key %d is out of order", id, i)
	}
	return nil
}

// leaf checks a leaf page's elements (b is the whole page, or an inline
// bucket's page) and walks the buckets nested in it; it returns the last key.
func (v *verifier) leaf(id uint64, b []byte, depth int, lo, hi []byte) ([]byte, error) {
	count := int(le.Uint16(b[10:]))
	if pageHeaderSize+count*elemSize > len(b) {
		return nil, damaged("page %d: %d elements overflow the page", id, count)
	}
	prev := lo
	for i := range count {
		e := pageHeaderSize + i*elemSize
		flags, pos := le.Uint32(b[e:]), int(le.Uint32(b[e+4:]))
		ksize, vsize := int(le.Uint32(b[e+8:])), int(le.Uint32(b[e+12:]))
		end := e + pos + ksize + vsize
		if end > len(b) || end < e+pos+ksize || ksize == 0 {
			return nil, damaged("page %d: element %d lies outside the page", id, i)
		}
		k := b[e+pos : e+pos+ksize]
		if err := inOrder(id, i, k, prev, hi); err != nil {
			return nil, err
		}
		prev = k
		if flags&flagBucket == 0 {
			continue
		}
		val := b[e+pos+ksize : end]
		if len(val) < bucketHdrSize {
			return nil, damaged("page %d: element %d: a bucket header of %d bytes", id, i, len(val))
		}
		if root := le.Uint64(val); root != 0 {
			if _, err := v.tree(root, depth+1, nil, nil); err != nil {
				return nil, err
			}
			continue
		}
		inline := val[bucketHdrSize:]
		if len(inline) < pageHeaderSize || le.Uint16(inline[8:]) != flagLeaf {
			return nil, damaged("page %d: element %d: a bad inline bucket", id, i)
		}
		if _, err := v.leaf(id, inline, depth+1, nil, nil); err != nil {
			return nil, err
		}
	}
	return prev, nil
}
