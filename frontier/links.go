package frontier

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Outlinks, for finding orphans: pages no chain of links from a source's
// roots reaches any more. An incremental crawl gets a 304 for an unchanged
// page and never reads its links again, so what each page links is stored
// when it is read, in the transaction of its completion.
//
// Bucket "l" maps the LinkKey of a page (8 bytes, big-endian) to the sorted,
// distinct LinkKeys of the URLs it leads to, 8 bytes each. Hashes, not URLs:
// the walk from the roots goes from hash to hash without ever decoding a URL,
// a link costs 8 bytes whatever its length, and the walk's memory is one set
// of 8-byte keys. Two URLs with the same 64-bit hash (one chance in about
// 37 million among a million URLs) would make one look linked when the
// other is, or the links stored for one stand for the other's.

var bucketLinks = []byte("l")

// LinkKey is the 64-bit FNV-1a hash of a URL as the frontier keys it: the
// key of its stored outlinks, and how other pages' outlinks name it.
func LinkKey(url string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(url); i++ {
		h ^= uint64(url[i])
		h *= prime
	}
	return h
}

// compactLinks sorts links and removes repeats, in place.
func compactLinks(links []uint64) []uint64 {
	slices.Sort(links)
	return slices.Compact(links)
}

// putLinks stores a page's sorted, distinct outlinks under its LinkKey,
// leaving the page untouched when they are what it already holds, so an
// unchanged page costs no write. A page that links nothing stores nothing:
// Record.HasLinks tells it from a page never read.
func (w *wtx) putLinks(url string, links []uint64) error {
	if len(links) == 0 {
		return w.dropLinks(url)
	}
	b := w.tx.Bucket(bucketLinks)
	n := len(w.arena)
	w.arena = binary.BigEndian.AppendUint64(w.arena, LinkKey(url))
	key := w.arena[n:len(w.arena):len(w.arena)]
	m := len(w.arena)
	for _, l := range links {
		w.arena = binary.BigEndian.AppendUint64(w.arena, l)
	}
	val := w.arena[m:len(w.arena):len(w.arena)]
	if old := b.Get(key); old != nil && bytes.Equal(old, val) {
		return nil
	}
	if err := w.reachChanged(); err != nil {
		return err
	}
	return b.Put(key, val)
}

func (w *wtx) dropLinks(url string) error {
	var key [8]byte
	binary.BigEndian.PutUint64(key[:], LinkKey(url))
	c := w.tx.Bucket(bucketLinks).Cursor()
	if k, _ := c.Seek(key[:]); !bytes.Equal(k, key[:]) {
		return nil
	}
	if err := w.reachChanged(); err != nil {
		return err
	}
	return c.Delete()
}

// ReachGeneration counts the committed changes that can change what an
// orphan walk finds: to the stored links, and to what of a record the walk
// reads (its state, sync marks, orphan mark, whether its links are known,
// where it redirects), a new record included. Two walks over the same
// roots at the same generation find the same, provided the first found no
// URL Waiting (a fetched page queued again reads as fetched): a caller
// that keeps the generation its last walk started at can skip a walk of an
// unchanged store. An unchanged page's check (a 304) does not count.
func (f *Frontier) ReachGeneration() (uint64, error) {
	if f.shut.Load() {
		return 0, ErrClosed
	}
	var g uint64
	err := f.view(func(tx *bolt.Tx) error {
		g = readCounter(tx, keyReach)
		return nil
	})
	return g, err
}

// reachChanged counts the op's change in the reach generation, once.
func (w *wtx) reachChanged() error {
	if w.reachCounted {
		return nil
	}
	w.reachCounted = true
	n := len(w.arena)
	w.arena = binary.BigEndian.AppendUint64(w.arena, readCounter(w.tx, keyReach)+1)
	return w.tx.Bucket(bucketMeta).Put(keyReach, w.arena[n:len(w.arena):len(w.arena)])
}

// SetLinks stores links as the outlinks of key, which needs no record: a
// source's sitemaps and feeds, say, stored under a name that is no URL, so
// that the URLs they list are reached from it. No links deletes them.
func (f *Frontier) SetLinks(key string, links []uint64) error {
	links = compactLinks(slices.Clone(links))
	return f.write(func(tx *bolt.Tx) error {
		return newWtx(tx).putLinks(key, links)
	})
}

// Links returns the stored outlinks of key, sorted, and whether any are
// stored.
func (f *Frontier) Links(key string) ([]uint64, bool, error) {
	if f.shut.Load() {
		return nil, false, ErrClosed
	}
	var (
		out   []uint64
		found bool
	)
	err := f.view(func(tx *bolt.Tx) error {
		var k [8]byte
		binary.BigEndian.PutUint64(k[:], LinkKey(key))
		v := tx.Bucket(bucketLinks).Get(k[:])
		if v == nil {
			return nil
		}
		if len(v)%8 != 0 {
			return fmt.Errorf("%w: links of %s", errCorrupt, key)
		}
		found = true
		out = make([]uint64, 0, len(v)/8)
		for i := 0; i < len(v); i += 8 {
			out = append(out, binary.BigEndian.Uint64(v[i:]))
		}
		return nil
	})
	return out, found, err
}

// Reached is the set of LinkKeys a walk from roots reached.
type Reached struct {
	set map[uint64]struct{}
}

// Has says whether the walk reached url.
func (r *Reached) Has(url string) bool {
	_, ok := r.set[LinkKey(url)]
	return ok
}

// Len is how many keys the walk reached, roots included.
func (r *Reached) Len() int { return len(r.set) }

// NewReached is the result of a walk made by another Store: the LinkKeys
// it reached.
func NewReached(set map[uint64]struct{}) *Reached { return &Reached{set: set} }

// reachChunk bounds the lookups of one read transaction, so a walk over
// millions of pages never holds one open long enough to stall a writer
// that must grow the file.
const reachChunk = 4096

// Reach walks the stored outlinks from roots (LinkKeys) and returns every
// key reached, roots included. A key with no stored outlinks ends its
// branch: the caller tells a page whose links are unknown from one that
// links nothing by Record.HasLinks. Memory is the set, about 20 bytes a key, and
// a stack of keys still to visit.
func (f *Frontier) Reach(roots []uint64) (*Reached, error) {
	if f.shut.Load() {
		return nil, ErrClosed
	}
	r := &Reached{set: make(map[uint64]struct{}, len(roots))}
	var stack []uint64
	for _, k := range roots {
		if _, ok := r.set[k]; !ok {
			r.set[k] = struct{}{}
			stack = append(stack, k)
		}
	}
	for len(stack) > 0 {
		err := f.view(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketLinks)
			var key [8]byte
			for n := 0; n < reachChunk && len(stack) > 0; n++ {
				binary.BigEndian.PutUint64(key[:], stack[len(stack)-1])
				stack = stack[:len(stack)-1]
				v := b.Get(key[:])
				if len(v)%8 != 0 {
					return fmt.Errorf("%w: links of %x", errCorrupt, key)
				}
				for i := 0; i < len(v); i += 8 {
					t := binary.BigEndian.Uint64(v[i:])
					if _, ok := r.set[t]; !ok {
						r.set[t] = struct{}{}
						stack = append(stack, t)
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

// updateEach changes the records of urls with fn, in write transactions of
// up to 2048 URLs rather than one each, and returns the records it changed,
// as stored. fn sees each record that exists and is not Waiting (a Waiting
// URL may be leased, and its worker decides it), and returns whether it
// changed it and the events to add to its history. It may set the state to
// Fetched, Error, Excluded or Waiting; Waiting queues the URL at the tail
// of its class. fn may run more than once for a URL and must not call the
// Frontier.
func (f *Frontier) updateEach(urls []string, fn func(*Record) (bool, []Event)) ([]Record, error) {
	return f.updateAll(urls, func(r *Record) (bool, []Event) {
		if r.State == Waiting || r.State == InFlight {
			return false, nil
		}
		return fn(r)
	})
}

// updateAll is updateEach with fn seeing Waiting and leased records too
// (InFlight): for those it may change the bookkeeping only (a pending
// write), not the state, which is their worker's.
func (f *Frontier) updateAll(urls []string, fn func(*Record) (bool, []Event)) ([]Record, error) {
	var out []Record
	changes := make([]edit, 0, min(len(urls), writeChunk))
	for chunk := range slices.Chunk(urls, writeChunk) {
		changes = changes[:0]
		for _, u := range chunk {
			changes = append(changes, edit{URL: u})
		}
		for i := range changes {
			c := &changes[i]
			c.Fn = func(r *Record) error {
				ok, evs := fn(r)
				if !ok {
					return errUnchanged
				}
				c.Events = evs
				return nil
			}
		}
		if err := f.updateBatch(changes); err != nil {
			return out, err
		}
		for _, c := range changes {
			switch {
			case c.Err == nil:
				out = append(out, c.Record)
			case errors.Is(c.Err, errUnchanged), errors.Is(c.Err, ErrNotFound):
			default:
				return out, c.Err
			}
		}
	}
	return out, nil
}

// errUnchanged is updateEach's refusal of a change its fn did not make.
var errUnchanged = errors.New("frontier: unchanged")
