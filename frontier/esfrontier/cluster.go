package esfrontier

import (
	"context"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// ownership takes, renews and gives back this process's partitions. A
// partition's lease is a document of the meta index, lease-<n>, written
// only with the if_seq_no and if_primary_term last read, so two processes
// never both believe they hold it: the second write fails with 409.
type ownership struct {
	s  *Store
	mu sync.Mutex
	// held are this process's partitions: the lease document's version
	// as last written, and until when Next may lease from its hosts.
	held map[int]*heldPart
	view View
	// started says a round succeeded: leases naming this node are no
	// longer its previous run's.
	started bool
	// takenOver are partitions of dead processes whose unacknowledged
	// writes are still to be queued again.
	takenOver []int
	// fresh are held partitions not yet handed to the scheduler: taken or
	// adopted, waiting for the refresh that makes their last holder's
	// writes searchable. A round that fails leaves them for the next.
	fresh map[int]bool
	// uses is held's usable times and fences, published whole after each
	// change: the scheduler reads it under its own lock, which must never
	// wait for mu (tick holds mu while it calls the scheduler).
	uses atomic.Pointer[map[int]partUse]
}

type heldPart struct {
	seq, term int64
	// usable is the start of the last successful renewal plus two thirds
	// of the TTL: a process that cannot renew stops starting requests
	// well before another may take the partition, at its expiry (the
	// round's start plus the TTL).
	usable   time.Time
	draining bool
	// fence is done a sixth of the TTL after usable unless a renewal
	// moves it: the requests still under way for the partition's URLs
	// stop then, before the expiry (see frontier.Fenced).
	fence *fence
}

// partUse is what the scheduler needs of a held partition.
type partUse struct {
	until    time.Time
	draining bool
	fence    context.Context
}

// fence is a context done when its partition's hold can no longer be
// relied on: a timer pushed back by each renewal, or the partition's loss.
type fence struct {
	ctx    context.Context
	cancel context.CancelFunc
	timer  *time.Timer
}

// extend records a renewal (or take) of h begun at start: no new request
// from two thirds of the TTL after it, and those under way stop at five
// sixths. Its fence is pushed back, or replaced once done: requests
// stopped then stay stopped.
func (o *ownership) extend(p int, h *heldPart, start time.Time) {
	ttl := o.s.ttl
	h.usable = start.Add(ttl * 2 / 3)
	d := start.Add(ttl * 5 / 6).Sub(o.s.now())
	if h.fence != nil && h.fence.timer.Stop() && h.fence.ctx.Err() == nil {
		h.fence.timer.Reset(d)
		return
	}
	f := &fence{}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.timer = time.AfterFunc(d, func() {
		f.cancel()
		o.s.log.Warn("cluster partition not renewed in time: its requests stop until a renewal succeeds", "node", o.s.node, "partition", p)
	})
	h.fence = f
}

// end stops h's fence: the partition is no longer held.
func (h *heldPart) end() {
	if h.fence != nil {
		h.fence.timer.Stop()
		h.fence.cancel()
	}
}

// dropLocked forgets a held partition: another process holds it now, or
// it was given back.
func (o *ownership) dropLocked(p int) {
	if h := o.held[p]; h != nil {
		h.end()
	}
	delete(o.held, p)
	delete(o.fresh, p)
	o.s.sched.dropPart(p)
}

// leaseDoc and memberDoc are the meta index's documents of the cluster.
type leaseDoc struct {
	Type     string `json:"type"`
	Part     int    `json:"part"`
	Holder   string `json:"holder"`
	Expires  int64  `json:"expires"`
	Released bool   `json:"released"`
}

type memberDoc struct {
	Type      string `json:"type"`
	Holder    string `json:"holder"`
	Heartbeat int64  `json:"heartbeat"`
	Hosts     int    `json:"hosts"`
	InFlight  int    `json:"in_flight"`
	Parts     int    `json:"parts"`
}

// View is the cluster as last read by this process: the live processes and
// who holds which partitions.
type View struct {
	At      time.Time
	Members []Member
	// Holders maps each partition to its holder, "" when free.
	Holders []string
}

// Member is one process of the cluster.
type Member struct {
	Node      string
	Heartbeat time.Time
	Alive     bool
	// Parts is how many partitions it holds, Hosts how many hosts it
	// schedules, InFlight its requests under way, as it last said.
	Parts, Hosts, InFlight int
}

func newOwnership(s *Store) *ownership {
	return &ownership{s: s, held: map[int]*heldPart{}, fresh: map[int]bool{}}
}

func (o *ownership) run() {
	defer o.s.wg.Done()
	// A round every sixth of the TTL: a renewal that takes up to half the
	// TTL still comes before the last one's usable time (two thirds of
	// the TTL after it began).
	t := time.NewTicker(o.s.ttl / 6)
	defer t.Stop()
	for {
		select {
		case <-o.s.ctx.Done():
			return
		case <-t.C:
		}
		// A renewal answered later than two thirds of the TTL after the
		// round began keeps the lease but makes nothing usable: the round
		// gives up then, and the next begins at once.
		ctx, cancel := context.WithTimeout(o.s.ctx, o.s.ttl*2/3)
		// A failed round is retried at the next tick; the partitions stay
		// usable until their margin runs out.
		if err := o.tick(ctx); err != nil && o.s.ctx.Err() == nil {
			o.s.log.Warn("cluster round failed", "err", err)
		}
		cancel()
	}
}

// usable says whether Next may lease from part's hosts now, and returns
// the partition's fence for the lease.
func (o *ownership) usable(part int, now time.Time) (context.Context, bool) {
	m := o.uses.Load()
	if m == nil {
		return nil, false
	}
	u, ok := (*m)[part]
	if !ok || u.draining || !now.Before(u.until) || u.fence == nil || u.fence.Err() != nil {
		return nil, false
	}
	return u.fence, true
}

// publishLocked publishes the usable times and fences of held.
func (o *ownership) publishLocked() {
	m := make(map[int]partUse, len(o.held))
	for p, h := range o.held {
		u := partUse{until: h.usable, draining: h.draining}
		if h.fence != nil {
			u.fence = h.fence.ctx
		}
		m[p] = u
	}
	o.uses.Store(&m)
}

// Parts lists the partitions this process holds.
func (o *ownership) parts() []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []int
	for p, h := range o.held {
		if !h.draining {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// tick is one round: heartbeat, read the leases and members, renew what
// is held, give back what is over this process's share once its requests
// are done, and take free or expired partitions up to the share.
func (o *ownership) tick(ctx context.Context) error {
	s := o.s
	now := s.now()
	st := s.sched.stats()
	var ans struct {
		Hits struct {
			Hits []struct {
				ID          string     `json:"_id"`
				SeqNo       int64      `json:"_seq_no"`
				PrimaryTerm int64      `json:"_primary_term"`
				Source      metaSource `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	q := map[string]any{"size": 10000, "seq_no_primary_term": true,
		"query": map[string]any{"terms": map[string]any{"type": []string{"lease", "member", "cycle"}}}}
	if err := s.do(ctx, http.MethodPost, "/"+s.meta+"/_search", q, &ans); err != nil {
		return &Error{Op: "read the leases", Err: err}
	}
	type seen struct {
		doc       leaseDoc
		seq, term int64
	}
	leases := make([]*seen, s.parts)
	view := View{At: now, Holders: make([]string, s.parts)}
	// This process is alive whatever its member document says yet: its
	// heartbeat is written with this round's leases.
	living := map[string]bool{s.node: true}
	for _, h := range ans.Hits.Hits {
		switch h.Source.Type {
		case "cycle":
			s.observeCycle(h.Source.Value)
		case "lease":
			if p := h.Source.Part; p >= 0 && p < s.parts {
				leases[p] = &seen{doc: h.Source.leaseDoc(), seq: h.SeqNo, term: h.PrimaryTerm}
			}
		case "member":
			if h.Source.Holder == s.node {
				continue
			}
			m := Member{Node: h.Source.Holder, Heartbeat: time.Unix(0, h.Source.Heartbeat).UTC(),
				Parts: h.Source.Parts, Hosts: h.Source.Hosts, InFlight: h.Source.InFlight}
			m.Alive = now.Sub(m.Heartbeat) < s.ttl
			if m.Alive {
				living[m.Node] = true
			}
			view.Members = append(view.Members, m)
		}
	}
	share := (s.parts + len(living) - 1) / len(living)

	var body ndjson
	type op struct {
		part     int
		kind     string // renew, release, take
		takeover bool
	}
	var ops []op
	var lost, adopted []int
	expires := now.Add(s.ttl).UnixNano()
	o.mu.Lock()
	active := 0
	for p, l := range leases {
		// Only this node writes its name into a lease: one that names it
		// is its own, though the answer to the write was lost (a round
		// that timed out), or its previous run's.
		if l != nil && l.doc.Holder == s.node && o.held[p] == nil {
			o.held[p] = &heldPart{seq: l.seq, term: l.term}
			o.fresh[p] = true
			adopted = append(adopted, p)
			if !o.started {
				o.takenOver = append(o.takenOver, p)
			}
		}
	}
	for p, h := range o.held {
		if l := leases[p]; l == nil || l.doc.Holder != s.node {
			// Someone else wrote it: it is theirs.
			o.dropLocked(p)
			lost = append(lost, p)
			continue
		}
		h.seq, h.term = leases[p].seq, leases[p].term
		if !h.draining {
			active++
		}
	}
	// Over the share: stop leasing from the highest partitions; each is
	// given back once its requests have ended, so a host is never
	// fetched from two processes at once.
	if over := active - share; over > 0 {
		ps := make([]int, 0, len(o.held))
		for p, h := range o.held {
			if !h.draining {
				ps = append(ps, p)
			}
		}
		slices.Sort(ps)
		for _, p := range ps[len(ps)-over:] {
			o.held[p].draining = true
			delete(o.fresh, p)
			s.sched.dropPart(p)
		}
		active = share
	}
	o.publishLocked()
	member := memberDoc{Type: "member", Holder: s.node, Heartbeat: now.UnixNano(), Hosts: st.Hosts, InFlight: st.InFlight, Parts: len(o.held)}
	body.line(map[string]any{"index": map[string]any{"_index": s.meta, "_id": "member-" + s.node}})
	body.line(member)
	for p, h := range o.held {
		if h.draining && s.sched.inFlight(p) == 0 {
			releaseLine(&body, s.meta, p, h.seq, h.term)
			ops = append(ops, op{part: p, kind: "release"})
			continue
		}
		body.line(map[string]any{"index": map[string]any{"_index": s.meta, "_id": fmt.Sprintf("lease-%d", p), "if_seq_no": h.seq, "if_primary_term": h.term}})
		body.line(leaseDoc{Type: "lease", Part: p, Holder: s.node, Expires: expires})
		ops = append(ops, op{part: p, kind: "renew"})
	}
	if want := share - active; want > 0 {
		// Start where this node's name points, so that processes starting
		// together mostly ask for different partitions.
		hf := fnv.New32a()
		hf.Write([]byte(s.node))
		start := int(hf.Sum32() % uint32(s.parts))
		for i := 0; i < s.parts && want > 0; i++ {
			p := (start + i) % s.parts
			if o.held[p] != nil {
				continue
			}
			l := leases[p]
			switch {
			case l == nil:
				body.line(map[string]any{"create": map[string]any{"_index": s.meta, "_id": fmt.Sprintf("lease-%d", p)}})
			case l.doc.Holder == "" || l.doc.Expires < now.UnixNano():
				// Free, or expired: its holder stopped its requests a third
				// of the TTL ago (its fence), if it lives.
				body.line(map[string]any{"index": map[string]any{"_index": s.meta, "_id": fmt.Sprintf("lease-%d", p), "if_seq_no": l.seq, "if_primary_term": l.term}})
			default:
				continue
			}
			body.line(leaseDoc{Type: "lease", Part: p, Holder: s.node, Expires: expires})
			// A holder that still beats only renewed late: it sees its
			// writes acknowledged itself. One that is gone (or this node's
			// previous run) left them to the next holder.
			dead := l != nil && l.doc.Holder != "" && !l.doc.Released && !living[l.doc.Holder]
			ops = append(ops, op{part: p, kind: "take", takeover: dead})
			want--
		}
	}
	o.mu.Unlock()
	items, err := s.bulk(ctx, body.Bytes(), "true")
	if err != nil {
		// What the node applied is known at the next round: a lease that
		// names this process is adopted then.
		o.logChanges(nil, lost, nil, adopted)
		return &Error{Op: "write the leases", Err: err}
	}
	if len(items) > 0 && items[0].Status/100 != 2 {
		s.log.Warn("cluster heartbeat refused", "node", s.node, "err", itemError(&items[0]))
	}
	if len(items) > 0 {
		items = items[1:]
	}
	var taken, released []int
	o.mu.Lock()
	for i, it := range items {
		if i >= len(ops) {
			break
		}
		p, ok := ops[i].part, it.Status/100 == 2
		switch ops[i].kind {
		case "renew":
			h := o.held[p]
			switch {
			case h == nil:
			case ok:
				h.seq, h.term = it.SeqNo, it.PrimaryTerm
				o.extend(p, h, now)
			case it.Status == 409:
				o.dropLocked(p)
				lost = append(lost, p)
			}
			// Any other refusal leaves the lease as it was: its fence
			// runs out unless the next round renews it.
		case "release":
			if h := o.held[p]; h != nil {
				h.end()
			}
			delete(o.held, p)
			delete(o.fresh, p)
			released = append(released, p)
		case "take":
			if ok {
				h := &heldPart{seq: it.SeqNo, term: it.PrimaryTerm}
				o.extend(p, h, now)
				o.held[p] = h
				o.fresh[p] = true
				taken = append(taken, p)
				if ops[i].takeover {
					o.takenOver = append(o.takenOver, p)
				}
			}
		}
	}
	for p := range view.Holders {
		if l := leases[p]; l != nil && l.doc.Holder != "" && l.doc.Expires >= now.UnixNano() {
			view.Holders[p] = l.doc.Holder
		}
	}
	for p, h := range o.held {
		if !h.draining {
			view.Holders[p] = s.node
		}
	}
	view.Members = append(view.Members, Member{Node: s.node, Heartbeat: time.Unix(0, member.Heartbeat).UTC(), Alive: true,
		Parts: len(o.held), Hosts: st.Hosts, InFlight: st.InFlight})
	sort.Slice(view.Members, func(i, j int) bool { return view.Members[i].Node < view.Members[j].Node })
	o.view = view
	o.publishLocked()
	o.started = true
	var fresh []int
	for p := range o.fresh {
		if h := o.held[p]; h != nil && !h.draining {
			fresh = append(fresh, p)
		}
	}
	retry := slices.Clone(o.takenOver)
	o.mu.Unlock()
	o.logChanges(taken, lost, released, adopted)
	if len(fresh) == 0 && len(retry) == 0 {
		return nil
	}
	// What the last holder stored is searchable before the first read: a
	// partition is scheduled only after a refresh that followed its take.
	refreshed := s.bud.seal()
	if err := s.refresh(ctx); err != nil {
		return &Error{Op: "take over partitions", Err: err}
	}
	if len(fresh) > 0 && (s.bud.urlLimits() || s.bud.pageLimits()) {
		s.bud.afterTake(ctx, refreshed)
	}
	var rerr error
	if len(retry) > 0 {
		// The partitions of a process taken for dead: the pages whose
		// document it had not yet seen acknowledged are fetched and
		// written again by this one (tried again at the next round
		// until done).
		if rerr = s.requeuePending(ctx, retry); rerr == nil {
			o.mu.Lock()
			o.takenOver = o.takenOver[len(retry):]
			o.mu.Unlock()
		}
	}
	o.mu.Lock()
	ready := fresh[:0]
	for _, p := range fresh {
		// Still held: a round meanwhile may have lost it.
		if h := o.held[p]; h != nil && !h.draining && o.fresh[p] {
			ready = append(ready, p)
			delete(o.fresh, p)
		}
	}
	o.mu.Unlock()
	s.sched.addParts(ready)
	if rerr != nil {
		return &Error{Op: "take over partitions", Err: rerr}
	}
	return nil
}

// logChanges tells which partitions this process took, lost, gave back
// and found it held though its round had failed.
func (o *ownership) logChanges(taken, lost, released, adopted []int) {
	if len(taken)+len(lost)+len(released)+len(adopted) == 0 {
		return
	}
	slices.Sort(taken)
	slices.Sort(lost)
	slices.Sort(released)
	slices.Sort(adopted)
	o.s.log.Info("cluster partitions changed", "node", o.s.node, "took", taken, "lost", lost, "gave_back", released,
		"adopted", adopted, "holds", o.parts())
}

// waitForNamesake refuses to run beside a live process of the same name:
// a heartbeat younger than the TTL is watched until the TTL has passed,
// and one that moves meanwhile is another process's.
func (o *ownership) waitForNamesake(ctx context.Context) error {
	s := o.s
	read := func() (int64, error) {
		a, err := s.get(ctx, s.meta, "member-"+s.node, "")
		if err != nil || !a.Found {
			return 0, err
		}
		var m memberDoc
		err = jsonUnmarshal(a.Source, &m)
		return m.Heartbeat, err
	}
	hb, err := read()
	if err != nil {
		return &Error{Op: "read the members", Err: err}
	}
	if hb == 0 {
		return nil
	}
	wait := time.Unix(0, hb).Add(s.ttl).Sub(s.now())
	if wait <= 0 {
		return nil
	}
	select {
	case <-time.After(wait):
	case <-ctx.Done():
		return ctx.Err()
	}
	again, err := read()
	if err != nil {
		return &Error{Op: "read the members", Err: err}
	}
	if again != hb {
		return fmt.Errorf("esfrontier: another live process is named %q: give each process its own node name", s.node)
	}
	return nil
}

// releaseAll gives every held partition back and removes this process
// from the members, so the others take its share at their next round.
func (o *ownership) releaseAll(ctx context.Context) error {
	s := o.s
	var body ndjson
	o.mu.Lock()
	for p, h := range o.held {
		releaseLine(&body, s.meta, p, h.seq, h.term)
		h.end()
	}
	o.held = map[int]*heldPart{}
	o.fresh = map[int]bool{}
	o.publishLocked()
	o.mu.Unlock()
	body.line(map[string]any{"delete": map[string]any{"_index": s.meta, "_id": "member-" + s.node}})
	if _, err := s.bulk(ctx, body.Bytes(), "true"); err != nil {
		return &Error{Op: "give the partitions back", Err: err}
	}
	// A round whose answer was lost (a timeout on a busy node) may have
	// renewed or taken a lease after the version held here: that release
	// was refused (409), and the lease, naming this process still, would
	// keep its partition from the others until it expires. Each such
	// lease is given back over the version it is read at.
	var ans struct {
		Hits struct {
			Hits []struct {
				SeqNo       int64      `json:"_seq_no"`
				PrimaryTerm int64      `json:"_primary_term"`
				Source      metaSource `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	q := map[string]any{"size": s.parts, "seq_no_primary_term": true, "query": map[string]any{"bool": map[string]any{
		"filter": []any{map[string]any{"term": map[string]any{"type": "lease"}}, map[string]any{"term": map[string]any{"holder": s.node}}}}}}
	if err := s.do(ctx, http.MethodPost, "/"+s.meta+"/_search", q, &ans); err != nil {
		return &Error{Op: "read the partitions given back", Err: err}
	}
	body.Reset()
	for _, h := range ans.Hits.Hits {
		releaseLine(&body, s.meta, h.Source.Part, h.SeqNo, h.PrimaryTerm)
	}
	if _, err := s.bulk(ctx, body.Bytes(), "true"); err != nil {
		return &Error{Op: "give the partitions back", Err: err}
	}
	return nil
}

// releaseLine writes, into body, partition p's lease given back over the
// version (seq, term).
func releaseLine(body *ndjson, meta string, p int, seq, term int64) {
	body.line(map[string]any{"index": map[string]any{"_index": meta, "_id": fmt.Sprintf("lease-%d", p), "if_seq_no": seq, "if_primary_term": term}})
	body.line(leaseDoc{Type: "lease", Part: p, Released: true})
}

// Cluster returns the cluster as this process last read it.
func (s *Store) Cluster() View {
	s.own.mu.Lock()
	defer s.own.mu.Unlock()
	v := s.own.view
	v.Members = slices.Clone(v.Members)
	v.Holders = slices.Clone(v.Holders)
	return v
}

// metaSource reads either kind of the meta index's documents.
type metaSource struct {
	Type      string `json:"type"`
	Part      int    `json:"part"`
	Holder    string `json:"holder"`
	Expires   int64  `json:"expires"`
	Released  bool   `json:"released"`
	Heartbeat int64  `json:"heartbeat"`
	Hosts     int    `json:"hosts"`
	InFlight  int    `json:"in_flight"`
	Parts     int    `json:"parts"`
	Value     uint64 `json:"value"`
}

func (r metaSource) leaseDoc() leaseDoc {
	return leaseDoc{Type: r.Type, Part: r.Part, Holder: r.Holder, Expires: r.Expires, Released: r.Released}
}
