package frontier

import "sync"

// seenSet remembers URLs that Add has already brought up to date in the
// current cycle, so the links a page shares with its neighbours (a site's
// navigation: most of its ~80 links) cost a hash lookup instead of a write
// transaction. It is a cache, never the authority: a URL it does not hold
// goes to the store as before, and it forgets everything when the cycle
// changes, when a URL is deleted, or when it is full.
//
// It keys on LinkKey, the 64-bit hash the stored outlinks use too, as
// Heritrix's and Mercator's URL-seen tests key on fingerprints. Two URLs
// sharing a hash in a crawl of 5 million is a chance of about one in a
// million; the hash is the same in every cycle, so the one met second would
// be skipped as a link whenever the other was met first in the cycle, as it
// would already stand for the other in the stored outlinks.
type seenSet struct {
	mu    sync.Mutex
	cycle uint64
	slots []uint64 // open addressing; 0 marks an empty slot
	n     int
	max   int // slots at most: 8 bytes each
}

const (
	seenMinSlots = 1 << 12
	// seenMaxSlots bounds the set at 32 MiB, 3 million URLs at its load limit.
	seenMaxSlots = 1 << 22
)

func newSeenSet(maxSlots int) *seenSet {
	return &seenSet{max: maxSlots}
}

// spread mixes a key's high bits into the low ones that pick its slot:
// FNV-1a's low bits are its weakest.
func spread(h uint64) uint64 { return (h * 0x9E3779B97F4A7C15) >> 32 }

// slotKey keeps 0 free to mark empty slots.
func slotKey(k uint64) uint64 { return max(k, 1) }

// has reports whether key was recorded in cycle.
func (s *seenSet) has(cycle, key uint64) bool {
	h := slotKey(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cycle != cycle || s.slots == nil {
		return false
	}
	mask := uint64(len(s.slots) - 1)
	for i := spread(h) & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case h:
			return true
		case 0:
			return false
		}
	}
}

// add records keys as brought up to date in cycle, but those skip marks.
func (s *seenSet) add(cycle uint64, keys []uint64, skip []bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cycle != cycle {
		s.clearLocked()
		s.cycle = cycle
	}
	for i, k := range keys {
		if skip == nil || !skip[i] {
			s.insertLocked(slotKey(k))
		}
	}
}

func (s *seenSet) insertLocked(h uint64) {
	if (s.n+1)*4 > len(s.slots)*3 { // keep the load under 3/4
		if len(s.slots) >= s.max {
			s.clearLocked()
		}
		s.growLocked()
	}
	mask := uint64(len(s.slots) - 1)
	for i := spread(h) & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case h:
			return
		case 0:
			s.slots[i] = h
			s.n++
			return
		}
	}
}

func (s *seenSet) growLocked() {
	size := max(seenMinSlots, 2*len(s.slots))
	old := s.slots
	s.slots, s.n = make([]uint64, size), 0
	mask := uint64(size - 1)
	for _, h := range old {
		if h == 0 {
			continue
		}
		i := spread(h) & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = h
		s.n++
	}
}

// reset forgets everything; the next lookups go to the store.
func (s *seenSet) reset() {
	s.mu.Lock()
	s.clearLocked()
	s.mu.Unlock()
}

func (s *seenSet) clearLocked() {
	s.slots, s.n = nil, 0
}
