package frontier

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/crawlspace/crawlspace/urlnorm"
)

// Budgets (issue 12): a spider trap answers every URL with fresh links, so
// without a bound the store, and the mapped pages of its file, grow for as
// long as the crawl runs. Each source may hold at most Budget.URLs records
// (any state, refused URLs included) and Budget.URLsPerHost on one host, and
// queue URLs on at most Budget.Hosts hosts: these are totals, kept across
// cycles, and they keep the store finite. Budget.Pages and
// Budget.PagesPerHost bound the requests of one cycle, which keeps a cycle
// finite whatever the site does; URLs they hold back stay queued for the
// next cycle.
//
// The counts live in bucket "budget", changed in the transaction that adds,
// deletes or completes the records they count, so they survive a crash and
// stay exact under concurrent completions (one commit runs its changes one
// after the other). A URL over a URL budget is not stored: it is counted in
// its source's entry, with the first such URL kept as an example, and
// Options.OnBudget hears of it once the change is committed.
//
// Keys: "s" + source → the source's counts; "h" + source + 0 + host key →
// the source's counts on that host. A host gets its entry with the
// source's first record there and loses it with the last.

var bucketBudget = []byte("budget")

// Budget bounds one source. A zero field sets no limit.
type Budget struct {
	URLs         int64 // records of the source, in any state (max_urls)
	URLsPerHost  int64 // records of the source on one host (max_urls_per_host)
	Hosts        int64 // hosts the source queued URLs on (max_hosts)
	Pages        int64 // requests per cycle (max_pages_per_cycle)
	PagesPerHost int64 // requests per cycle to one host (max_pages_per_host_per_cycle)
}

// Limit names one limit of a Budget.
type Limit uint8

const (
	LimitURLs Limit = iota + 1
	LimitURLsPerHost
	LimitHosts
	LimitPages
	LimitPagesPerHost
	numLimits
)

var limitNames = [numLimits]string{"", "max_urls", "max_urls_per_host", "max_hosts",
	"max_pages_per_cycle", "max_pages_per_host_per_cycle"}

// String is the limit's configuration key, which is also its reason code.
func (l Limit) String() string {
	if l > 0 && l < numLimits {
		return limitNames[l]
	}
	return fmt.Sprintf("limit(%d)", uint8(l))
}

// Of is the limit's value in b.
func (l Limit) Of(b Budget) int64 {
	switch l {
	case LimitURLs:
		return b.URLs
	case LimitURLsPerHost:
		return b.URLsPerHost
	case LimitHosts:
		return b.Hosts
	case LimitPages:
		return b.Pages
	case LimitPagesPerHost:
		return b.PagesPerHost
	}
	return 0
}

// OverBudget is what a limit held back: URLs it kept out of the store (the
// URL limits), or queued URLs it left for the next cycle (the page limits).
type OverBudget struct {
	Source  string
	Limit   Limit
	Max     int64  // the limit's value
	Host    string // the host key, for a per-host limit
	URLs    int    // how many URLs it held back
	Example string // one of them
}

// Usage is what one source holds against its budget, as stored.
type Usage struct {
	URLs  int64 // records, in any state
	Hosts int64 // hosts it queued URLs on
	// Pages counts the requests made in Cycle, the last cycle that made one.
	Cycle uint64
	Pages int64
	// Refused counts the URLs a URL limit kept out of the store, ever;
	// Example is the first of them.
	Refused int64
	Example string
}

// HostUsage is what one source holds on one host.
type HostUsage struct {
	Host    string
	URLs    int64
	Queued  bool // the source queued URLs on it (it counts among its Hosts)
	Cycle   uint64
	Pages   int64
	Refused int64
}

// PagesIn is the source's requests in cycle.
func (u *Usage) PagesIn(cycle uint64) int64 {
	if u.Cycle != cycle {
		return 0
	}
	return u.Pages
}

// PagesIn is the requests to the host in cycle.
func (u *HostUsage) PagesIn(cycle uint64) int64 {
	if u.Cycle != cycle {
		return 0
	}
	return u.Pages
}

// Usage reads a source's counts.
func (f *Frontier) Usage(source string) (Usage, error) {
	if f.shut.Load() {
		return Usage{}, ErrClosed
	}
	var u Usage
	err := f.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketBudget)
		if b == nil {
			return nil // a store older than budgets, opened read-only
		}
		v := b.Get(sourceKey(nil, source))
		if v == nil {
			return nil
		}
		return decodeUsage(v, &u)
	})
	return u, err
}

// HostUsage reads a source's counts on one host (a HostKey); false when
// the source holds no URL there.
func (f *Frontier) HostUsage(source, host string) (HostUsage, bool, error) {
	if f.shut.Load() {
		return HostUsage{}, false, ErrClosed
	}
	var (
		u     HostUsage
		found bool
	)
	err := f.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketBudget)
		if b == nil {
			return nil
		}
		v := b.Get(hostKey(nil, source, host))
		if v == nil {
			return nil
		}
		found = true
		return decodeHostUsage(v, &u)
	})
	u.Host = host
	return u, found, err
}

// HostUsages reads a source's counts on every host it holds URLs on, in
// host key order.
func (f *Frontier) HostUsages(source string) ([]HostUsage, error) {
	if f.shut.Load() {
		return nil, ErrClosed
	}
	var out []HostUsage
	err := f.view(func(tx *bolt.Tx) error {
		prefix := hostKey(nil, source, "")
		b := tx.Bucket(bucketBudget)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			u := HostUsage{Host: string(k[len(prefix):])}
			if err := decodeHostUsage(v, &u); err != nil {
				return fmt.Errorf("%w: budget of %s", err, k)
			}
			out = append(out, u)
		}
		return nil
	})
	return out, err
}

func sourceKey(b []byte, source string) []byte {
	return append(append(b, 's'), source...)
}

func hostKey(b []byte, source, host string) []byte {
	return append(append(append(append(b, 'h'), source...), 0), host...)
}

// Encoding: a version byte, then uvarints (and for a source its example).
const usageVersion = 1

func appendUsage(b []byte, u *Usage) []byte {
	b = append(b, usageVersion)
	for _, v := range [...]uint64{uint64(u.URLs), uint64(u.Hosts), u.Cycle, uint64(u.Pages), uint64(u.Refused)} {
		b = binary.AppendUvarint(b, v)
	}
	return append(b, u.Example...)
}

func decodeUsage(b []byte, u *Usage) error {
	if len(b) < 1 || b[0] != usageVersion {
		return errCorrupt
	}
	d := decoder{b: b[1:]}
	u.URLs, u.Hosts = int64(d.uvarint()), int64(d.uvarint())
	u.Cycle, u.Pages, u.Refused = d.uvarint(), int64(d.uvarint()), int64(d.uvarint())
	u.Example = string(d.b)
	return d.err
}

func appendHostUsage(b []byte, u *HostUsage) []byte {
	var queued uint64
	if u.Queued {
		queued = 1
	}
	b = append(b, usageVersion)
	for _, v := range [...]uint64{uint64(u.URLs), queued, u.Cycle, uint64(u.Pages), uint64(u.Refused)} {
		b = binary.AppendUvarint(b, v)
	}
	return b
}

func decodeHostUsage(b []byte, u *HostUsage) error {
	if len(b) < 1 || b[0] != usageVersion {
		return errCorrupt
	}
	d := decoder{b: b[1:]}
	u.URLs, u.Queued = int64(d.uvarint()), d.uvarint() != 0
	u.Cycle, u.Pages, u.Refused = d.uvarint(), int64(d.uvarint()), int64(d.uvarint())
	if d.err == nil && len(d.b) != 0 {
		return errCorrupt
	}
	return d.err
}

// tally is one op's view of the counts it changes: each entry is read from
// the store once, changed in memory and written back by flush, so a page of
// a hundred links to its own host costs two reads and two writes.
type tally struct {
	srcs  []*srcTally
	hosts []*hostTally
	index map[[2]string]*hostTally // once there are many hosts
	notes []OverBudget
}

type srcTally struct {
	name  string
	b     Budget
	u     Usage
	dirty bool
}

type hostTally struct {
	src   *srcTally
	u     HostUsage
	dirty bool
}

func (w *wtx) budget() *bolt.Bucket {
	if w.bb == nil {
		w.bb = w.tx.Bucket(bucketBudget)
	}
	return w.bb
}

func (w *wtx) source(f *Frontier, name string) (*srcTally, error) {
	for _, s := range w.t.srcs {
		if s.name == name {
			return s, nil
		}
	}
	s := &srcTally{name: name, b: f.budgets[name]}
	n := len(w.arena)
	w.arena = sourceKey(w.arena, name)
	v := w.budget().Get(w.arena[n:])
	w.arena = w.arena[:n]
	if v != nil {
		if err := decodeUsage(v, &s.u); err != nil {
			return nil, fmt.Errorf("%w: budget of source %q", err, name)
		}
	}
	w.t.srcs = append(w.t.srcs, s)
	return s, nil
}

const tallyIndexAt = 16

func (w *wtx) host(s *srcTally, host string) (*hostTally, error) {
	t := &w.t
	if t.index != nil {
		if h := t.index[[2]string{s.name, host}]; h != nil {
			return h, nil
		}
	} else {
		for _, h := range t.hosts {
			if h.src == s && h.u.Host == host {
				return h, nil
			}
		}
	}
	h := &hostTally{src: s, u: HostUsage{Host: host}}
	n := len(w.arena)
	w.arena = hostKey(w.arena, s.name, host)
	v := w.budget().Get(w.arena[n:])
	w.arena = w.arena[:n]
	if v != nil {
		if err := decodeHostUsage(v, &h.u); err != nil {
			return nil, fmt.Errorf("%w: budget of source %q on %s", err, s.name, host)
		}
	}
	t.hosts = append(t.hosts, h)
	if t.index == nil && len(t.hosts) > tallyIndexAt {
		t.index = make(map[[2]string]*hostTally, 2*len(t.hosts))
		for _, h := range t.hosts {
			t.index[[2]string{h.src.name, h.u.Host}] = h
		}
	} else if t.index != nil {
		t.index[[2]string{s.name, host}] = h
	}
	return h, nil
}

// admit counts a new record of it against its source's budget, or, when a
// limit is reached, counts the URL as refused and returns that limit: the
// caller then stores nothing. queue says the URL is to be queued, which
// makes its host one of the source's hosts. A Start item to be queued is
// always admitted: the configured start URLs are few, and a source must be
// able to begin again.
func (w *wtx) admit(f *Frontier, it *Item, queue bool) (Limit, error) {
	s, err := w.source(f, it.Source)
	if err != nil {
		return 0, err
	}
	h, err := w.host(s, urlnorm.Origin(it.URL))
	if err != nil {
		return 0, err
	}
	newHost := queue && !h.u.Queued
	if !queue || it.Class != Start {
		b := &s.b
		over := Limit(0)
		switch {
		case b.URLs > 0 && s.u.URLs >= b.URLs:
			over = LimitURLs
		case b.URLsPerHost > 0 && h.u.URLs >= b.URLsPerHost:
			over = LimitURLsPerHost
		case newHost && b.Hosts > 0 && s.u.Hosts >= b.Hosts:
			over = LimitHosts
		}
		if over != 0 {
			w.refuse(s, h, over, it.URL)
			return over, nil
		}
	}
	s.u.URLs++
	h.u.URLs++
	if newHost {
		h.u.Queued = true
		s.u.Hosts++
	}
	s.dirty, h.dirty = true, true
	return 0, nil
}

// refuse counts a URL a limit kept out. A host the source holds no URL on
// gets no entry for it: a trap linking to ever new hosts must not grow the
// store that way.
func (w *wtx) refuse(s *srcTally, h *hostTally, l Limit, url string) {
	s.u.Refused++
	if s.u.Example == "" {
		s.u.Example = url
	}
	s.dirty = true
	if h.u.URLs > 0 {
		h.u.Refused++
		h.dirty = true
	}
	host := ""
	if l == LimitURLsPerHost {
		host = h.u.Host
	}
	w.t.notes = noteOver(w.t.notes, OverBudget{Source: s.name, Limit: l, Max: l.Of(s.b), Host: host, URLs: 1, Example: url})
}

// noteOver adds n to the note of the same source, limit and host, or
// appends it.
func noteOver(notes []OverBudget, n OverBudget) []OverBudget {
	for i := range notes {
		o := &notes[i]
		if o.Source == n.Source && o.Limit == n.Limit && o.Host == n.Host {
			o.URLs += n.URLs
			return notes
		}
	}
	return append(notes, n)
}

// fetched counts a request made in the transaction's cycle.
func (w *wtx) fetched(f *Frontier, source, host string) error {
	s, err := w.source(f, source)
	if err != nil {
		return err
	}
	h, err := w.host(s, host)
	if err != nil {
		return err
	}
	if s.u.Cycle != w.cycle {
		s.u.Cycle, s.u.Pages = w.cycle, 0
	}
	if h.u.Cycle != w.cycle {
		h.u.Cycle, h.u.Pages = w.cycle, 0
	}
	s.u.Pages++
	h.u.Pages++
	s.dirty, h.dirty = true, true
	return nil
}

// flush writes back the counts the op changed; a host left with no URL
// loses its entry.
func (w *wtx) flush() error {
	b := w.budget()
	for _, s := range w.t.srcs {
		if !s.dirty {
			continue
		}
		n := len(w.arena)
		w.arena = sourceKey(w.arena, s.name)
		m := len(w.arena)
		w.arena = appendUsage(w.arena, &s.u)
		if err := b.Put(w.arena[n:m:m], w.arena[m:len(w.arena):len(w.arena)]); err != nil {
			return err
		}
	}
	for _, h := range w.t.hosts {
		if !h.dirty {
			continue
		}
		n := len(w.arena)
		w.arena = hostKey(w.arena, h.src.name, h.u.Host)
		m := len(w.arena)
		if h.u.URLs == 0 {
			if err := b.Delete(w.arena[n:m:m]); err != nil {
				return err
			}
			continue
		}
		w.arena = appendHostUsage(w.arena, &h.u)
		if err := b.Put(w.arena[n:m:m], w.arena[m:len(w.arena):len(w.arena)]); err != nil {
			return err
		}
	}
	return nil
}

// notify tells Options.OnBudget what a committed change held back.
func (f *Frontier) notify(notes []OverBudget) {
	if f.onBudget == nil {
		return
	}
	for _, n := range notes {
		f.onBudget(n)
	}
}

// countRecords builds the counts of a store written before budgets: one
// walk over the records, in the transaction that creates their bucket. A
// host counts as queued on when the source has a record there that was
// queued (not refused) or fetched. The requests of the cycle under way are
// not known and start from zero.
func countRecords(tx *bolt.Tx) error {
	srcs := map[string]*Usage{}
	hosts := map[[2]string]*HostUsage{}
	c := tx.Bucket(bucketRecords).Cursor()
	var r Record
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if isHistoryKey(k) {
			continue
		}
		if err := decodeRecord(v, &r, true); err != nil {
			return fmt.Errorf("%w: record %x", err, k)
		}
		s := srcs[r.Source]
		if s == nil {
			s = &Usage{}
			srcs[r.Source] = s
		}
		hk := [2]string{r.Source, urlnorm.Origin(r.URL)}
		h := hosts[hk]
		if h == nil {
			h = &HostUsage{Host: hk[1]}
			hosts[hk] = h
		}
		s.URLs++
		h.URLs++
		if !h.Queued && (r.State != Excluded || !r.CheckedAt.IsZero()) {
			h.Queued = true
			s.Hosts++
		}
	}
	b, err := tx.CreateBucket(bucketBudget)
	if err != nil {
		return err
	}
	for name, u := range srcs {
		if err := b.Put(sourceKey(nil, name), appendUsage(nil, u)); err != nil {
			return err
		}
	}
	for k, u := range hosts {
		if err := b.Put(hostKey(nil, k[0], k[1]), appendHostUsage(nil, u)); err != nil {
			return err
		}
	}
	return nil
}

// The page limits are enforced when a URL is leased: each lease reserves a
// request of its source and host until its outcome is stored, so a cycle
// never makes more requests than a limit allows, however many workers
// run. A lease that made no request (robots.txt refused it, say) gives its
// reservation back uncounted.

type pageKey struct{ source, host string }

// pageUse is the requests of the cycle under way: stored, and leased.
type pageUse struct {
	pages, leased int64
}

// pageUses returns the cycle's page counts of source, and of source on
// host, read from the store the first time they are needed in a cycle and
// kept in memory from then on: every later change to them passes through
// the lease and its completion. f.mu is held.
func (f *Frontier) pageUses(tx *bolt.Tx, source, host string) (*pageUse, *pageUse, error) {
	su, err := f.pageUse(tx, source, "")
	if err != nil {
		return nil, nil, err
	}
	hu, err := f.pageUse(tx, source, host)
	return su, hu, err
}

func (f *Frontier) pageUse(tx *bolt.Tx, source, host string) (*pageUse, error) {
	if p := f.pages[pageKey{source, host}]; p != nil {
		return p, nil
	}
	cycle := f.cycle.Load()
	p := &pageUse{}
	b := tx.Bucket(bucketBudget)
	if host == "" {
		if v := b.Get(sourceKey(nil, source)); v != nil {
			var u Usage
			if err := decodeUsage(v, &u); err != nil {
				return nil, fmt.Errorf("%w: budget of source %q", err, source)
			}
			p.pages = u.PagesIn(cycle)
		}
	} else if v := b.Get(hostKey(nil, source, host)); v != nil {
		var u HostUsage
		if err := decodeHostUsage(v, &u); err != nil {
			return nil, fmt.Errorf("%w: budget of source %q on %s", err, source, host)
		}
		p.pages = u.PagesIn(cycle)
	}
	f.pages[pageKey{clone(source), clone(host)}] = p
	return p, nil
}

func clone(s string) string { return string(append([]byte(nil), s...)) }

// overPages says which page limit, if any, a new lease of a URL of source
// on host would pass; it reserves the request when none would.
func (f *Frontier) overPages(tx *bolt.Tx, l *lease) (Limit, error) {
	b, ok := f.budgets[l.rec.Source]
	if !ok || b.Pages <= 0 && b.PagesPerHost <= 0 {
		return 0, nil
	}
	su, hu, err := f.pageUses(tx, l.rec.Source, l.h.key)
	if err != nil {
		return 0, err
	}
	switch {
	case b.Pages > 0 && su.pages+su.leased >= b.Pages:
		return LimitPages, nil
	case b.PagesPerHost > 0 && hu.pages+hu.leased >= b.PagesPerHost:
		return LimitPagesPerHost, nil
	}
	su.leased++
	hu.leased++
	l.su, l.hu = su, hu
	return 0, nil
}

// unreserve ends a lease's reservation, counting the request when one was
// made and stored. f.mu is held.
func (l *lease) unreserve(counted bool) {
	if l.su == nil {
		return
	}
	l.su.leased--
	l.hu.leased--
	if counted {
		l.su.pages++
		l.hu.pages++
	}
	l.su, l.hu = nil, nil
}

// noteHeldBack records a queued URL a page limit leaves for the next
// cycle, for OnBudget. f.mu is held.
func (f *Frontier) noteHeldBack(l Limit, source, host, url string) {
	n := OverBudget{Source: source, Limit: l, Max: l.Of(f.budgets[source]), URLs: 1}
	if l == LimitPagesPerHost {
		n.Host = host
	}
	for i := range f.notes {
		if o := &f.notes[i]; o.Source == n.Source && o.Limit == n.Limit && o.Host == n.Host {
			o.URLs++
			return
		}
	}
	n.Source, n.Host, n.Example = clone(source), clone(n.Host), clone(url)
	f.notes = append(f.notes, n)
}

// takeNotes hands over the notes gathered under f.mu, to be given to
// OnBudget once it is released.
func (f *Frontier) takeNotesLocked() []OverBudget {
	n := f.notes
	f.notes = nil
	return n
}

// heldBackChunk bounds the queue entries one call of Next passes over
// for a page limit, so a host with a million URLs held back never holds
// the scheduler's lock for long.
const heldBackChunk = 256

// rewindHeldBack makes the queue entries passed over for a page limit in
// the last cycle visible again: the hosts that passed some over read their
// queues from the start, and rebuild activates every queue with entries.
func (f *Frontier) rewindHeldBack() error {
	f.mu.Lock()
	for _, h := range f.hosts {
		if h.heldBack || h.pausedBack {
			h.heldBack, h.pausedBack = false, false
			for i := range h.lv {
				h.lv[i].last = 0
			}
		}
	}
	f.mu.Unlock()
	return f.rebuild()
}
