// Package frontier is crawlspace's embedded, crash-safe URL frontier and
// per-URL state store, with politeness-aware scheduling.
//
// Every URL ever queued has one Record in a bbolt file under the state
// directory, keyed by its host and the order it was found in, and found by
// its normalised URL through an index (keys.go). Waiting URLs also have an
// entry in a per-host, per-class queue, so a host's next URL is one cursor
// seek and memory holds only scheduling state for hosts with work, never a
// map of URLs. Each state change is a durable transaction; a lease (a URL
// handed to a worker) is memory only, so a killed crawl finds its leased
// URLs still Waiting on the next Open, and everything completed stays
// completed.
//
// Scheduling: a host (scheme://host:port) gets at most HostPolicy.MaxParallel
// leases at once and no new lease until HostPolicy.Delay after each
// completion or until a Backoff ends. Ready hosts are served round robin, so
// a host with a million URLs cannot starve one with three. Within a host the
// (class, shift) queues are served by stride scheduling in proportion to
// their weights (see Weight): deterministic, and no queue with work starves.
package frontier

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/crawlspace/crawlspace/urlnorm"
)

var (
	// ErrDone is returned by Next when nothing is waiting and nothing is in
	// flight: the cycle's work is finished.
	ErrDone = errors.New("frontier: nothing waiting or in flight")
	// ErrClosed is returned by every method once Close has been called.
	ErrClosed = errors.New("frontier: closed")
	// ErrNotFound is returned for a URL the store does not know.
	ErrNotFound = errors.New("frontier: URL not found")
	// ErrLeased is returned when a change would take a URL away from the
	// worker it is leased to.
	ErrLeased = errors.New("frontier: URL is leased")
	// ErrStale refuses a Reclaim of a URL whose group or claim changed
	// since the crawler read them.
	ErrStale = errors.New("frontier: the URL's group changed since it was read")
	// ErrUnsettled refuses a Reclaim of a URL whose document is not
	// indexed as its claim says, or has a write pending.
	ErrUnsettled = errors.New("frontier: the URL's document is not settled")
)

var (
	bucketQueue   = []byte("q") // host id | level | seq → record key
	bucketHosts   = []byte("h") // host key → host id
	bucketPending = []byte("p") // record key → nothing, for records with Pending set
	bucketMeta    = []byte("m") // internal counters
	bucketKV      = []byte("kv")

	keyCycle  = []byte("cycle")
	keyFormat = []byte("format")
	keyReach  = []byte("reach") // see ReachGeneration
)

// formatVersion is the store's layout: 3 keys records by the order found
// (keys.go), 2 keyed them by URL with each URL's history beside its record
// (history.go), 1 kept the history apart. An older store is moved to 3 on
// its first Open for writing (migrate.go), after which older binaries
// refuse it.
const formatVersion = 3

// HostPolicy is the politeness applied to one host.
type HostPolicy struct {
	// MaxParallel is the number of leases a host may have at once; 0 means 1.
	MaxParallel int
	// Delay is the pause after each completed request before the next one
	// starts (config delay, or robots.txt Crawl-delay when larger).
	Delay time.Duration
}

// Options configure Open.
type Options struct {
	// Policy returns the politeness for a host key ("scheme://host[:port]").
	// It is called when a host becomes active and after every completion,
	// so a Crawl-delay learned from robots.txt takes effect at once. It must
	// be fast and must not call the Frontier. Nil means MaxParallel 2, no delay.
	Policy func(hostKey string) HostPolicy
	// Now is the clock; nil means time.Now. Tests inject their own.
	Now func() time.Time
	// Bolt overrides the tuned bbolt options; for measurements only.
	Bolt *bolt.Options
	// History is how many events each URL's history keeps (see History);
	// zero records none. Histories already written stay readable.
	History int
	// Budgets bounds each source, by name: see Budget. A source not listed
	// has no limits; its records and requests are counted all the same.
	Budgets map[string]Budget
	// OnBudget hears of the URLs a limit held back (see OverBudget), once
	// the change that met the limit is stored. It is called from the
	// callers of Add, Exclude, Next and Complete and from the frontier's own
	// goroutine: it must be fast and must not call the Frontier.
	OnBudget func(OverBudget)
	// ReadOnly opens an existing store for reading only (status): it works
	// on a read-only file system or without write permission, shares the
	// store with other readers, and every change returns an error.
	ReadOnly bool
}

// DefaultBoltOptions are the bbolt settings Open uses. Syncs stay on (a
// crash must not lose an acknowledged change); the hashmap freelist stays
// fast as the file fragments, the freelist is rebuilt on open rather than
// written on every commit, and a large initial mapping avoids remaps, which
// stall writers behind long readers.
func DefaultBoltOptions() *bolt.Options {
	return &bolt.Options{
		Timeout:         2 * time.Second,
		FreelistType:    bolt.FreelistMapType,
		NoFreelistSync:  true,
		InitialMmapSize: 1 << 30,
	}
}

// Frontier is the store and scheduler. Its methods are safe for concurrent use.
type Frontier struct {
	db       *bolt.DB
	dir      string
	readOnly bool
	policy   func(string) HostPolicy
	now      func() time.Time
	cycle    atomic.Uint64
	histLen  int
	seen     *seenSet
	// budgets and onBudget are Options.Budgets and OnBudget.
	budgets  map[string]Budget
	onBudget func(OverBudget)

	// closeMu orders senders on ops against Close closing it.
	closeMu       sync.RWMutex
	closed        bool
	shut          atomic.Bool
	ops           chan *op
	committerDone chan struct{}
	asyncSlots    chan struct{}
	unitsMu       sync.Mutex // one submit at a time takes its units
	finished      chan finished
	finisherDone  chan struct{}

	// broken is the failure that made the store unusable (see StoreError),
	// and brokenCh is closed when it is set, waking Next.
	broken   atomic.Pointer[StoreError]
	brokenCh chan struct{}
	stuck    atomic.Bool // a write transaction was left open on damage

	// mu guards the scheduling state below. It is never held while waiting
	// for a write transaction, and write transactions take it only briefly,
	// never across their commit.
	mu      sync.Mutex
	hosts   map[string]*host
	ready   hostList
	timers  hostHeap
	leases  map[string]*lease // leased URLs, and URLs claimed by a change in progress
	working int               // real leases in flight
	claimed int               // URLs claimed by changes in progress
	busy    int               // hosts with a non-empty queue hint
	garbage [][]byte          // stale queue keys, deleted in batches
	wake    chan struct{}     // closed by signal when waiting
	waiting bool
	quit    chan struct{}
	// pages holds the requests of the cycle under way per source (host
	// "") and per source and host, for the page limits; heldBack says a
	// page limit made pop pass over queued URLs in this cycle, and notes
	// are what it passed over, for OnBudget.
	pages    map[pageKey]*pageUse
	heldBack bool
	notes    []OverBudget
	// paused are the sources Pause keeps back; pausedBack says pop passed
	// over URLs of one in this cycle.
	paused     map[string]bool
	pausedBack bool
	// held are leases whose outcome could not be recorded: their URLs stay
	// out of reach until the next cycle (see lease.holdLocked).
	held []*lease
}

// Open opens or creates the store in dir. A store that is damaged (an
// empty or truncated file, a page that is not what it should be) is a
// *StoreError with Corrupt set, never taken for a new crawl.
func Open(dir string, opt Options) (*Frontier, error) {
	db, err := openDB(dir, opt)
	if err != nil {
		return nil, err
	}
	f := &Frontier{
		db:            db,
		dir:           dir,
		readOnly:      opt.ReadOnly,
		policy:        opt.Policy,
		now:           opt.Now,
		histLen:       opt.History,
		seen:          newSeenSet(seenMaxSlots),
		budgets:       opt.Budgets,
		onBudget:      opt.OnBudget,
		pages:         make(map[pageKey]*pageUse),
		ops:           make(chan *op, maxBatch),
		committerDone: make(chan struct{}),
		asyncSlots:    make(chan struct{}, asyncUnits),
		finished:      make(chan finished, asyncUnits),
		finisherDone:  make(chan struct{}),
		brokenCh:      make(chan struct{}),
		hosts:         make(map[string]*host),
		leases:        make(map[string]*lease),
		wake:          make(chan struct{}),
		quit:          make(chan struct{}),
	}
	if f.now == nil {
		f.now = time.Now
	}
	if f.policy == nil {
		f.policy = func(string) HostPolicy { return HostPolicy{MaxParallel: 2} }
	}
	if err := f.init(); err != nil {
		db.Close()
		return nil, err
	}
	go f.committer()
	go f.finisher()
	return f, nil
}

func (f *Frontier) init() error {
	if f.readOnly {
		return f.checkFormat()
	}
	err := f.check(f.writeTx(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		m := tx.Bucket(bucketMeta)
		if v := m.Get(keyFormat); v == nil {
			if err := m.Put(keyFormat, binary.BigEndian.AppendUint64(nil, formatVersion)); err != nil {
				return err
			}
		} else if err := checkFormat(v); err != nil {
			return err
		} else if binary.BigEndian.Uint64(v) < formatVersion {
			// Before anything moves: an older binary would take a
			// half-moved store for a damaged one.
			if err := m.Put(keyFormat, binary.BigEndian.AppendUint64(nil, formatVersion)); err != nil {
				return err
			}
		}
		if v := m.Get(keyCycle); len(v) == 8 {
			f.cycle.Store(binary.BigEndian.Uint64(v))
		}
		return nil
	}))
	if err != nil {
		if _, ok := err.(*StoreError); !ok {
			err = fmt.Errorf("state store %s: %w", f.dir, err)
		}
		return err
	}
	if err := f.migrate(); err != nil {
		return err
	}
	// Counted once the records are where this version reads them; a
	// store that has its counts opens without a write of its own.
	counted := false
	err = f.view(func(tx *bolt.Tx) error {
		counted = tx.Bucket(bucketBudget) != nil
		return nil
	})
	if err == nil && !counted {
		err = f.check(f.writeTx(countRecords))
	}
	if err != nil {
		if _, ok := err.(*StoreError); !ok {
			err = fmt.Errorf("state store %s: counting the records: %w", f.dir, err)
		}
		return err
	}
	return f.rebuild()
}

var allBuckets = [][]byte{bucketRecords, bucketIndex, bucketQueue, bucketHosts, bucketPending, bucketMeta, bucketKV, bucketLinks}

func checkFormat(v []byte) error {
	if len(v) != 8 || binary.BigEndian.Uint64(v) == 0 || binary.BigEndian.Uint64(v) > formatVersion {
		return fmt.Errorf("frontier: unsupported store format %x", v)
	}
	return nil
}

// checkFormat checks, for a read-only Open, what init would create: a store
// without every bucket was never opened for writing by this version.
func (f *Frontier) checkFormat() error {
	err := f.view(func(tx *bolt.Tx) error {
		if m := tx.Bucket(bucketMeta); m != nil {
			v := m.Get(keyFormat)
			if err := checkFormat(v); err != nil {
				return err
			}
			if binary.BigEndian.Uint64(v) < formatVersion || tx.Bucket(bucketURLsV2) != nil {
				return fmt.Errorf("store format %d is moved to format %d by the first command that writes (crawl, clear-errors): run one once", binary.BigEndian.Uint64(v), formatVersion)
			}
		}
		for _, name := range allBuckets {
			if tx.Bucket(name) == nil {
				return fmt.Errorf("bucket %q is missing: open it once with any command that writes (crawl, clear-errors)", name)
			}
		}
		f.cycle.Store(readCycle(tx))
		return nil
	})
	if err != nil {
		if _, ok := err.(*StoreError); !ok {
			err = fmt.Errorf("state store %s: %w", f.dir, err)
		}
	}
	return err
}

// rebuild finds the hosts with queued URLs: one seek per non-empty
// (host, level) queue, not a scan of the queue.
func (f *Frontier) rebuild() error {
	now := f.now()
	return f.view(func(tx *bolt.Tx) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		defer f.signal()
		// The queue names hosts by id: their keys are read once.
		names := make(map[uint32]string)
		if err := tx.Bucket(bucketHosts).ForEach(func(k, v []byte) error {
			if len(v) == 4 {
				names[binary.BigEndian.Uint32(v)] = string(k)
			}
			return nil
		}); err != nil {
			return err
		}
		c := tx.Bucket(bucketQueue).Cursor()
		var seek [qkeyLen]byte
		for k, _ := c.First(); k != nil; {
			if len(k) != qkeyLen {
				return fmt.Errorf("%w: queue key %x", errCorrupt, k)
			}
			id, lvl, _ := parseQKey(k)
			key, ok := names[id]
			if !ok {
				return fmt.Errorf("%w: queue key %x of no host", errCorrupt, k)
			}
			h := f.hosts[key]
			if h == nil {
				h = f.newHost(key)
			}
			h.id = id
			f.activate(h, lvl)
			if int(lvl)+1 < numLevels {
				k, _ = c.Seek(putQKey(seek[:0], id, lvl+1, 0))
			} else {
				k, _ = c.Seek(putQKey(seek[:0], id+1, 0, 0))
			}
		}
		for _, h := range f.hosts {
			f.place(h, now)
		}
		return nil
	})
}

// Close waits for pending writes, wakes blocked Next calls and closes the
// store. Leases still held are lost, which leaves their URLs Waiting.
func (f *Frontier) Close() error {
	f.closeMu.Lock()
	if f.closed {
		f.closeMu.Unlock()
		return nil
	}
	f.closed = true
	f.shut.Store(true)
	close(f.ops)
	f.closeMu.Unlock()
	<-f.committerDone
	<-f.finisherDone
	f.mu.Lock()
	close(f.quit)
	g := f.garbage
	f.garbage = nil
	f.mu.Unlock()
	var err error
	if len(g) > 0 && !f.readOnly && f.broken.Load() == nil {
		err = f.check(f.writeTx(func(tx *bolt.Tx) error { deleteKeys(tx, g); return nil }))
	}
	if f.stuck.Load() {
		// A write transaction was left open on damage (see writeTx):
		// closing would wait for it forever.
		return f.failure()
	}
	return errors.Join(err, f.db.Close())
}

// Cycle is the current discovery cycle.
func (f *Frontier) Cycle() uint64 { return f.cycle.Load() }

// BeginCycle starts a new discovery cycle and returns its number. In the new
// cycle, Add requeues known URLs given again as Start items.
func (f *Frontier) BeginCycle() (uint64, error) {
	var n uint64
	err := f.write(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		n = 1
		if v := m.Get(keyCycle); len(v) == 8 {
			n = binary.BigEndian.Uint64(v) + 1
		}
		return m.Put(keyCycle, binary.BigEndian.AppendUint64(nil, n))
	})
	if err != nil {
		return 0, err
	}
	f.cycle.Store(n)
	f.releaseHeld()
	f.mu.Lock()
	clear(f.pages)
	for _, h := range f.hosts {
		for i := range h.lv {
			h.lv[i].noted = 0 // a new cycle counts what its limits hold back anew
		}
	}
	held := f.heldBack || f.pausedBack
	f.heldBack, f.pausedBack = false, false
	f.mu.Unlock()
	if held {
		// What a page limit or a pause held back is due again, or passed
		// over again while its source stays paused.
		return n, f.rewindHeldBack()
	}
	return n, nil
}

func readCycle(tx *bolt.Tx) uint64 { return readCounter(tx, keyCycle) }

// readCounter is the meta bucket's counter under key, 0 before the first.
func readCounter(tx *bolt.Tx, key []byte) uint64 {
	if v := tx.Bucket(bucketMeta).Get(key); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

func (it *Item) validate() error {
	switch {
	case urlnorm.Origin(it.URL) == "":
		return fmt.Errorf("frontier: %q is not an absolute URL", it.URL)
	case len(it.URL) > urlnorm.MaxLength:
		return fmt.Errorf("frontier: URL of %d bytes is longer than the store holds (%d)", len(it.URL), urlnorm.MaxLength)
	case strings.IndexByte(it.URL, 0) >= 0:
		// No valid URL holds one, and in stores of format 2 a zero byte
		// marked the history keys beside the records.
		return fmt.Errorf("frontier: %q holds a zero byte", it.URL)
	case it.Class >= numClasses:
		return fmt.Errorf("frontier: %s: bad class %d", it.URL, it.Class)
	case it.Shift < MinShift || it.Shift > MaxShift:
		return fmt.Errorf("frontier: %s: priority shift %d out of [%d, %d]", it.URL, it.Shift, MinShift, MaxShift)
	case it.Depth < 0:
		return fmt.Errorf("frontier: %s: negative depth", it.URL)
	case it.Hops < 0 || it.Hops > 255:
		return fmt.Errorf("frontier: %s: %d redirect hops out of [0, 255]", it.URL, it.Hops)
	}
	return nil
}

// Add queues the items that are new in one transaction and returns how many
// were queued. A URL already known keeps its state, whatever it is (FDSE:
// the original state takes precedence); only a Start item given again in a
// later cycle than the one its URL was last queued in is queued again, and
// so is an orphan that was excluded for being one (Record.Orphan): a new
// link brings it back. A known URL's SeenCycle is brought up to date, and a
// newer sitemap Lastmod is kept.
func (f *Frontier) Add(items ...Item) (int, error) {
	var q queueing
	if err := q.prepare(f, items); err != nil || q.left == 0 {
		return 0, err
	}
	var (
		added int
		eff   effects
		notes []OverBudget
	)
	err := f.write(func(tx *bolt.Tx) error {
		eff.reset()
		w := newWtx(tx)
		var err error
		if added, err = q.apply(w, &eff); err != nil {
			return err
		}
		notes = w.t.notes
		return w.flush()
	})
	if err != nil {
		return 0, err
	}
	f.applyQueued(&eff)
	q.remember()
	f.notify(notes)
	return added, nil
}

// queueing is one Add: by itself, or inside the transaction that completes
// the page whose links these are.
type queueing struct {
	f     *Frontier
	items []Item
	keys  []uint64 // each item's LinkKey: the seen set's key, and the page's outlinks
	cycle uint64
	skip  []bool // known this cycle: nothing to do
	left  int
	// over marks the items a URL limit kept out of the store, in the last
	// run of apply.
	over  []bool
	nOver int
}

func (q *queueing) prepare(f *Frontier, items []Item) error {
	for i := range items {
		if err := items[i].validate(); err != nil {
			return err
		}
	}
	*q = queueing{f: f, items: items, keys: make([]uint64, len(items)), cycle: f.cycle.Load(), left: len(items)}
	// Items that could change nothing are left out: known this cycle, and
	// neither a Start item (which may be requeued) nor carrying a Lastmod.
	for i := range items {
		it := &items[i]
		q.keys[i] = LinkKey(it.URL)
		if it.Class != Start && it.Lastmod.IsZero() && f.seen.has(q.cycle, q.keys[i]) {
			if q.skip == nil {
				q.skip = make([]bool, len(items))
			}
			q.skip[i] = true
			q.left--
		}
	}
	return nil
}

// apply runs in a write transaction and may run more than once.
func (q *queueing) apply(w *wtx, eff *effects) (int, error) {
	f, cur, added := q.f, w.cycle, 0
	clear(q.over)
	q.nOver = 0
	var rec Record
	for i := range q.items {
		it := &q.items[i]
		if q.skip != nil && q.skip[i] && cur == q.cycle {
			continue
		}
		key, v, err := w.lookup(it.URL)
		if err != nil {
			return 0, err
		}
		if v == nil {
			if over, err := w.admit(f, it, true); err != nil || over != 0 {
				if err != nil {
					return 0, err
				}
				q.markOver(i)
				continue
			}
			if key, err = w.newKey(it.URL); err != nil {
				return 0, err
			}
			rec = Record{Item: *it, Cycle: cur, SeenCycle: cur}
			if err := w.enqueue(&rec, key, eff); err != nil {
				return 0, err
			}
			if err := f.queuedEvent(w, key, it); err != nil {
				return 0, err
			}
			added++
			continue
		}
		if err := decodeRecord(v, &rec, false); err != nil {
			return 0, fmt.Errorf("%w: %s", err, it.URL)
		}
		requeue := it.Class == Start && rec.Cycle < cur && rec.State != Waiting ||
			rec.State == Excluded && rec.Orphan
		newer := it.Lastmod.After(rec.Lastmod)
		if !requeue && !newer && rec.SeenCycle >= cur {
			continue
		}
		if err := decodeRecord(v, &rec, true); err != nil {
			return 0, fmt.Errorf("%w: %s", err, it.URL)
		}
		rec.SeenCycle = cur
		if newer {
			rec.Lastmod = it.Lastmod
		}
		if !requeue {
			if err := w.put(key, &rec, rec.Pending != ""); err != nil {
				return 0, err
			}
			continue
		}
		// Queued again, it is requested as it was found this time.
		rec.Class, rec.Shift, rec.Depth, rec.FoundAs = it.Class, it.Shift, it.Depth, it.FoundAs
		rec.State, rec.Reason, rec.Cycle, rec.Orphan = Waiting, "", cur, false
		if err := w.enqueue(&rec, key, eff); err != nil {
			return 0, err
		}
		if err := f.queuedEvent(w, key, it); err != nil {
			return 0, err
		}
		added++
	}
	return added, nil
}

func (q *queueing) markOver(i int) {
	if q.over == nil {
		q.over = make([]bool, len(q.items))
	}
	q.over[i] = true
	q.nOver++
}

// remember notes, once the transaction is committed, that every item is
// now known in the cycle; not those a limit kept out, which the store
// does not know.
func (q *queueing) remember() {
	if q.f == nil { // nothing was queued
		return
	}
	skip := q.skip
	if q.nOver > 0 {
		skip = make([]bool, len(q.items))
		for i := range skip {
			skip[i] = q.over[i] || q.skip != nil && q.skip[i]
		}
	}
	q.f.seen.add(q.cycle, q.keys, skip)
}

// outlinks are the LinkKeys of the items the store knows after apply, with
// links added: those a limit kept out are no links the walk could follow.
func (q *queueing) outlinks(links []uint64) []uint64 {
	out := append(make([]uint64, 0, len(links)+len(q.keys)-q.nOver), links...)
	for i, k := range q.keys {
		if !q.over[i] {
			out = append(out, k)
		}
	}
	return compactLinks(out)
}

// Exclude records URLs that were found but fall outside the crawl space,
// as Excluded with reason, so every URL's state says why it is not crawled.
// A URL already known keeps its state. It returns how many URLs were new,
// so a report counts each refused URL once.
func (f *Frontier) Exclude(reason string, items ...Item) (int, error) {
	if err := checkRefusal(reason, items); err != nil {
		return 0, err
	}
	if len(items) == 0 {
		return 0, nil
	}
	var (
		added int
		notes []OverBudget
	)
	err := f.write(func(tx *bolt.Tx) error {
		w := newWtx(tx)
		var err error
		if added, err = f.exclude(w, reason, "", items); err != nil {
			return err
		}
		notes = w.t.notes
		return w.flush()
	})
	if err == nil {
		f.notify(notes)
	}
	return added, err
}

func checkRefusal(reason string, items []Item) error {
	if reason == "" {
		return errors.New("frontier: Exclude without a reason")
	}
	for i := range items {
		if err := items[i].validate(); err != nil {
			return err
		}
	}
	return nil
}

// exclude runs in a write transaction and may run more than once; detail
// goes to each new URL's history. A URL over a URL limit is not recorded.
func (f *Frontier) exclude(w *wtx, reason, detail string, items []Item) (int, error) {
	added := 0
	for i := range items {
		if _, v, err := w.lookup(items[i].URL); err != nil {
			return 0, err
		} else if v != nil {
			continue
		}
		if over, err := w.admit(f, &items[i], false); err != nil || over != 0 {
			if err != nil {
				return 0, err
			}
			continue
		}
		key, err := w.newKey(items[i].URL)
		if err != nil {
			return 0, err
		}
		rec := Record{Item: items[i], State: Excluded, Reason: reason, Cycle: w.cycle, SeenCycle: w.cycle}
		if err := w.put(key, &rec, false); err != nil {
			return 0, err
		}
		if f.historyOn() {
			ev := Event{Kind: EventRefused, Reason: reason, Detail: detail, Source: items[i].Source, Depth: items[i].Depth, Via: items[i].Via}
			if err := f.event(w, key, &ev); err != nil {
				return 0, err
			}
		}
		added++
	}
	return added, nil
}

// Get returns a URL's record; InFlight when it is leased.
func (f *Frontier) Get(url string) (Record, bool, error) {
	if f.shut.Load() {
		return Record{}, false, ErrClosed
	}
	var (
		rec   Record
		found bool
	)
	err := f.view(func(tx *bolt.Tx) error {
		v, err := getRecord(tx, url)
		if err != nil || v == nil {
			return err
		}
		found = true
		return decodeRecord(v, &rec, true)
	})
	if err != nil || !found {
		return Record{}, false, err
	}
	f.mu.Lock()
	if f.leases[url].inFlight() {
		rec.State = InFlight
	}
	f.mu.Unlock()
	return rec, true, nil
}

// edit is one record edit of updateBatch: Fn changes the record (see
// updateBatch), and Events are appended to its history.
type edit struct {
	URL    string
	Events []Event
	Fn     func(*Record) error
	// Refetch asks a lease in flight on the URL to queue it again, to be
	// fetched whole, unless its outcome brings new content (see Refetch).
	Refetch bool
	// Group, when set, makes the change's part in the groups of
	// duplicates in its transaction, once Fn has made the record's and
	// unless the URL is leased; a refusal it returns is the change's.
	Group func(tx *bolt.Tx, rec *Record) (refused, err error)
	// Set by updateBatch. Err is ErrNotFound, ErrLeased, or the error Fn or
	// the changed record's check returned: the change was not made.
	// Otherwise Record is the record as stored.
	Err    error
	Record Record
}

// updateBatch makes changes in one transaction, in order. It returns an
// error only when the transaction failed; each change's own refusal is in
// its Err. Fn may run more than once and must not call the Frontier.
// Bookkeeping fields (DocID, Indexed, Pending, Target, validators…) can
// always change. The state can change too, except for a leased URL (it
// reads InFlight and must stay so, or ErrLeased is the refusal); a URL set
// to Waiting is queued at the tail of its class, and one taken out of
// Waiting leaves its queue. The URL and its source cannot change.
func (f *Frontier) updateBatch(changes []edit) error {
	var (
		eff     effects
		orphans bool
	)
	cl := claims{f: f}
	err := f.write(func(tx *bolt.Tx) error {
		eff.reset()
		orphans = false
		w := newWtx(tx)
		for i := range changes {
			c := &changes[i]
			key, err := f.change(w, c, &cl, &eff)
			if err != nil {
				return err
			}
			if c.Err != nil {
				continue
			}
			orphans = orphans || c.Record.Orphan
			for j := range c.Events {
				e := c.Events[j]
				if err := f.event(w, key, &e); err != nil {
					return err
				}
			}
		}
		return nil
	})
	cl.release()
	if err != nil {
		return err
	}
	f.applyQueued(&eff)
	if orphans {
		// A URL excluded as an orphan must be new to Add again.
		f.seen.reset()
	}
	return nil
}

// refusals is updateBatch returning each change's refusal, nil for one
// made.
func (f *Frontier) refusals(changes []edit) ([]error, error) {
	if err := f.updateBatch(changes); err != nil {
		return nil, err
	}
	errs := make([]error, len(changes))
	for i := range changes {
		errs[i] = changes[i].Err
	}
	return errs, nil
}

// change makes c within w's transaction: c.Err is a refusal (nothing
// written), c.Record the record as stored; err is a failure of the
// transaction. It returns the URL's key.
func (f *Frontier) change(w *wtx, c *edit, cl *claims, eff *effects) (key []byte, err error) {
	url := c.URL
	c.Err, c.Record = nil, Record{}
	key, v, err := w.lookup(url)
	if err != nil || v == nil {
		c.Err = ErrNotFound
		return key, err
	}
	var old Record
	if err := decodeRecord(v, &old, true); err != nil {
		return key, err
	}
	rec := old
	// A Fetched or Error URL may be leased for its aged check too.
	leased := (old.State == Waiting || old.State == Fetched || old.State == Error) && !cl.take(w, &old)
	if leased {
		rec.State = InFlight
	}
	if c.Err = c.Fn(&rec); c.Err != nil {
		return key, nil
	}
	// The URL and its source are what the budgets count it under.
	rec.URL, rec.Source, rec.qseq = url, old.Source, old.qseq
	if c.Err = rec.Item.validate(); c.Err != nil {
		return key, nil
	}
	if leased {
		if rec.State != InFlight {
			c.Err = ErrLeased
			return key, nil
		}
		if c.Refetch {
			f.refetchLeased(url)
		}
		rec.State = old.State
		c.Record = rec
		return key, w.put(key, &rec, old.Pending != "")
	}
	if c.Group != nil {
		if c.Err, err = c.Group(w.tx, &rec); c.Err != nil || err != nil {
			return key, err
		}
	}
	if rec.State >= numStates || rec.State == InFlight {
		c.Err = fmt.Errorf("frontier: %s: cannot set state %s", url, rec.State)
		return key, nil
	}
	moved := old.State == Waiting && rec.State == Waiting && level(rec.Class, rec.Shift) != level(old.Class, old.Shift)
	if old.State == Waiting && (rec.State != Waiting || moved) {
		if err := w.dequeue(&old); err != nil {
			return key, err
		}
	}
	if rec.State == Waiting && (old.State != Waiting || moved) {
		err = w.enqueueHad(&rec, key, eff, old.Pending != "")
		c.Record = rec
		return key, err
	}
	if rec.State != Waiting {
		rec.qseq = 0
	}
	c.Record = rec
	return key, w.put(key, &rec, old.Pending != "")
}

// GetMeta returns a value stored with PutMeta (for example a source's
// config fingerprint), nil when absent.
func (f *Frontier) GetMeta(key string) ([]byte, error) {
	if f.shut.Load() {
		return nil, ErrClosed
	}
	var out []byte
	err := f.view(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketKV).Get([]byte(key)); v != nil {
			out = append([]byte{}, v...)
		}
		return nil
	})
	return out, err
}

// PutMeta durably stores a small value under key; a nil value deletes it.
func (f *Frontier) PutMeta(key string, value []byte) error {
	k, v := []byte(key), append([]byte{}, value...)
	return f.write(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKV)
		if value == nil {
			return b.Delete(k)
		}
		return b.Put(k, v)
	})
}

// wtx is one op's view of a write transaction. Keys and values handed to
// bbolt must stay valid until the commit, so they are cut from an arena that
// is never overwritten: when append reallocates it, earlier slices keep the
// old array alive.
type wtx struct {
	tx *bolt.Tx
	// u holds the records (bucketRecords), x the index from URL to key.
	u, x, q, h, p *bolt.Bucket
	f             *Frontier // set by sweeps, whose helpers record history through it
	cycle         uint64
	// storedPending says whether the record sweep is changing had a
	// Pending write as stored, before the change edited it.
	storedPending bool
	arena         []byte
	scratch       []byte // for keys of lookups, which bbolt does not keep
	lastHost      string
	lastID        uint32
	// eventKey's newest event is eventSeq, written by this op.
	eventKey []byte
	eventSeq uint32
	// t counts what the op adds to or takes from the budgets; bb is their
	// bucket, opened by the first count.
	t  tally
	bb *bolt.Bucket
	// reachCounted says the op has counted its change in the reach
	// generation: once is enough.
	reachCounted bool
}

// queueFill is the queue bucket's fill percent: its keys are appended at
// the tail of each host's range and removed from the head, so pages split
// full instead of half full (measured: 23% fewer bytes per waiting URL).
// The URL bucket keeps the default: records grow when first fetched, and a
// full page would split again at once.
const queueFill = 0.95

func newWtx(tx *bolt.Tx) *wtx {
	tx.Bucket(bucketQueue).FillPercent = queueFill
	return &wtx{
		tx: tx,
		u:  tx.Bucket(bucketRecords), x: tx.Bucket(bucketIndex), q: tx.Bucket(bucketQueue),
		h: tx.Bucket(bucketHosts), p: tx.Bucket(bucketPending),
		cycle: readCycle(tx),
		arena: make([]byte, 0, 1024),
	}
}

func (w *wtx) bytes(s string) []byte {
	n := len(w.arena)
	w.arena = append(w.arena, s...)
	return w.arena[n:len(w.arena):len(w.arena)]
}

// put stores rec under key and keeps the pending index in step.
func (w *wtx) put(key []byte, rec *Record, hadPending bool) error {
	if v := rec.walkView(); v != rec.stored {
		if err := w.reachChanged(); err != nil {
			return err
		}
		rec.stored = v
	}
	n := len(w.arena)
	w.arena = appendRecord(w.arena, rec)
	if err := w.u.Put(key, w.arena[n:len(w.arena):len(w.arena)]); err != nil {
		return err
	}
	switch {
	case rec.Pending != "" && !hadPending:
		return w.p.Put(key, nil)
	case rec.Pending == "" && hadPending:
		return w.p.Delete(key)
	}
	return nil
}

func (w *wtx) hostID(hostKey string, create bool) (uint32, bool, error) {
	if hostKey == w.lastHost && w.lastHost != "" {
		return w.lastID, true, nil
	}
	if v := w.h.Get([]byte(hostKey)); len(v) == 4 {
		w.lastHost, w.lastID = hostKey, binary.BigEndian.Uint32(v)
		return w.lastID, true, nil
	}
	if !create {
		return 0, false, nil
	}
	seq, err := w.h.NextSequence()
	if err != nil {
		return 0, false, err
	}
	if seq > 1<<32-1 {
		return 0, false, errors.New("frontier: out of host ids")
	}
	id := uint32(seq)
	n := len(w.arena)
	w.arena = binary.BigEndian.AppendUint32(w.arena, id)
	if err := w.h.Put(w.bytes(hostKey), w.arena[n:n+4:n+4]); err != nil {
		return 0, false, err
	}
	w.lastHost, w.lastID = hostKey, id
	return id, true, nil
}

// enqueue stores rec as Waiting at the tail of its host's queue for its
// class and shift, and notes the queue in eff for the scheduler.
func (w *wtx) enqueue(rec *Record, key []byte, eff *effects) error {
	return w.enqueueHad(rec, key, eff, false)
}

func (w *wtx) enqueueHad(rec *Record, key []byte, eff *effects, hadPending bool) error {
	seq, err := w.putEntry(rec, level(rec.Class, rec.Shift), key, eff)
	if err != nil {
		return err
	}
	rec.State, rec.qseq = Waiting, seq
	return w.put(key, rec, hadPending)
}

// An aged check's queue entry (RequeueDue) is its record's key and the cut
// by which the record is due (Unix nanoseconds).
const dueEntryLen = recordKeyLen + 8

// enqueueDue queues rec, stored under key, for its aged check, due by
// olderThan, and leaves the record as it is.
func (w *wtx) enqueueDue(rec *Record, key []byte, eff *effects, olderThan time.Time) error {
	n := len(w.arena)
	w.arena = binary.BigEndian.AppendUint64(append(w.arena, key...), uint64(olderThan.UnixNano()))
	_, err := w.putEntry(rec, level(Refresh, rec.Shift), w.arena[n:len(w.arena):len(w.arena)], eff)
	return err
}

// putEntry appends an entry of value v to the tail of rec's host's queue
// lvl, notes the queue in eff, and returns the entry's sequence.
func (w *wtx) putEntry(rec *Record, lvl uint8, v []byte, eff *effects) (uint64, error) {
	hk := urlnorm.Origin(rec.URL)
	id, _, err := w.hostID(hk, true)
	if err != nil {
		return 0, err
	}
	seq, err := w.q.NextSequence()
	if err != nil {
		return 0, err
	}
	n := len(w.arena)
	w.arena = putQKey(w.arena, id, lvl, seq)
	if err := w.q.Put(w.arena[n:len(w.arena):len(w.arena)], v); err != nil {
		return 0, err
	}
	eff.add(hk, id, lvl)
	return seq, nil
}

// dequeue removes a Waiting record's queue entry.
func (w *wtx) dequeue(rec *Record) error {
	id, ok, err := w.hostID(urlnorm.Origin(rec.URL), false)
	if err != nil || !ok {
		return err
	}
	var k [qkeyLen]byte
	return w.q.Delete(putQKey(k[:0], id, level(rec.Class, rec.Shift), rec.qseq))
}

// Queue keys: host id (4 bytes), level (1), sequence (8), big-endian so a
// host's queues are contiguous and each is in FIFO order.
const qkeyLen = 13

func putQKey(b []byte, id uint32, lvl uint8, seq uint64) []byte {
	b = binary.BigEndian.AppendUint32(b, id)
	b = append(b, lvl)
	return binary.BigEndian.AppendUint64(b, seq)
}

func parseQKey(k []byte) (uint32, uint8, uint64) {
	return binary.BigEndian.Uint32(k), k[4], binary.BigEndian.Uint64(k[5:])
}

// effects collects the queues an op filled, applied to the scheduler once
// the op is committed.
type effects struct {
	q   []queued
	idx map[string]int
}

type queued struct {
	key  string
	id   uint32
	mask uint32
}

func (e *effects) reset() {
	e.q = e.q[:0]
	clear(e.idx)
}

func (e *effects) add(key string, id uint32, lvl uint8) {
	if n := len(e.q); n > 0 && e.q[n-1].key == key {
		e.q[n-1].mask |= 1 << lvl
		return
	}
	if e.idx == nil && len(e.q) >= 8 {
		e.idx = make(map[string]int, 16)
		for i, q := range e.q {
			e.idx[q.key] = i
		}
	}
	if e.idx != nil {
		if i, ok := e.idx[key]; ok {
			e.q[i].mask |= 1 << lvl
			return
		}
		e.idx[key] = len(e.q)
	} else {
		for i := range e.q {
			if e.q[i].key == key {
				e.q[i].mask |= 1 << lvl
				return
			}
		}
	}
	e.q = append(e.q, queued{key: key, id: id, mask: 1 << lvl})
}
