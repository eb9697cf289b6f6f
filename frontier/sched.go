package frontier

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/crawlspace/crawlspace/urlnorm"
)

// levelState is one of a host's (class, shift) queues.
type levelState struct {
	level uint8
	// pass is the stride scheduler's virtual time at which the queue is
	// next due; the queue with the lowest pass is served.
	pass uint64
	// last is the highest sequence this process has looked at in the queue:
	// entries up to it are leased, claimed, gone or held back by a page
	// limit or a pause, so the next seek starts after it.
	last uint64
	// noted is the highest sequence whose hold-back by a page limit was
	// counted in this cycle: a queue read again when a source resumes
	// passes over them again without counting them twice.
	noted uint64
}

// host is the scheduling state of one scheme://host:port with work, leases
// or a pending delay. It is dropped when it has none of these.
type host struct {
	key      string
	id       uint32
	pol      HostPolicy
	inflight int
	readyAt  time.Time
	mask     uint32 // queues that may hold entries; a hint checked on disk
	vtime    uint64
	lv       []levelState
	// heldBack says pop passed over entries for a page limit in this
	// cycle: the host is kept, idle or not, so that its queues are not
	// read from the start again (which would pass over them twice), and
	// the next cycle rewinds them.
	heldBack bool
	// pausedBack says pop passed over entries of a paused source: the
	// host is kept, so that a resume finds its queues to read again.
	pausedBack bool
	// hasWork says a look at its queues while the scheduler was idle
	// found a real entry (see settleIdleLocked), so the next one need not
	// look again; a lease or a claim taken from the host clears it.
	hasWork bool

	where      uint8
	prev, next *host
	hidx       int
}

const (
	placeNone  = iota // parked: no work, or all its slots leased
	placeReady        // in the ready list
	placeTimer        // in the timer heap, waiting for readyAt
)

func (f *Frontier) policyFor(key string) HostPolicy {
	p := f.policy(key)
	p.MaxParallel = max(p.MaxParallel, 1)
	p.Delay = max(p.Delay, 0)
	return p
}

func (f *Frontier) newHost(key string) *host {
	key = strings.Clone(key) // HostKey returns a slice of a URL
	h := &host{key: key, pol: f.policyFor(key), hidx: -1}
	f.hosts[key] = h
	return h
}

func (h *host) state(l uint8) *levelState {
	for i := range h.lv {
		if h.lv[i].level == l {
			return &h.lv[i]
		}
	}
	h.lv = append(h.lv, levelState{level: l})
	return &h.lv[len(h.lv)-1]
}

// activate marks a queue non-empty. A queue that was idle starts one stride
// after the host's current virtual time, so idleness earns no burst and a
// freshly filled light queue does not jump ahead of a heavy one.
func (f *Frontier) activate(h *host, l uint8) {
	if h.mask&(1<<l) != 0 {
		return
	}
	if h.mask == 0 {
		f.busy++
	}
	h.mask |= 1 << l
	s := h.state(l)
	s.pass = max(s.pass, h.vtime+levelStride(l))
}

func (f *Frontier) deactivate(h *host, l uint8) {
	if h.mask&(1<<l) == 0 {
		return
	}
	h.mask &^= 1 << l
	if h.mask == 0 {
		f.busy--
	}
}

// pick returns the active queue with the lowest pass, the lower level on ties.
func (h *host) pick() *levelState {
	var best *levelState
	for i := range h.lv {
		s := &h.lv[i]
		if h.mask&(1<<s.level) == 0 {
			continue
		}
		if best == nil || s.pass < best.pass || s.pass == best.pass && s.level < best.level {
			best = s
		}
	}
	return best
}

// place puts h where its state says it belongs. A host already in the ready
// list keeps its turn.
func (f *Frontier) place(h *host, now time.Time) {
	want := placeNone
	switch {
	case h.mask == 0:
		if h.inflight == 0 {
			if !h.readyAt.After(now) {
				f.unplace(h)
				if !h.heldBack && !h.pausedBack {
					delete(f.hosts, h.key)
				}
				return
			}
			want = placeTimer // kept so its delay holds if work arrives
		}
	case h.inflight >= h.pol.MaxParallel:
	case h.readyAt.After(now):
		want = placeTimer
	default:
		want = placeReady
	}
	if want == int(h.where) {
		if want == placeTimer {
			heap.Fix(&f.timers, h.hidx)
		}
		return
	}
	f.unplace(h)
	switch want {
	case placeReady:
		f.ready.pushBack(h)
	case placeTimer:
		heap.Push(&f.timers, h)
	}
	h.where = uint8(want)
}

func (f *Frontier) unplace(h *host) {
	switch h.where {
	case placeReady:
		f.ready.remove(h)
	case placeTimer:
		heap.Remove(&f.timers, h.hidx)
	}
	h.where = placeNone
}

// signal wakes the goroutines blocked in Next, if any.
func (f *Frontier) signal() {
	if f.waiting {
		close(f.wake)
		f.wake = make(chan struct{})
		f.waiting = false
	}
}

func (f *Frontier) applyQueued(eff *effects) {
	if len(eff.q) == 0 {
		return
	}
	f.mu.Lock()
	f.applyQueuedLocked(eff, f.now())
	f.signal()
	f.mu.Unlock()
}

func (f *Frontier) applyQueuedLocked(eff *effects, now time.Time) {
	for _, q := range eff.q {
		h := f.hosts[q.key]
		if h == nil {
			h = f.newHost(q.key)
		}
		h.id = q.id
		for m := q.mask; m != 0; m &= m - 1 {
			f.activate(h, uint8(trailingZeros(m)))
		}
		f.place(h, now)
	}
}

func trailingZeros(m uint32) int {
	n := 0
	for m&1 == 0 {
		m >>= 1
		n++
	}
	return n
}

// rewind makes a queue entry visible again to this process after a lease or
// claim on it ended without removing it.
func (f *Frontier) rewind(h *host, l uint8, seq uint64, now time.Time) {
	s := h.state(l)
	if s.last >= seq {
		s.last = seq - 1
	}
	f.activate(h, l)
	f.place(h, now)
}

// Backoff keeps hostKey from getting a new lease before until (Retry-After,
// 429 or 503). It never shortens an earlier backoff or delay.
func (f *Frontier) Backoff(hostKey string, until time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	h := f.hosts[hostKey]
	if h == nil {
		if !until.After(now) {
			return
		}
		h = f.newHost(hostKey)
	}
	if until.After(h.readyAt) {
		h.readyAt = until
	}
	f.place(h, now)
	f.signal()
}

// Request waits for a slot of hostKey that its politeness lets start now,
// for a request that is no queued URL's, and takes it: done frees it and
// starts the host's delay, as a lease's completion does. Leases and such
// requests take turns by whoever asks first once the host is ready.
func (f *Frontier) Request(ctx context.Context, hostKey string) (done func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err // a slot free at once is not taken for a request no one waits for
	}
	var w waiter
	defer w.stop()
	for {
		f.mu.Lock()
		done, wait, err := f.tryRequestLocked(hostKey)
		woken := f.wake
		if done == nil && err == nil {
			f.waiting = true
		}
		f.mu.Unlock()
		if done != nil || err != nil {
			return done, err
		}
		// A broken store is Next's to report: the slot it gives is only
		// an answer's wait.
		if err := f.sleep(ctx, &w, woken, wait, nil); err != nil {
			return nil, err
		}
	}
}

// waiter is the timer a goroutine waiting in the scheduler reuses.
type waiter struct{ t *time.Timer }

// after is a channel that receives once wait has passed; nil, which never
// receives, for a negative wait.
func (w *waiter) after(wait time.Duration) <-chan time.Time {
	if wait < 0 {
		return nil
	}
	if w.t == nil {
		w.t = time.NewTimer(wait)
	} else {
		w.t.Reset(wait)
	}
	return w.t.C
}

func (w *waiter) stop() {
	if w.t != nil {
		w.t.Stop()
	}
}

// tryRequestLocked takes a slot of hostKey for Request when one is free
// and the host's delay is over; else it says how long until the delay is
// over, or -1 when only a slot's end can help.
func (f *Frontier) tryRequestLocked(hostKey string) (done func(), wait time.Duration, err error) {
	if f.shut.Load() {
		return nil, 0, ErrClosed
	}
	now := f.now()
	h := f.hosts[hostKey]
	if h == nil {
		h = f.newHost(hostKey)
	}
	if h.inflight >= h.pol.MaxParallel {
		return nil, -1, nil
	}
	if h.readyAt.After(now) {
		return nil, h.readyAt.Sub(now), nil
	}
	h.inflight++
	f.place(h, now)
	return func() { f.endRequest(h) }, 0, nil
}

// endRequest frees the slot a Request took and starts the host's delay.
// The host stays in f.hosts while the slot is taken (place keeps a host
// with one in flight), so h is the host's current entry.
func (f *Frontier) endRequest(h *host) {
	pol := f.policyFor(h.key)
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	h.inflight--
	h.pol = pol
	if t := now.Add(pol.Delay); t.After(h.readyAt) {
		h.readyAt = t
	}
	f.place(h, now)
	f.signal()
}

// Stats are the scheduler's in-memory figures, cheap enough for metrics.
type Stats struct {
	Hosts    int // hosts with work, leases or a pending delay
	Ready    int // hosts that could be leased from now
	Busy     int // hosts that may have queued URLs
	InFlight int
}

// Stats returns the scheduler's figures without touching the disk.
func (f *Frontier) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Stats{Hosts: len(f.hosts), Ready: f.ready.n, Busy: f.busy, InFlight: f.working}
}

// lease is the Frontier's Lease. In memory only: on disk its URL stays
// Waiting, so a crash gives it back.
type lease struct {
	f     *Frontier
	h     *host
	rec   Record
	key   []byte // the record's key
	level uint8
	seq   uint64
	done  bool
	// due: the entry is an aged check's (RequeueDue), whose record is not
	// Waiting; the outcome queues it as Refresh in this cycle too.
	due bool

	// A claim is a placeholder in Frontier.leases for a change in progress.
	claim bool
	refs  int
	// dueLevels are the levels whose aged check of the claimed URL pop
	// passed over: the claim's end makes them active again.
	dueLevels uint32
	// held: the outcome could not be recorded (see holdLocked).
	held bool
	// refetch: Refetch asked for the URL while the lease was in flight;
	// written: the outcome's change is in a transaction, which ends the
	// lease once committed. Atomic rather than under Frontier.mu, which
	// the committer would otherwise take twice a page for them.
	refetch, written atomic.Bool

	// The request made for the lease, for the history (see Fetched).
	bytes int64
	took  time.Duration

	// The page counts the lease reserved a request of (see overPages).
	su, hu *pageUse
}

// inFlight says whether l is a lease a worker holds: not a claim, and not
// a URL held back after a failed outcome (Waiting on disk, and shown so).
func (l *lease) inFlight() bool { return l != nil && !l.claim && !l.held }

// Item is the leased URL as it was queued.
func (l *lease) Item() Item { return l.rec.Item }

// Record is the URL's stored state when it was leased: validators for a
// conditional request, error counts, sync bookkeeping.
func (l *lease) Record() Record {
	r := l.rec
	r.State = InFlight
	return r
}

// HostKey is the scheduling key of the leased URL's host.
func (l *lease) HostKey() string { return l.h.key }

var errLeaseDone = errors.New("frontier: lease already completed or released")

// Next returns the next URL to fetch, waiting until a host is ready. It
// returns ErrDone when nothing is waiting and nothing is in flight, ctx's
// error when ctx ends, ErrClosed when the Frontier is closed, and the
// *StoreError once the store is broken: what cannot be recorded is not
// fetched.
func (f *Frontier) Next(ctx context.Context) (Lease, error) {
	var w waiter
	defer w.stop()
	for {
		// An ended ctx wins over ready work: a worker that releases its
		// lease on cancellation would otherwise be handed it straight back.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f.mu.Lock()
		l, wait, more, err := f.tryNextLocked()
		notes := f.takeNotesLocked()
		woken := f.wake
		if !more {
			f.waiting = true
		}
		f.mu.Unlock()
		f.notify(notes)
		if l != nil {
			return l, nil
		}
		if err != nil {
			return nil, err
		}
		if more {
			continue
		}
		if err := f.sleep(ctx, &w, woken, wait, f.brokenCh); err != nil {
			return nil, err
		}
	}
}

// sleep waits for a signal (woken), wait (none when negative), broken to
// close, ctx's end or the store's close; only the last two are errors.
func (f *Frontier) sleep(ctx context.Context, w *waiter, woken <-chan struct{}, wait time.Duration, broken <-chan struct{}) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-woken:
	case <-w.after(wait):
	case <-f.quit:
		return ErrClosed
	case <-broken:
	}
	return nil
}

// tryNextLocked returns a lease, or how long to wait, or more: it passed
// over a chunk of URLs held back by a page limit and should be called again
// once the lock has been let go.
func (f *Frontier) tryNextLocked() (l *lease, wait time.Duration, more bool, err error) {
	if f.shut.Load() {
		return nil, 0, false, ErrClosed
	}
	if se := f.broken.Load(); se != nil {
		return nil, 0, false, se
	}
	now := f.now()
	for len(f.timers) > 0 && !f.timers[0].readyAt.After(now) {
		f.place(f.timers[0], now)
	}
	var tx *bolt.Tx
	defer func() {
		if tx != nil {
			tx.Rollback()
		}
	}()
	// pop reads the mapped file: a damaged page panics in bbolt (see guard).
	defer func() {
		if r := recover(); r != nil {
			l, wait, more, err = nil, 0, false, f.fail(damaged("%v", r), true)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	for f.ready.n > 0 {
		h := f.ready.head
		if tx == nil {
			var err error
			if tx, err = f.db.Begin(false); err != nil {
				return nil, 0, false, err
			}
		}
		l, more, err := f.pop(tx, h)
		if err != nil {
			return nil, 0, false, f.check(err)
		}
		if more {
			f.unplace(h) // its turn is over
			f.place(h, now)
			return nil, 0, true, nil
		}
		if l == nil {
			f.place(h, now)
			continue
		}
		h.inflight++
		h.hasWork = false
		f.working++
		f.leases[l.rec.URL] = l
		f.unplace(h) // to the back of the ready list, if it stays ready
		f.place(h, now)
		return l, 0, false, nil
	}
	if f.working == 0 && f.claimed == 0 && f.busy > 0 {
		if tx == nil {
			var err error
			if tx, err = f.db.Begin(false); err != nil {
				return nil, 0, false, err
			}
		}
		more, err := f.settleIdleLocked(tx, now)
		if err != nil || more {
			return nil, 0, false, f.check(err)
		}
	}
	// A claimed URL may go back to its queue when the change holding it
	// ends (release signals), so the cycle is not over while one is held.
	if f.working == 0 && f.busy == 0 && f.claimed == 0 {
		return nil, 0, false, ErrDone
	}
	if len(f.timers) > 0 {
		return nil, f.timers[0].readyAt.Sub(now), false, nil
	}
	return nil, -1, false, nil
}

// settleIdleLocked looks at the queues of the hosts waiting out a delay
// when nothing is leased, claimed or ready. A host's mask only says its
// queues may hold entries; a pop that finds one empty clears it, but when a
// host's last URL was leased and done with no pop of the host in between
// (one worker, or the others busy elsewhere), the host went to wait out its
// delay still marked busy, and the cycle waited that delay (an hour, if
// configured so) for nothing. A look is a pop given back: the host keeps
// its turn and its place in the queue, and is not looked at again until
// its next lease. more is pop's: entries held back by a page limit were
// passed over and the caller should come back.
func (f *Frontier) settleIdleLocked(tx *bolt.Tx, now time.Time) (more bool, err error) {
	var look []*host
	for _, h := range f.timers {
		if h.mask != 0 && !h.hasWork && h.inflight == 0 {
			look = append(look, h)
		}
	}
	for _, h := range look {
		vtime := h.vtime
		l, more, err := f.pop(tx, h)
		if err != nil || more {
			return more, err
		}
		if l == nil {
			f.place(h, now) // every queue was empty: the host only waits its delay
			continue
		}
		// Undo the lease pop made: its reservation, its place in the
		// queue, and the turn it took (pop moves only its level's pass).
		l.unreserve(false)
		s := h.state(l.level)
		if s.last >= l.seq {
			s.last = l.seq - 1
		}
		s.pass -= levelStride(l.level)
		h.vtime = vtime
		h.hasWork = true
	}
	return false, nil
}

// pop finds h's next entry on disk: the queue chosen by stride, its first
// entry after the ones already leased or claimed. Entries a page limit
// holds back are passed over, at most heldBackChunk a call: more says
// there may be others to look at.
func (f *Frontier) pop(tx *bolt.Tx, h *host) (_ *lease, more bool, _ error) {
	c := tx.Bucket(bucketQueue).Cursor()
	u := tx.Bucket(bucketRecords)
	var seek [qkeyLen]byte
	held := 0
	for h.mask != 0 {
		s := h.pick()
		// again is the first entry of a URL still leased that its lease
		// did not come from: queued again by an outcome stored but not yet
		// called back (a temporary failure). The queue's position must not
		// pass it, or it is never leased: the callback finds the queue
		// active and leaves the position alone.
		var again uint64
		keep := func() {
			if again != 0 && s.last >= again {
				s.last = again - 1
			}
		}
		k, v := c.Seek(putQKey(seek[:0], h.id, s.level, s.last+1))
		for ; k != nil; k, v = c.Next() {
			if len(k) != qkeyLen {
				return nil, false, fmt.Errorf("%w: queue key %x", errCorrupt, k)
			}
			id, lvl, seq := parseQKey(k)
			if id != h.id || lvl != s.level {
				break
			}
			s.last = seq
			// An entry left from before format 3 names a URL, and no
			// record: stale, like one whose record moved on. An aged
			// check's entry (RequeueDue) adds its cut to the record key.
			var rv []byte
			due := len(v) == dueEntryLen
			if len(v) == recordKeyLen || due {
				rv = u.Get(v[:recordKeyLen])
			}
			if rv == nil {
				f.garbage = append(f.garbage, append([]byte(nil), k...))
				continue
			}
			var rec Record
			if err := decodeRecord(rv, &rec, true); err != nil {
				return nil, false, fmt.Errorf("%w: record %x", err, v)
			}
			if ll := f.leases[rec.URL]; ll != nil {
				if ll.seq != seq && again == 0 {
					again = seq
				}
				if ll.claim && due {
					ll.dueLevels |= 1 << s.level
				}
				continue
			}
			// An aged check's record stays Fetched or in Error until the
			// check's outcome: its entry holds while the record is due by
			// the entry's cut; checked since, queued again or excluded, it
			// is stale.
			if due && !AgedCheckDue(&rec, time.Unix(0, int64(binary.BigEndian.Uint64(v[recordKeyLen:])))) ||
				!due && (rec.State != Waiting || rec.qseq != seq) {
				f.garbage = append(f.garbage, append([]byte(nil), k...))
				continue
			}
			if due {
				rec.Class = Refresh
			}
			if f.paused[rec.Source] {
				// It stays Waiting until its source resumes (Pause).
				h.pausedBack, f.pausedBack = true, true
				if held++; held == heldBackChunk {
					keep()
					return nil, true, nil
				}
				continue
			}
			l := &lease{f: f, h: h, rec: rec, key: bytes.Clone(v[:recordKeyLen]), level: s.level, seq: seq, due: due}
			over, err := f.overPages(tx, l)
			if err != nil {
				return nil, false, err
			}
			if over != 0 {
				// It waits for the next cycle, which rewinds the queue.
				h.heldBack, f.heldBack = true, true
				if seq > s.noted {
					f.noteHeldBack(over, rec.Source, h.key, rec.URL)
				}
				if held++; held == heldBackChunk {
					keep()
					return nil, true, nil
				}
				continue
			}
			h.vtime = s.pass
			s.pass += levelStride(s.level)
			keep()
			return l, false, nil
		}
		keep()
		f.deactivate(h, s.level)
	}
	return nil, false, nil
}

// Stale queue entries (completed, or found stale by pop) are deleted in
// batches: sorted, a batch's keys are contiguous per host, so a few pages
// cover hundreds of deletions. Until then, and after a crash that loses
// the list, pop recognises them against their records and skips them.
const garbageBatch = 4096

func (f *Frontier) collectGarbage(tx *bolt.Tx) {
	f.mu.Lock()
	if len(f.garbage) < garbageBatch {
		f.mu.Unlock()
		return
	}
	g := f.garbage
	f.garbage = nil
	f.mu.Unlock()
	deleteKeys(tx, g)
}

func deleteKeys(tx *bolt.Tx, keys [][]byte) {
	slices.SortFunc(keys, bytes.Compare)
	q := tx.Bucket(bucketQueue)
	for _, k := range keys {
		q.Delete(k)
	}
}

// Outcome is the result of a lease.
type Outcome struct {
	// State is Fetched, Error (a permanent failure), Excluded, or Waiting:
	// a temporary failure, which queues the URL again at the tail of its
	// queue.
	State State
	// Reason is required for Error and Excluded, and kept for Waiting.
	Reason string
	Status int
	// ETag, LastModified and Hash replace the stored ones on Fetched; a 304
	// passes the lease's own.
	ETag, LastModified, Hash string
	// Target is the URL holding the document when this one redirected or
	// named a canonical URL.
	Target string
	// NoRequest says no request reached the host (robots.txt disallowed it,
	// say), so the host's delay does not start.
	NoRequest bool
	// Backoff keeps the host from a new lease before it (Retry-After).
	Backoff time.Time
	// Pending, when set (PendingIndex or PendingDelete), records in the
	// same transaction a document write decided with the outcome, of the
	// document DocID, so that a write sent after the outcome is stored
	// survives a crash until its acknowledgement (Writes.Acknowledge);
	// PendingHold records a delete decided and held back (see Held).
	Pending, DocID string
	// Holds is about the bytes the caller keeps until CompleteAsync's done
	// is called (the document of a Pending write, on its way to the sink):
	// past 64 KiB (heavyUnits of unitBytes), they count against what may
	// wait for the disk, so that large documents wait fewer at a time.
	Holds int
	// Content and Claim regroup the URL among its duplicates (see
	// Duplicates): Content is the content key of the group a Fetched page
	// joins, "" for none; Claim the claim it makes there.
	Content string
	Claim   int
	// Detail is free text for the history event of the outcome (the rule
	// that excluded the URL, an error message).
	Detail string
	// History holds more events to append to the URL's history after the
	// outcome's own (an index write handed to the sink, say).
	History []Event
	// ReadLinks replaces the page's stored outlinks, in the same
	// transaction, with the URLs of Found.Links and Links (none when both are
	// empty), and sets Record.HasLinks; without it the stored ones stay, as
	// for a 304 or an error that says nothing of the page. Links are the
	// LinkKey of other URLs the page leads to (a redirect or canonical
	// target); Complete sorts them in place.
	ReadLinks bool
	Links     []uint64
	// Found, when set, holds what the fetched page links to. Its links are
	// queued as Add queues them and its refused URLs recorded as Exclude
	// records them, in the transaction that completes the page, so a page
	// costs its worker one commit. Complete fills in the counts.
	Found *Found
}

// Found is what a fetched page links to.
type Found struct {
	Links   []Item
	Refused []Refused
	Queued  int // set by Complete: how many links were queued
}

// Refused are URLs a page links to that the crawl space refuses.
type Refused struct {
	Reason string
	Detail string // the deciding rule, say: kept in each new URL's history
	Items  []Item
	New    int // set by Complete: how many were seen for the first time
}

// CompleteAsync durably records the outcome of the lease, frees the host's
// slot and starts its delay. Fetched resets ErrCount and TempErrCount,
// Error counts one more permanent error and resets TempErrCount, Waiting
// counts one more temporary error. It returns once the outcome is queued
// for the store rather than once it is stored, so a worker goes on to its
// next lease while the disk catches up, and many outcomes share each
// commit. The URL stays leased until done is called, after the commit,
// with nil, or with the error that kept the outcome from the store. An
// outcome that cannot be recorded (refused by its checks, or a store that
// cannot write) ends the lease all the same and holds the URL back: it
// stays Waiting on disk and is not leased again until the next cycle or
// the next Open, since fetching it again at once would only fail to record
// it again. done runs on the frontier's own goroutine, one call at a time:
// it must not call CompleteAsync. Next reports ErrDone only after every
// done has returned. An error returned by CompleteAsync itself (the
// outcome was refused, or the store is broken or closed) ends the lease as
// well, and done is not called.
func (l *lease) CompleteAsync(o Outcome, done func(error)) error {
	if l.done {
		return errLeaseDone
	}
	c, err := l.completion(&o)
	if err != nil {
		l.abandon(&o)
		return err
	}
	f := l.f
	f.mu.Lock()
	l.freeSlotLocked(&o, c)
	f.mu.Unlock()
	l.done = true
	units := unitsOf(&o)
	err = f.submit(c.fn, func(err error) {
		if err == nil {
			c.q.remember()
		}
		f.mu.Lock()
		if err == nil {
			c.finishLocked(l)
		} else {
			l.holdLocked()
		}
		f.mu.Unlock()
		if err == nil {
			f.notify(c.notes)
		}
		done(err)
		f.mu.Lock()
		f.working--
		f.signal()
		f.mu.Unlock()
	}, units)
	if err != nil {
		f.mu.Lock()
		l.holdLocked()
		f.working--
		f.signal()
		f.mu.Unlock()
	}
	return err
}

// completion is a checked outcome and the transaction that records it.
type completion struct {
	fn  func(*bolt.Tx) error
	q   queueing
	eff effects
	now time.Time
	pol HostPolicy
	// notes are what a limit kept out of the outcome's links.
	notes []OverBudget
	// counted says the outcome is of a request, which a page limit counts.
	counted bool
}

func (l *lease) completion(o *Outcome) (*completion, error) {
	switch o.State {
	case Fetched, Waiting:
	case Error, Excluded:
		if o.Reason == "" {
			return nil, fmt.Errorf("frontier: %s: %s outcome without a reason", l.rec.URL, o.State)
		}
	default:
		return nil, fmt.Errorf("frontier: %s: cannot complete as %s", l.rec.URL, o.State)
	}
	f := l.f
	c := &completion{now: f.now(), pol: f.policyFor(l.h.key)}
	if fd := o.Found; fd != nil {
		if err := c.q.prepare(f, fd.Links); err != nil {
			return nil, err
		}
		for _, r := range fd.Refused {
			if err := checkRefusal(r.Reason, r.Items); err != nil {
				return nil, err
			}
		}
	}
	// own is the outlinks of the outcome itself (a redirect's target, say),
	// for outlinks without the links a limit keeps out.
	var own []uint64
	if o.ReadLinks {
		own = slices.Clone(o.Links)
		o.Links = compactLinks(append(o.Links, c.q.keys...))
	}
	url, now, eff, q := l.rec.URL, c.now, &c.eff, &c.q
	c.fn = func(tx *bolt.Tx) error {
		eff.reset()
		w := newWtx(tx)
		// The links first: a page linking to itself must not see its own
		// record change after its outcome is written.
		if fd := o.Found; fd != nil {
			var err error
			if fd.Queued, err = q.apply(w, eff); err != nil {
				return err
			}
			for i := range fd.Refused {
				r := &fd.Refused[i]
				if r.New, err = f.exclude(w, r.Reason, r.Detail, r.Items); err != nil {
					return err
				}
			}
		}
		key := l.key
		v := w.u.Get(key)
		if v == nil {
			return fmt.Errorf("frontier: leased %s vanished", url)
		}
		var rec Record
		if err := decodeRecord(v, &rec, true); err != nil {
			return err
		}
		hadPending := rec.Pending != ""
		// The queue entry stays: with the record no longer Waiting at that
		// sequence it is stale, and stale entries are deleted in bulk (see
		// collectGarbage), not one scattered page per completion.
		if l.due {
			// RequeueDue left the record as it was: what queueing it wrote
			// before (its class, its cycle, the requeued event) is
			// written with its outcome.
			rec.Class, rec.Reason, rec.Cycle = Refresh, "", w.cycle
			if err := f.event(w, key, &Event{At: now, Kind: EventRequeued, Class: Refresh, Reason: "aged_check"}); err != nil {
				return err
			}
		}
		rec.CheckedAt, rec.Status = now, o.Status
		// Refetch asked for the document to be written again while the URL
		// was leased: an outcome that brought nothing new writes none, so
		// the URL is queued again, its hash forgotten, to be fetched whole.
		again := o.State == Fetched && o.Hash == l.rec.Hash && l.refetch.Load()
		switch o.State {
		case Fetched:
			rec.Reason, rec.FetchedAt = "", now
			rec.ETag, rec.LastModified, rec.Hash = o.ETag, o.LastModified, o.Hash
			rec.ErrCount, rec.TempErrCount = 0, 0
			if again {
				rec.Hash, rec.Class = "", Refresh
			}
		case Error:
			rec.Reason = o.Reason
			rec.ErrCount++
			rec.TempErrCount = 0
		case Excluded:
			rec.Reason = o.Reason
		case Waiting:
			rec.Reason = o.Reason
			rec.TempErrCount++
		}
		if o.State != Waiting {
			rec.Target, rec.qseq = o.Target, 0
		}
		if o.Pending != "" {
			if o.Pending != PendingIndex && o.Pending != PendingDelete && o.Pending != PendingHold {
				return fmt.Errorf("frontier: %s: unknown pending write %q", url, o.Pending)
			}
			rec.DocID, rec.Pending = o.DocID, o.Pending
		}
		rec.State = o.State
		if err := regroup(tx, &rec, o); err != nil {
			return err
		}
		if o.ReadLinks {
			rec.HasLinks = true
			links := o.Links
			if q.nOver > 0 {
				links = q.outlinks(own)
			}
			if err := w.putLinks(url, links); err != nil {
				return err
			}
		}
		if !o.NoRequest {
			if err := w.fetched(f, rec.Source, l.h.key); err != nil {
				return err
			}
		}
		if err := l.events(w, key, o, now); err != nil {
			return err
		}
		var err error
		if o.State == Waiting || again {
			err = w.enqueueHad(&rec, key, eff, hadPending)
		} else {
			err = w.put(key, &rec, hadPending)
		}
		if err != nil {
			return err
		}
		c.notes = w.t.notes
		if err := w.flush(); err != nil {
			return err
		}
		l.written.Store(true)
		return nil
	}
	c.counted = !o.NoRequest
	return c, nil
}

// freeSlotLocked gives the host its slot back and starts its delay.
func (l *lease) freeSlotLocked(o *Outcome, c *completion) {
	h := l.h
	h.inflight--
	h.pol = c.pol
	if !o.NoRequest {
		if t := c.now.Add(c.pol.Delay); t.After(h.readyAt) {
			h.readyAt = t
		}
	}
	if o.Backoff.After(h.readyAt) {
		h.readyAt = o.Backoff
	}
	l.f.place(h, c.now)
}

// finishLocked ends a lease whose outcome is stored: the URL is free, its
// queue entry stale, and the URLs the outcome queued are scheduled.
func (c *completion) finishLocked(l *lease) {
	f := l.f
	l.unreserve(c.counted)
	delete(f.leases, l.rec.URL)
	f.garbage = append(f.garbage, putQKey(nil, l.h.id, l.level, l.seq))
	f.applyQueuedLocked(&c.eff, c.now)
}

// Release gives the URL back without an outcome (the worker is stopping):
// it stays Waiting and will be leased again. The host's delay does not start.
func (l *lease) Release() {
	if l.done {
		return
	}
	l.done = true
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	l.h.inflight--
	l.giveBackLocked()
	f.working--
	f.signal()
}

// giveBackLocked ends a lease without an outcome: the URL, still Waiting on
// disk, is free to be leased again from its place in the queue.
func (l *lease) giveBackLocked() {
	l.unreserve(false)
	delete(l.f.leases, l.rec.URL)
	l.f.rewind(l.h, l.level, l.seq, l.f.now())
}

// abandon ends a lease whose outcome was not recorded: the host's slot is
// freed (its delay starts: the request was made) and the URL held back.
func (l *lease) abandon(o *Outcome) {
	f := l.f
	c := completion{now: f.now(), pol: f.policyFor(l.h.key)}
	f.mu.Lock()
	defer f.mu.Unlock()
	l.done = true
	l.freeSlotLocked(o, &c)
	l.holdLocked()
	f.working--
	f.signal()
}

// holdLocked keeps a URL whose outcome could not be recorded out of reach
// of Next: its lease stays in f.leases, so pop passes over its queue entry
// and changes treat it as leased, until the next cycle (releaseHeld). On
// disk it is still Waiting, so the next Open queues it as well.
func (l *lease) holdLocked() {
	l.written.Store(false)
	l.held = true
	l.f.held = append(l.f.held, l)
}

// releaseHeld gives back the URLs held in the cycle that ended.
func (f *Frontier) releaseHeld() {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	for _, l := range f.held {
		delete(f.leases, l.rec.URL)
		// The host may have been dropped since: it has no work in memory.
		h := f.hosts[l.h.key]
		if h == nil {
			h = f.newHost(l.h.key)
			h.id = l.h.id
		}
		f.rewind(h, l.level, l.seq, now)
	}
	f.held = nil
	f.signal()
}

// claims hold URLs an op is changing, so that Next does not lease them
// meanwhile: Waiting ones, and Fetched or Error ones, which an aged check
// queued without a change to their record may be leased as (see
// RequeueDue). Releasing rewinds the queues of those that were Waiting in
// case they stayed so, and makes active again the queues of aged checks
// that Next passed over meanwhile.
type claims struct {
	f    *Frontier
	list []claim
}

type claim struct {
	url, hostKey string
	id           uint32
	level        uint8
	seq          uint64
	waiting      bool
}

// take claims rec (Waiting, Fetched or Error on disk); false means a
// worker holds its lease.
// It is called from inside the op, so it is idempotent.
func (c *claims) take(w *wtx, rec *Record) bool {
	for i := range c.list {
		if c.list[i].url == rec.URL {
			return true
		}
	}
	hk := urlnorm.Origin(rec.URL)
	id, _, _ := w.hostID(hk, false)
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.leases[rec.URL]
	if l != nil && l.written.Load() {
		// Its outcome is in the store: the record is the op's to change,
		// and the lease, until its callback ends it, keeps Next away.
		return true
	}
	if l != nil && !l.claim {
		return false
	}
	if l == nil {
		l = &lease{claim: true}
		f.leases[rec.URL] = l
		f.claimed++
	}
	l.refs++
	c.list = append(c.list, claim{url: rec.URL, hostKey: hk, id: id, level: level(rec.Class, rec.Shift), seq: rec.qseq,
		waiting: rec.State == Waiting})
	return true
}

// refetchLeased marks url's lease in flight, if any, for Refetch.
func (f *Frontier) refetchLeased(url string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l := f.leases[url]; l != nil && !l.claim {
		l.refetch.Store(true)
	}
}

func (c *claims) release() {
	if len(c.list) == 0 {
		return
	}
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	for _, cl := range c.list {
		var due uint32
		if l := f.leases[cl.url]; l != nil && l.claim {
			due, l.dueLevels = l.dueLevels, 0
			if l.refs--; l.refs == 0 {
				delete(f.leases, cl.url)
				f.claimed--
			}
		}
		if cl.id == 0 {
			continue // its host's queue has not been announced yet; the Add will
		}
		if !cl.waiting && due == 0 {
			continue
		}
		h := f.hosts[cl.hostKey]
		if h == nil {
			h = f.newHost(cl.hostKey)
		}
		h.id = cl.id
		h.hasWork = false // the claim may have taken the entry a look found
		if cl.waiting {
			f.rewind(h, cl.level, cl.seq, now)
		}
		if due != 0 {
			// pop kept its place before the entries it passed over.
			for ; due != 0; due &= due - 1 {
				f.activate(h, uint8(trailingZeros(due)))
			}
			f.place(h, now)
		}
	}
	c.list = c.list[:0]
	f.signal()
}

// hostList is an intrusive FIFO of ready hosts.
type hostList struct {
	head, tail *host
	n          int
}

func (l *hostList) pushBack(h *host) {
	h.prev, h.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = h
	} else {
		l.head = h
	}
	l.tail = h
	l.n++
}

func (l *hostList) remove(h *host) {
	if h.prev != nil {
		h.prev.next = h.next
	} else {
		l.head = h.next
	}
	if h.next != nil {
		h.next.prev = h.prev
	} else {
		l.tail = h.prev
	}
	h.prev, h.next = nil, nil
	l.n--
}

// hostHeap orders delayed hosts by readyAt.
type hostHeap []*host

func (hh hostHeap) Len() int           { return len(hh) }
func (hh hostHeap) Less(i, j int) bool { return hh[i].readyAt.Before(hh[j].readyAt) }
func (hh hostHeap) Swap(i, j int) {
	hh[i], hh[j] = hh[j], hh[i]
	hh[i].hidx, hh[j].hidx = i, j
}
func (hh *hostHeap) Push(x any) {
	h := x.(*host)
	h.hidx = len(*hh)
	*hh = append(*hh, h)
}
func (hh *hostHeap) Pop() any {
	old := *hh
	h := old[len(old)-1]
	old[len(old)-1] = nil
	*hh = old[:len(old)-1]
	h.hidx = -1
	return h
}
