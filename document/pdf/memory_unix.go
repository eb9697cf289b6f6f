//go:build unix

package pdf

import (
	"sync"
	"syscall"
	"unsafe"

	"github.com/klippa-app/go-pdfium"
	"github.com/tetratelabs/wazero/experimental"
)

// mapping backs a sandbox's linear memory with an anonymous mapping of
// its maximum size, reserved but not committed: growing it touches new
// pages in place. wazero's default, a Go slice, copies the whole memory
// into a new slice at every growth and leaves the old one to the garbage
// collector; reading a 3,000-page PDF that way peaked at 450 MB of RSS
// for 103 MB of WebAssembly memory.
//
// A mapping must outlive the calls running on it: killing an instance
// frees its memory at once, whatever still runs on it. A Read kills its
// instance only once its calls are done (a read past its ctx kills the
// worker process instead), but pins the mapping all the same, and a
// mapping freed while pinned is unmapped when it is unpinned.
type mapping struct {
	buf           []byte
	pinned, freed bool
}

var mappings = struct {
	sync.Mutex
	m map[*byte]*mapping // by the address of the first byte
}{m: map[*byte]*mapping{}}

func memoryAllocator() experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
		buf, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve)
		if err != nil {
			// wazero takes a nil slice for a failed allocation.
			return &mapping{freed: true}
		}
		m := &mapping{buf: buf}
		mappings.Lock()
		mappings.m[unsafe.SliceData(buf)] = m
		mappings.Unlock()
		return m
	})
}

func (m *mapping) Reallocate(size uint64) []byte {
	if size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size]
}

func (m *mapping) Free() {
	mappings.Lock()
	defer mappings.Unlock()
	m.freed = true
	if !m.pinned {
		m.unmap()
	}
}

// unmap is called with mappings locked.
func (m *mapping) unmap() {
	if m.buf != nil {
		delete(mappings.m, unsafe.SliceData(m.buf))
		syscall.Munmap(m.buf)
		m.buf = nil
	}
}

// pin keeps inst's memory mapped until the returned func is called.
func pin(inst pdfium.Pdfium) (unpin func()) {
	mod := moduleOf(inst)
	if mod == nil {
		return func() {}
	}
	b, ok := mod.Memory().Read(0, 1)
	if !ok {
		return func() {}
	}
	mappings.Lock()
	m := mappings.m[unsafe.SliceData(b)]
	if m != nil {
		m.pinned = true
	}
	mappings.Unlock()
	return func() {
		if m == nil {
			return
		}
		mappings.Lock()
		defer mappings.Unlock()
		m.pinned = false
		if m.freed {
			m.unmap()
		}
	}
}
