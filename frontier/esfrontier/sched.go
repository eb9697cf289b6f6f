package esfrontier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
)

// Scheduling of the held partitions' hosts, in memory: each host keeps
// the first URLs of its queue as last read from the index (hostBuffer of
// them, in class and priority order, oldest first), its leases and its
// delay. A host is in exactly one partition, and a partition is held by
// one process, so the politeness kept here holds for the whole cluster.

const (
	// hostBuffer is how many due URLs of a host one read brings.
	hostBuffer = 32
	// maxHosts bounds the hosts one read returns.
	maxHosts = 10000
	// loadEvery is how often the due URLs are read again without a reason
	// (URLs other processes queued for this one's hosts).
	loadEvery = time.Second
	// minLoadGap spaces the reads a busy crawl asks for.
	minLoadGap = 100 * time.Millisecond
	// idleCheckGap spaces the whole-cluster checks of an idle process.
	idleCheckGap = 500 * time.Millisecond
	// recentKeep is how long a stored outcome whose version is unknown
	// may stay unsearchable: the URL index refreshes every second
	// (refreshInterval), with a margin for a busy node. One whose version
	// is known is told from a stale read by it, for up to versionKeep.
	recentKeep  = 5 * time.Second
	versionKeep = time.Minute
	// maxBatch bounds the outcomes of one write.
	maxBatch = 256
)

var errClosed = frontier.ErrClosed

type host struct {
	key      string
	part     int
	queue    []queued
	inflight int
	readyAt  time.Time
	pol      frontier.HostPolicy
	// more says the last read filled the buffer: the index may hold more.
	more bool
}

type queued struct {
	rec frontier.Record
	seq int64
	// seqNo and term are the version the record was read at.
	seqNo, term int64
	histN       int64 // events in its history
	// dup and claim are its group of duplicates and claim, as read.
	dup   string
	claim int
	// rc and rn are its requests' cycle and count, as read.
	rc uint64
	rn int64
}

// storedOutcome is when an outcome was stored and the version of the
// URL's record it made; zero when unknown (stored after a conflict).
type storedOutcome struct {
	at          time.Time
	seqNo, term int64
}

// predates says whether a read of the record at version (seqNo, term)
// was made before the outcome was stored.
func (o storedOutcome) predates(seqNo, term int64) bool {
	return o.seqNo == 0 || term < o.term || term == o.term && seqNo < o.seqNo
}

type scheduler struct {
	s      *Store
	mu     sync.Mutex
	hosts  map[string]*host
	order  []*host // round robin
	rr     int
	parts  map[int]bool
	leases map[string]*lease // leased URLs, until their outcome is stored
	// held are URLs whose outcome could not be stored: not leased again by
	// this process (as the embedded store holds them until the next cycle).
	held map[string]bool
	// unacked maps the URLs whose document write this process stored
	// pending, until acknowledged, to their partition: a partition is
	// given back only once they are, or its next holder would fetch
	// them again to write them (Pending lists them to it).
	unacked map[string]int
	// loads counts the reads started; recent maps a URL whose outcome was
	// stored to when and the version it made: a read may not see it until
	// the index's next refresh, which a busy node may put off.
	loads  int
	recent map[string]storedOutcome
	// addedAt is loads when each partition was last handed over: a read
	// started before then may predate the refresh that followed the take,
	// and another holder's outcomes since it last held the partition.
	addedAt map[int]int
	// takenAt is when each partition was handed over: its last holder may
	// have made a request to its hosts just before, so their first
	// request from here waits their delay after it.
	takenAt map[int]time.Time
	// backoff keeps the backoffs of hosts not read yet (a robots.txt
	// read before their first URL is), until they are.
	backoff map[string]time.Time
	wake    chan struct{}
	loadq   chan struct{}
	out     chan *completion
	closed  bool
	broken  error

	// idleMu orders the idle checks, whose last answer is idleDone, at
	// idleAt, after changes counted idleGen (changes counts them all,
	// without a lock: askLoad runs under mu).
	idleMu   sync.Mutex
	idleAt   time.Time
	idleDone bool
	idleGen  int64
	idleCyc  uint64
	changes  atomic.Int64
	// marking counts the page limits' marks being written (from the lease
	// that met the limit, under mu, to the note): the cycle is not found
	// done before they are (pages.go).
	marking int
	// onHoldBack is the tests' view of a page limit holding URLs back.
	onHoldBack func()

	// pages are the page limits' counts and marks of the cycle (pages.go).
	pages pageState
	// paused are the sources Pause keeps back (control.go).
	paused map[string]bool
}

func newScheduler(s *Store) *scheduler {
	return &scheduler{s: s, hosts: map[string]*host{}, parts: map[int]bool{}, leases: map[string]*lease{},
		held: map[string]bool{}, unacked: map[string]int{}, recent: map[string]storedOutcome{}, addedAt: map[int]int{},
		takenAt: map[int]time.Time{}, backoff: map[string]time.Time{}, wake: make(chan struct{}, 1),
		loadq: make(chan struct{}, 1), out: make(chan *completion, maxBatch)}
}

func (q *scheduler) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *scheduler) askLoad() {
	// Something changed here: an idle answer from before it is stale.
	q.changes.Add(1)
	q.readSoon()
}

// readSoon asks for a read of the due URLs before the next tick.
func (q *scheduler) readSoon() {
	select {
	case q.loadq <- struct{}{}:
	default:
	}
}

func (q *scheduler) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *scheduler) addParts(ps []int) {
	q.mu.Lock()
	now := q.s.now()
	for _, p := range ps {
		q.parts[p] = true
		q.addedAt[p] = q.loads
		q.takenAt[p] = now
	}
	for _, h := range q.hosts {
		if slices.Contains(ps, h.part) {
			h.readyAt = later(h.readyAt, now.Add(h.pol.Delay))
		}
	}
	// Their hosts' requests are read again: their last holder made some.
	pg := q.pagesLocked()
	for h := range pg.readHost {
		if q.parts[q.s.partition(h)] && slices.Contains(ps, q.s.partition(h)) {
			delete(pg.readHost, h)
			for k := range pg.host {
				if k.host == h {
					delete(pg.host, k)
				}
			}
		}
	}
	q.mu.Unlock()
	q.askLoad()
}

// dropPart stops leasing from part's hosts; their leases run to their end.
func (q *scheduler) dropPart(p int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.parts, p)
	for _, h := range q.hosts {
		if h.part == p {
			h.queue = nil
			h.more = false
		}
	}
}

// inFlight counts part's leases, outcomes not yet stored included, and
// its document writes not yet acknowledged.
func (q *scheduler) inFlight(p int) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, h := range q.hosts {
		if h.part == p {
			n += h.inflight
		}
	}
	for _, l := range q.leases {
		if l.h.part == p && l.ended {
			n++
		}
	}
	for _, up := range q.unacked {
		if up == p {
			n++
		}
	}
	return n
}

// acknowledged forgets the unacknowledged writes of urls.
func (q *scheduler) acknowledged(urls []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, u := range urls {
		delete(q.unacked, u)
	}
}

func (q *scheduler) stats() frontier.Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	st := frontier.Stats{Hosts: len(q.hosts), InFlight: len(q.leases)}
	now := q.s.now()
	for _, h := range q.hosts {
		if len(h.queue) > 0 || h.more {
			st.Busy++
			if h.inflight < max(h.pol.MaxParallel, 1) && !now.Before(h.readyAt) {
				st.Ready++
			}
		}
	}
	return st
}

// Stats returns the scheduler's figures for this process's hosts.
func (s *Store) Stats() frontier.Stats { return s.sched.stats() }

// Next waits for a due URL of a host this process holds. ErrDone means the
// whole crawl is idle: no URL Waiting in the index (a leased URL is stored
// Waiting until its outcome, so none is in flight anywhere either).
func (s *Store) Next(ctx context.Context) (frontier.Lease, error) {
	q := s.sched
	for {
		// An ended ctx wins over ready work: a worker that releases its
		// lease on cancellation would otherwise be handed it straight back,
		// for ever.
		if err := q.lockOpen(ctx); err != nil {
			return nil, err
		}
		if q.broken != nil {
			err := q.broken
			q.mu.Unlock()
			return nil, err
		}
		now := s.now()
		l, wait := q.pickLocked(now)
		idle := l == nil && len(q.leases) == 0 && q.buffered() == 0
		q.mu.Unlock()
		if l != nil {
			return l, nil
		}
		if idle {
			done, fresh, err := q.clusterIdle(ctx)
			if err != nil {
				return nil, err
			}
			if done {
				return nil, frontier.ErrDone
			}
			if fresh {
				// URLs others queued for this process's hosts are read
				// now rather than at the next tick; not a change here,
				// which would make the next worker check again at once.
				q.readSoon()
			}
			wait = min(wait, idleCheckGap)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-q.wake:
			q.signal() // pass it on to the next waiting worker
		case <-t.C:
		}
		t.Stop()
	}
}

// lockOpen takes q.mu for a caller waiting in the scheduler, unless ctx
// has ended or the store is closed.
func (q *scheduler) lockOpen(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return errClosed
	}
	return nil
}

func (q *scheduler) buffered() int {
	n := 0
	for _, h := range q.hosts {
		n += len(h.queue)
	}
	return n
}

// pickLocked leases the next URL of the next ready host, round robin, or
// says how long to wait for one.
func (q *scheduler) pickLocked(now time.Time) (*lease, time.Duration) {
	wait := loadEvery
	n := len(q.order)
	for i := 0; i < n; i++ {
		h := q.order[(q.rr+i)%n]
		if len(h.queue) == 0 {
			continue
		}
		if h.inflight >= max(h.pol.MaxParallel, 1) {
			continue
		}
		if d := h.readyAt.Sub(now); d > 0 {
			wait = min(wait, d)
			continue
		}
		fence, ok := q.s.own.usable(h.part, now)
		if !ok {
			continue
		}
		it := h.queue[0]
		if q.paused[it.rec.Source] {
			// Read before the source was paused: dropped (control.go).
			h.queue = dropSource(h.queue, it.rec.Source)
			continue
		}
		limit, known := q.overPagesLocked(h, &it.rec)
		if limit != 0 {
			q.holdBackLocked(h, &it.rec, limit)
			continue
		}
		if !known {
			continue
		}
		q.rr = (q.rr + i + 1) % n
		h.queue = h.queue[1:]
		if len(h.queue) == 0 && h.more {
			q.askLoad()
		}
		h.inflight++
		l := &lease{s: q.s, h: h, rec: it.rec, seq: it.seq, seqNo: it.seqNo, term: it.term, histN: it.histN, fence: fence,
			dup: it.dup, claim: it.claim, cycle: q.pagesLocked().cycle, rc: it.rc, rn: it.rn, reserved: limitsPages(q.s.bud.limits[it.rec.Source])}
		q.leases[it.rec.URL] = l
		return l, 0
	}
	return nil, wait
}

// clusterIdle says whether no URL is Waiting anywhere but those this
// process holds back, after a refresh so every stored change is counted;
// workers share one answer per idleCheckGap. fresh says it asked the
// cluster.
func (q *scheduler) clusterIdle(ctx context.Context) (done, fresh bool, _ error) {
	q.idleMu.Lock()
	defer q.idleMu.Unlock()
	gen, cyc := q.changes.Load(), q.s.cycle.Load()
	if now := q.s.now(); gen == q.idleGen && cyc == q.idleCyc && now.Sub(q.idleAt) < idleCheckGap {
		return q.idleDone, false, nil
	}
	s := q.s
	q.mu.Lock()
	marking := q.marking
	q.mu.Unlock()
	if marking > 0 {
		// Not done: the cycle's count of what is held back is not in
		// yet. The mark's end wakes a worker to check again.
		return false, false, nil
	}
	if err := s.refresh(ctx); err != nil {
		return false, false, err
	}
	var marks []held
	if s.bud.pageLimits() {
		var err error
		if marks, err = s.readHeld(ctx, s.cycle.Load()); err != nil {
			return false, false, err
		}
	}
	q.mu.Lock()
	held := make([]string, 0, len(q.held))
	for u := range q.held {
		held = append(held, u)
	}
	// What the page limits hold back waits for the next cycle: it does
	// not keep this one from ending.
	mustNot := append([]any{map[string]any{"terms": map[string]any{"url": held}}}, q.heldClausesLocked(marks)...)
	mustNot = append(mustNot, q.pausedClausesLocked()...)
	q.mu.Unlock()
	var ans struct{ Count int }
	body := map[string]any{"query": map[string]any{"bool": map[string]any{
		"filter":   []any{map[string]any{"term": map[string]any{"state": int(frontier.Waiting)}}},
		"must_not": mustNot}}}
	if err := s.do(ctx, http.MethodPost, "/"+s.urls+"/_count", body, &ans); err != nil {
		return false, false, &Error{Op: "count the waiting URLs", Err: err}
	}
	q.idleAt, q.idleDone, q.idleGen, q.idleCyc = s.now(), ans.Count == 0, gen, cyc
	return q.idleDone, true, nil
}

// load reads the due URLs of the held partitions, a buffer per host, in
// one search: at loadEvery, and sooner when a host's buffer ran out.
func (q *scheduler) load() {
	s := q.s
	defer s.wg.Done()
	t := time.NewTicker(loadEvery)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		case <-q.loadq:
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.ttl)
		if err := q.loadOnce(ctx); err != nil && s.ctx.Err() == nil {
			// Read again at the next tick: nothing is lost meanwhile.
			s.log.Warn("cannot read the due URLs", "err", err)
		}
		cancel()
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(minLoadGap):
		}
	}
}

func (q *scheduler) loadOnce(ctx context.Context) error {
	s := q.s
	q.mu.Lock()
	parts := make([]int, 0, len(q.parts))
	for p := range q.parts {
		parts = append(parts, p)
	}
	skip := make([]string, 0, len(q.leases)+len(q.held))
	for u := range q.leases {
		skip = append(skip, u)
	}
	for u := range q.held {
		skip = append(skip, u)
	}
	q.loads++
	load := q.loads
	mustNot := append([]any{map[string]any{"terms": map[string]any{"url": skip}}}, q.heldClausesLocked(nil)...)
	mustNot = append(mustNot, q.pausedClausesLocked()...)
	cycle := q.pagesLocked().cycle
	q.mu.Unlock()
	if len(parts) == 0 {
		return nil
	}
	slices.Sort(parts)
	body := map[string]any{"size": 0,
		"query": map[string]any{"bool": map[string]any{
			"filter": []any{
				map[string]any{"term": map[string]any{"state": int(frontier.Waiting)}},
				map[string]any{"terms": map[string]any{"part": parts}}},
			"must_not": mustNot}},
		"aggs": map[string]any{"hosts": map[string]any{
			"terms": map[string]any{"field": "host", "size": maxHosts},
			"aggs": map[string]any{"due": map[string]any{"top_hits": map[string]any{
				"size": hostBuffer, "seq_no_primary_term": true, "_source": map[string]any{"excludes": []string{"hist"}}, "sort": []any{map[string]any{"level": "asc"}, map[string]any{"seq": "asc"}}}}}}}}
	var ans struct {
		Aggregations struct {
			Hosts struct {
				Buckets []struct {
					Key      string `json:"key"`
					DocCount int    `json:"doc_count"`
					Due      struct {
						Hits struct {
							Hits []struct {
								SeqNo       int64 `json:"_seq_no"`
								PrimaryTerm int64 `json:"_primary_term"`
								Source      doc   `json:"_source"`
							} `json:"hits"`
						} `json:"hits"`
					} `json:"due"`
				} `json:"buckets"`
			} `json:"hosts"`
		} `json:"aggregations"`
	}
	if err := s.do(ctx, http.MethodPost, "/"+s.urls+"/_search?request_cache=false", body, &ans); err != nil {
		return &Error{Op: "read the due URLs", Err: err}
	}
	// The page counts of hosts new to this cycle's scheduling, read once:
	// from then on this process, their only scheduler, counts them.
	var unread []string
	var pages map[srcHost]int64
	if s.bud.pageLimits() {
		q.mu.Lock()
		pg := q.pagesLocked()
		for _, b := range ans.Aggregations.Hosts.Buckets {
			if !pg.readHost[b.Key] {
				unread = append(unread, b.Key)
			}
		}
		q.mu.Unlock()
		var err error
		if pages, err = q.readHostPages(ctx, unread, cycle); err != nil {
			return err
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if pg := q.pagesLocked(); pg.cycle == cycle {
		for _, h := range unread {
			if !pg.readHost[h] && q.addedAt[s.partition(h)] < load {
				pg.readHost[h] = true
			}
		}
		for k, n := range pages {
			if pg.readHost[k.host] && pg.host[k] == nil {
				pg.host[k] = &pageUse{pages: n}
			}
		}
	}
	found := map[string]bool{}
	for _, b := range ans.Aggregations.Hosts.Buckets {
		h := q.hostLocked(b.Key)
		if !q.parts[h.part] || q.addedAt[h.part] >= load {
			continue
		}
		found[b.Key] = true
		h.queue = h.queue[:0]
		for _, hit := range b.Due.Hits.Hits {
			d := &hit.Source
			if q.leases[d.URL] != nil || q.held[d.URL] {
				continue
			}
			if o, ok := q.recent[d.URL]; ok {
				if o.predates(hit.SeqNo, hit.PrimaryTerm) {
					continue // the answer is older than the outcome stored since
				}
				delete(q.recent, d.URL) // it shows the outcome, or a later change
			}
			h.queue = append(h.queue, queued{rec: d.record(), seq: d.Seq, seqNo: hit.SeqNo, term: hit.PrimaryTerm, histN: d.HistN,
				dup: d.Dup, claim: d.Claim, rc: d.RC, rn: d.RN})
		}
		h.more = b.DocCount > len(b.Due.Hits.Hits)
	}
	now := s.now()
	for u, o := range q.recent {
		if age := now.Sub(o.at); age > recentKeep && (o.seqNo == 0 || age > versionKeep) {
			delete(q.recent, u)
		}
	}
	for k, t := range q.backoff {
		if !t.After(now) {
			delete(q.backoff, k)
		}
	}
	// Hosts the read did not return have nothing due; those idle and past
	// their delay leave memory.
	kept := q.order[:0]
	for _, h := range q.order {
		if !found[h.key] {
			h.queue, h.more = nil, false
			if h.inflight == 0 && !now.Before(h.readyAt) {
				delete(q.hosts, h.key)
				continue
			}
		}
		kept = append(kept, h)
	}
	clear(q.order[len(kept):])
	q.order = kept
	if len(q.order) > 0 {
		q.rr %= len(q.order)
	} else {
		q.rr = 0
	}
	q.signal()
	return nil
}

// hostLocked is the scheduling state of hostKey, made when there is none:
// it waits out a backoff set before, and its delay after its partition
// was handed over (its last holder may have just made a request).
func (q *scheduler) hostLocked(hostKey string) *host {
	if h := q.hosts[hostKey]; h != nil {
		return h
	}
	s := q.s
	h := &host{key: hostKey, part: s.partition(hostKey), pol: s.policy(hostKey)}
	h.readyAt = later(q.backoff[hostKey], q.takenAt[h.part].Add(h.pol.Delay))
	delete(q.backoff, hostKey)
	q.hosts[hostKey] = h
	q.order = append(q.order, h)
	return h
}

// Backoff keeps a host this process schedules from a new lease before
// until, the host's policy as it stands now (robots.txt may have just
// given it a Crawl-delay). A host not read yet is kept back once it is.
func (s *Store) Backoff(hostKey string, until time.Time) {
	q := s.sched
	pol := s.policy(hostKey)
	q.mu.Lock()
	if h := q.hosts[hostKey]; h != nil {
		h.readyAt, h.pol = later(h.readyAt, until), pol
	} else if q.parts[s.partition(hostKey)] {
		q.backoff[hostKey] = later(q.backoff[hostKey], until)
	}
	q.mu.Unlock()
}

// Schedules says whether this process may lease the URLs of hostKey now:
// it holds the host's partition and its hold is sure.
func (s *Store) Schedules(hostKey string) bool {
	_, ok := s.own.usable(s.partition(hostKey), s.now())
	return ok
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Request waits for a slot of hostKey that its politeness lets start now,
// for a request that is no queued URL's, and takes it: done frees it and
// starts the host's delay, as a lease's completion does. The slot is this
// process's: a host of a partition another process holds is scheduled
// here for these requests alone.
func (s *Store) Request(ctx context.Context, hostKey string) (done func(), err error) {
	q := s.sched
	for {
		if err := q.lockOpen(ctx); err != nil {
			return nil, err
		}
		now := s.now()
		h := q.hostLocked(hostKey)
		// The wake channel is the workers': a slot taken by a lease is
		// looked at again after a short wait instead.
		wait := requestPoll
		if h.inflight < max(h.pol.MaxParallel, 1) {
			if d := h.readyAt.Sub(now); d > 0 {
				wait = d
			} else {
				h.inflight++
				q.mu.Unlock()
				return func() { q.endRequest(h) }, nil
			}
		}
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait): // a timer not stopped is collected (Go 1.23)
		}
	}
}

// requestPoll is how often Request looks at a host whose slots are all
// taken.
const requestPoll = 50 * time.Millisecond

// endRequest frees the slot a Request took and starts the host's delay. A
// read of the due URLs keeps a host in q.hosts while one is in flight.
func (q *scheduler) endRequest(h *host) {
	pol := q.s.policy(h.key)
	q.mu.Lock()
	h.inflight--
	h.pol = pol
	if t := q.s.now().Add(pol.Delay); t.After(h.readyAt) {
		h.readyAt = t
	}
	q.mu.Unlock()
	q.signal()
}

// lease is one URL handed to one worker.
type lease struct {
	s     *Store
	h     *host
	rec   frontier.Record
	seq   int64
	seqNo int64
	term  int64
	histN int64         // events in its history when leased
	dup   string        // its group of duplicates when leased
	claim int           // and its claim in it
	bytes int64         // Fetched's, for the history
	took  time.Duration // Fetched's
	done  bool          // CompleteAsync or Release was called
	ended bool          // its outcome is on its way to the index
	// fence is done once the partition's hold may have lapsed (see
	// ownership.extend): the request must not start or go on.
	fence context.Context
	// cycle is the cycle it was leased in, rc and rn the record's
	// requests as read, reserved whether it holds a page reservation.
	cycle    uint64
	rc       uint64
	rn       int64
	reserved bool
	// marks are the page limits' marks that count what is held back once
	// its outcome, and the links found with it, are stored.
	marks []*countdown
}

var _ frontier.Fenced = (*lease)(nil)

// Fence is done once this process can no longer be sure it alone
// schedules the URL's host: its partition was not renewed in time, or
// is lost.
func (l *lease) Fence() context.Context { return l.fence }

func (l *lease) Item() frontier.Item { return l.rec.Item }

func (l *lease) Record() frontier.Record {
	r := l.rec
	r.State = frontier.InFlight
	return r
}

func (l *lease) HostKey() string { return l.h.key }

// Fetched notes the size and duration of the request made for the lease,
// for the history event its completion records.
func (l *lease) Fetched(bytes int64, took time.Duration) { l.bytes, l.took = bytes, took }

var errLeaseDone = errors.New("esfrontier: lease already ended")

// completion is an outcome on its way to the index.
type completion struct {
	l     *lease
	o     frontier.Outcome
	rec   frontier.Record
	done  func(error)
	links []uint64
	// events are the history events its outcome records.
	events []frontier.Event
	// seqNo and term are the version the outcome made, once stored;
	// zero when it was stored after a conflict.
	seqNo, term int64
	// addLines and excl are the _bulk lines of Found's links and of each
	// of its refusals.
	addLines []addLine
	excl     []int
	exclAdm  [][]*admitted
}

// CompleteAsync frees the host's slot, starts its delay and hands the
// outcome to the writer, which stores it with others in two _bulk
// requests (the page's links, then the outcomes) and calls done once it is
// stored and searchable.
func (l *lease) CompleteAsync(o frontier.Outcome, done func(error)) error {
	if l.done {
		return errLeaseDone
	}
	switch o.State {
	case frontier.Fetched, frontier.Waiting:
	case frontier.Error, frontier.Excluded:
		if o.Reason == "" {
			l.Release()
			return fmt.Errorf("esfrontier: %s: %s outcome without a reason", l.rec.URL, o.State)
		}
	default:
		l.Release()
		return fmt.Errorf("esfrontier: %s: cannot complete as %s", l.rec.URL, o.State)
	}
	if o.Pending != "" && o.Pending != frontier.PendingIndex && o.Pending != frontier.PendingDelete && o.Pending != frontier.PendingHold {
		l.Release()
		return fmt.Errorf("esfrontier: %s: unknown pending write %q", l.rec.URL, o.Pending)
	}
	l.done = true
	s, q := l.s, l.s.sched
	now := s.now()
	rec := l.rec
	rec.CheckedAt, rec.Status = now, o.Status
	switch o.State {
	case frontier.Fetched:
		rec.Reason, rec.FetchedAt = "", now
		rec.ETag, rec.LastModified, rec.Hash = o.ETag, o.LastModified, o.Hash
		rec.ErrCount, rec.TempErrCount = 0, 0
	case frontier.Error:
		rec.Reason = o.Reason
		rec.ErrCount++
		rec.TempErrCount = 0
	case frontier.Excluded:
		rec.Reason = o.Reason
	case frontier.Waiting:
		rec.Reason = o.Reason
		rec.TempErrCount++
	}
	if o.State != frontier.Waiting {
		rec.Target = o.Target
	}
	if o.Pending != "" {
		rec.DocID, rec.Pending = o.DocID, o.Pending
	}
	rec.State = o.State
	c := &completion{l: l, o: o, rec: rec, done: done}
	if o.ReadLinks {
		rec.HasLinks = true
		c.rec.HasLinks = true
		links := slices.Clone(o.Links)
		if o.Found != nil {
			for _, it := range o.Found.Links {
				links = append(links, frontier.LinkKey(it.URL))
			}
		}
		slices.Sort(links)
		c.links = slices.Compact(links)
	}
	pol := s.policy(l.h.key)
	q.mu.Lock()
	h := l.h
	h.inflight--
	h.pol = pol
	if !o.NoRequest {
		if t := now.Add(pol.Delay); t.After(h.readyAt) {
			h.readyAt = t
		}
	}
	if o.Backoff.After(h.readyAt) {
		h.readyAt = o.Backoff
	}
	l.ended = true
	closed := q.closed
	q.mu.Unlock()
	q.signal()
	if closed {
		q.finish(c, errClosed)
		return errClosed
	}
	q.out <- c
	return nil
}

// Release gives the URL back untouched, at the head of its host's buffer.
func (l *lease) Release() {
	if l.done {
		return
	}
	l.done = true
	q := l.s.sched
	q.mu.Lock()
	l.h.inflight--
	q.endPageLocked(l, false)
	q.endLeaseLocked(l)
	if q.parts[l.h.part] {
		l.h.queue = append([]queued{{rec: l.rec, seq: l.seq, seqNo: l.seqNo, term: l.term, histN: l.histN, dup: l.dup, claim: l.claim}}, l.h.queue...)
	}
	q.mu.Unlock()
	q.signal()
}

// finish ends a lease whose outcome is stored (err nil) or could not be.
func (q *scheduler) finish(c *completion, err error) {
	u := c.l.rec.URL
	q.mu.Lock()
	q.endPageLocked(c.l, err == nil && !c.o.NoRequest)
	if err != nil {
		q.held[u] = true
	} else {
		q.recent[u] = storedOutcome{at: q.s.now(), seqNo: c.seqNo, term: c.term}
		if c.o.Pending != "" && !frontier.HeldDelete(c.o.Pending) {
			// A held delete is sent by no one: nothing to wait for.
			q.unacked[u] = c.l.h.part
		}
	}
	if c.o.Found != nil && len(c.o.Found.Links) > 0 {
		q.askLoad()
	}
	q.mu.Unlock()
	// The URL counts as leased until done returns, as with the embedded
	// store: what done queues (a group of duplicates settled, its members
	// fetched again) is stored before Next may find the crawl idle.
	c.done(err)
	q.mu.Lock()
	q.endLeaseLocked(c.l)
	q.mu.Unlock()
	q.signal()
}

// complete stores outcomes as they come, many to a write.
func (q *scheduler) complete() {
	s := q.s
	defer s.wg.Done()
	for {
		var batch []*completion
		select {
		case c := <-q.out:
			batch = append(batch, c)
		case <-s.ctx.Done():
			// Close: store what was handed over before it.
			for {
				select {
				case c := <-q.out:
					batch = append(batch, c)
					continue
				default:
				}
				break
			}
			if len(batch) > 0 {
				q.store(context.Background(), batch)
			}
			return
		}
	more:
		for len(batch) < maxBatch {
			select {
			case c := <-q.out:
				batch = append(batch, c)
			default:
				break more
			}
		}
		q.store(s.ctx, batch)
	}
}

// retryWaits are the pauses between attempts at a write the cluster did
// not take; after the last the store is broken and the crawl stops.
var retryWaits = []time.Duration{250 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}

func (q *scheduler) store(ctx context.Context, batch []*completion) {
	s := q.s
	if ctx.Err() != nil {
		ctx = context.Background()
	}
	// First the pages' links, refusals and outlinks: once a page's outcome
	// is searchable, what it found is stored, so a whole-cluster count of
	// Waiting URLs cannot miss it.
	var found ndjson
	for _, c := range batch {
		o := &c.o
		if o.Found != nil {
			c.addLines = s.addLines(&found, o.Found.Links)
			for i := range o.Found.Refused {
				r := &o.Found.Refused[i]
				adms := s.excludeLines(&found, r.Reason, r.Items)
				c.excl = append(c.excl, len(adms))
				c.exclAdm = append(c.exclAdm, adms)
			}
		}
		if c.o.ReadLinks {
			s.linksLine(&found, c.rec.URL, c.links)
		}
	}
	// And the URLs joining a group of duplicates, so that their groups list
	// them once their outcomes are stored.
	joins := s.groupJoins(batch)
	for _, j := range joins {
		found.Write(j)
	}
	var items []bulkItem
	err := s.retry(ctx, func() (err error) {
		items, err = s.bulk(ctx, found.Bytes(), "")
		return err
	})
	if err == nil && len(joins) > 0 {
		if len(items) < len(joins) {
			err = errors.New("esfrontier: short _bulk answer")
		} else {
			err = s.joinedGroups(ctx, joins, items[len(items)-len(joins):])
		}
	}
	if err == nil {
		i := 0
		for _, c := range batch {
			if c.o.Found != nil {
				n := len(c.addLines)
				var qerr error
				c.o.Found.Queued, qerr = s.answer(items[i:i+n], c.addLines)
				if qerr != nil && err == nil {
					err = qerr
				}
				i += n
				for j, n := range c.excl {
					c.o.Found.Refused[j].New = s.countCreatedUndo(items[i:i+n], c.exclAdm[j])
					i += n
				}
			}
			if c.o.ReadLinks {
				i++
			}
		}
	}
	if err != nil {
		for _, c := range batch {
			for _, l := range c.addLines {
				s.bud.answered(l.adm, false)
			}
			for _, adms := range c.exclAdm {
				for _, a := range adms {
					s.bud.answered(a, false)
				}
			}
		}
		q.fail(batch, err)
		return
	}
	// Then the outcomes, each written only over the version it was leased
	// at: a record changed since (a sighting, a requeue, a reapplied
	// config, the next holder of a partition this process lost) is read
	// again and judged as it stands.
	var recs ndjson
	now := s.now()
	for _, c := range batch {
		d := s.toDoc(&c.rec, c.l.seq)
		if c.o.State == frontier.Waiting {
			d.Seq = s.now().UnixNano() // back at the tail of its queue
		}
		recs.line(map[string]any{"update": map[string]any{"_index": s.urls, "_id": docID(c.rec.URL), "routing": d.Host,
			"if_seq_no": c.l.seqNo, "if_primary_term": c.l.term}})
		f := docFields(&d)
		if content, claim, ok := membership(&c.o); ok {
			f["dup"], f["claim"] = content, claim
		}
		if !c.o.NoRequest {
			// The request counts for the page limits (pages.go).
			n := int64(1)
			if c.l.rc == c.l.cycle {
				n = c.l.rn + 1
			}
			f["rc"], f["rn"], f["rp"] = c.l.cycle, n, s.inst
		}
		if s.histLen > 0 {
			c.events = outcomeEvents(c, now)
			f["hist"], f["hn"] = s.histSlots(c.l.histN, c.events)
		}
		recs.line(map[string]any{"doc": f})
	}
	err = s.retry(ctx, func() (err error) {
		items, err = s.bulk(ctx, recs.Bytes(), "")
		return err
	})
	if err != nil {
		q.fail(batch, err)
		return
	}
	var again []*completion
	errs := make([]error, len(batch))
	// Which outcomes were stored, and which of them after a conflict.
	stored, rewritten := make([]bool, len(batch)), make([]bool, len(batch))
	for k, c := range batch {
		switch {
		case k >= len(items):
			errs[k] = errors.New("esfrontier: short _bulk answer")
		case items[k].Status == 409:
			again = append(again, c)
		default:
			if e := itemError(&items[k]); e != nil {
				errs[k] = fmt.Errorf("esfrontier: %s: %w", c.rec.URL, e)
			} else {
				c.seqNo, c.term = items[k].SeqNo, items[k].PrimaryTerm
			}
		}
	}
	if len(again) > 0 {
		byURL := make(map[string]*completion, len(again))
		urls := make([]string, len(again))
		for i, c := range again {
			byURL[c.rec.URL], urls[i] = c, c.rec.URL
		}
		_, changed, cerrs, cerr := s.changeNoting(urls, func(r *frontier.Record, note func(...frontier.Event)) (bool, error) {
			if r.State != frontier.Waiting {
				return false, nil // decided by someone else: that stands
			}
			c := byURL[r.URL]
			rec := c.rec
			rec.Cycle, rec.SeenCycle, rec.Lastmod, rec.Orphan = r.Cycle, r.SeenCycle, r.Lastmod, r.Orphan
			*r = rec
			note(c.events...)
			return true, nil
		})
		for i, c := range again {
			e := cerr
			if e == nil {
				e = cerrs[i]
			}
			for k := range batch {
				if batch[k] == c {
					errs[k] = e
					rewritten[k] = cerr == nil && changed[i]
				}
			}
		}
	}
	for k := range batch {
		stored[k] = errs[k] == nil && (!slices.Contains(again, batch[k]) || rewritten[k])
	}
	s.leaveGroups(ctx, batch, stored, rewritten)
	for k, c := range batch {
		q.finish(c, errs[k])
	}
	s.markSeen(batch)
}

// Recover makes a store whose outcomes could not be stored (the cluster
// unreachable past every retry) hand out URLs again, for another attempt
// at the cycle: Next no longer returns the failure, and the URLs whose
// outcome was lost, still Waiting in the index, are leased again (each
// fetched once more). Call it with no worker running.
func (s *Store) Recover() {
	q := s.sched
	q.mu.Lock()
	q.broken = nil
	clear(q.held)
	q.mu.Unlock()
	q.askLoad()
}

// fail ends every lease of batch unrecorded and breaks the store until
// Recover: the cluster did not take a write after every retry.
func (q *scheduler) fail(batch []*completion, err error) {
	e := &Error{Op: "record outcomes", Err: err}
	q.mu.Lock()
	if q.broken == nil {
		q.broken = e
	}
	q.mu.Unlock()
	for _, c := range batch {
		q.finish(c, e)
	}
}

func (s *Store) retry(ctx context.Context, fn func() error) error {
	var err error
	for i := 0; ; i++ {
		if err = fn(); err == nil {
			return nil
		}
		if i == len(retryWaits) {
			return err
		}
		select {
		case <-time.After(retryWaits[i]):
		case <-ctx.Done():
			return err
		}
	}
}

// clearable are the fields of doc left out when empty that an outcome
// sets, with their empty values.
var clearable = map[string]any{"reason": "", "status": 0, "err_count": 0, "temp_err_count": 0, "etag": "",
	"last_modified": "", "hash": "", "doc_id": "", "target": ""}

// wholeDoc is every field of d but the history, the empty ones included,
// for a partial update that replaces the record and keeps its history.
func wholeDoc(d *doc) map[string]any {
	js, _ := json.Marshal(d)
	var m map[string]any
	_ = json.Unmarshal(js, &m)
	for k, zero := range clearable {
		if _, ok := m[k]; !ok {
			m[k] = zero
		}
	}
	for k, zero := range map[string]any{"depth": 0, "kind": 0, "via": "", "found": "", "hops": 0, "has_links": false} {
		if _, ok := m[k]; !ok {
			m[k] = zero
		}
	}
	return m
}

// docFields are the fields an outcome sets: not those other processes
// change concurrently (the cycle and sightings of Add, orphan marks).
func docFields(d *doc) map[string]any {
	js, _ := json.Marshal(d)
	var m map[string]any
	_ = json.Unmarshal(js, &m)
	for _, k := range []string{"seen", "lastmod", "cycle", "orphan", "url", "host", "part", "source"} {
		delete(m, k)
	}
	// A partial update keeps the fields it leaves out: those an outcome
	// clears (a fetch after errors, a page that lost its validators) are
	// written empty, not omitted.
	for k, zero := range clearable {
		if _, ok := m[k]; !ok {
			m[k] = zero
		}
	}
	return m
}

// dropURLs takes excluded URLs out of the hosts' buffers.
func (q *scheduler) dropURLs(urls map[string]string) {
	if len(urls) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, h := range q.hosts {
		kept := h.queue[:0]
		for _, it := range h.queue {
			if _, ok := urls[it.rec.URL]; !ok {
				kept = append(kept, it)
			}
		}
		h.queue = kept
	}
}
