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
	// usableUntil is held's usable times, published whole after each
	// change: the scheduler reads it under its own lock, which must never
	// wait for mu (tick holds mu while it calls the scheduler).
	usableUntil atomic.Pointer[map[int]time.Time]
}

type heldPart struct {
	seq, term int64
	// usable is the last successful renewal plus two thirds of the TTL:
	// a process that cannot renew stops fetching well before another may
	// take the partition.
	usable   time.Time
	draining bool
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

func newOwnership(s *Store) *ownership { return &ownership{s: s, held: map[int]*heldPart{}} }

func (o *ownership) run() {
	defer o.s.wg.Done()
	t := time.NewTicker(o.s.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-o.s.ctx.Done():
			return
		case <-t.C:
		}
		// Up to half the TTL: a slow node makes late renewals, never
		// lost ones.
		ctx, cancel := context.WithTimeout(o.s.ctx, o.s.ttl/2)
		// A failed round is retried at the next tick; the partitions stay
		// usable until their margin runs out.
		if err := o.tick(ctx); err != nil && o.s.ctx.Err() == nil {
			o.s.log.Warn("cluster round failed", "err", err)
		}
		cancel()
	}
}

// usable says whether Next may lease from part's hosts now.
func (o *ownership) usable(part int, now time.Time) bool {
	m := o.usableUntil.Load()
	if m == nil {
		return false
	}
	until, ok := (*m)[part]
	return ok && now.Before(until)
}

// publishLocked publishes the usable times of held.
func (o *ownership) publishLocked() {
	m := make(map[int]time.Time, len(o.held))
	for p, h := range o.held {
		if !h.draining {
			m[p] = h.usable
		}
	}
	o.usableUntil.Store(&m)
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
	o.mu.Lock()
	nparts := len(o.held)
	o.mu.Unlock()
	member := memberDoc{Type: "member", Holder: s.node, Heartbeat: now.UnixNano(), Hosts: st.Hosts, InFlight: st.InFlight, Parts: nparts}
	if err := s.do(ctx, http.MethodPut, "/"+s.meta+"/_doc/member-"+esc(s.node)+"?refresh=true", member, nil); err != nil {
		return &Error{Op: "heartbeat", Err: err}
	}
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
	alive := 0
	living := map[string]bool{}
	for _, h := range ans.Hits.Hits {
		switch h.Source.Type {
		case "cycle":
			s.observeCycle(h.Source.Value)
		case "lease":
			if p := h.Source.Part; p >= 0 && p < s.parts {
				leases[p] = &seen{doc: h.Source.leaseDoc(), seq: h.SeqNo, term: h.PrimaryTerm}
			}
		case "member":
			m := Member{Node: h.Source.Holder, Heartbeat: time.Unix(0, h.Source.Heartbeat).UTC(),
				Parts: h.Source.Parts, Hosts: h.Source.Hosts, InFlight: h.Source.InFlight}
			m.Alive = now.Sub(m.Heartbeat) < s.ttl
			if m.Alive {
				alive++
				living[m.Node] = true
			}
			view.Members = append(view.Members, m)
		}
	}
	sort.Slice(view.Members, func(i, j int) bool { return view.Members[i].Node < view.Members[j].Node })
	alive = max(alive, 1)
	share := (s.parts + alive - 1) / alive

	var body ndjson
	type op struct {
		part     int
		kind     string // renew, release, take
		takeover bool
	}
	var ops []op
	expires := now.Add(s.ttl).UnixNano()
	o.mu.Lock()
	active := 0
	var adopted, adoptedOver []int
	for p, l := range leases {
		// Only this node writes its name into a lease: one that names it
		// is its own, though the answer to the write was lost (a round
		// that timed out), or its previous run's.
		if l != nil && l.doc.Holder == s.node && o.held[p] == nil {
			o.held[p] = &heldPart{seq: l.seq, term: l.term}
			adopted = append(adopted, p)
			if !o.started {
				adoptedOver = append(adoptedOver, p)
			}
		}
	}
	for p, h := range o.held {
		if l := leases[p]; l == nil || l.doc.Holder != s.node {
			// Someone else wrote it: it is theirs.
			delete(o.held, p)
			s.sched.dropPart(p)
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
			s.sched.dropPart(p)
		}
		active = share
	}
	o.publishLocked()
	for p, h := range o.held {
		if h.draining && s.sched.inFlight(p) == 0 {
			body.line(map[string]any{"index": map[string]any{"_index": s.meta, "_id": fmt.Sprintf("lease-%d", p), "if_seq_no": h.seq, "if_primary_term": h.term}})
			body.line(leaseDoc{Type: "lease", Part: p, Released: true})
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
				// Free or expired.
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
		return &Error{Op: "write the leases", Err: err}
	}
	var taken, takenOver []int
	o.mu.Lock()
	for i, it := range items {
		if i >= len(ops) {
			break
		}
		p, ok := ops[i].part, it.Status/100 == 2
		switch ops[i].kind {
		case "renew":
			if h := o.held[p]; h != nil {
				if ok {
					h.seq, h.term, h.usable = it.SeqNo, it.PrimaryTerm, now.Add(s.ttl*2/3)
				} else {
					delete(o.held, p)
					s.sched.dropPart(p)
				}
			}
		case "release":
			delete(o.held, p)
		case "take":
			if ok {
				o.held[p] = &heldPart{seq: it.SeqNo, term: it.PrimaryTerm, usable: now.Add(s.ttl * 2 / 3)}
				taken = append(taken, p)
				if ops[i].takeover {
					takenOver = append(takenOver, p)
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
	o.view = view
	o.publishLocked()
	o.mu.Unlock()
	o.mu.Lock()
	o.started = true
	taken = append(taken, adopted...)
	takenOver = append(takenOver, adoptedOver...)
	o.takenOver = append(o.takenOver, takenOver...)
	retry := o.takenOver
	o.mu.Unlock()
	if len(taken) > 0 || len(retry) > 0 {
		// What the last holder stored is searchable before the first read.
		err := s.refresh(ctx)
		if err == nil && len(retry) > 0 {
			// The partitions of a process taken for dead: the pages whose
			// document it had not yet seen acknowledged are fetched and
			// written again by this one (tried again at the next round
			// until done).
			if err = s.requeuePending(ctx, retry); err == nil {
				o.mu.Lock()
				o.takenOver = o.takenOver[len(retry):]
				o.mu.Unlock()
			}
		}
		s.sched.addParts(taken)
		if err != nil {
			return &Error{Op: "take over partitions", Err: err}
		}
	}
	return nil
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
		body.line(map[string]any{"index": map[string]any{"_index": s.meta, "_id": fmt.Sprintf("lease-%d", p), "if_seq_no": h.seq, "if_primary_term": h.term}})
		body.line(leaseDoc{Type: "lease", Part: p, Released: true})
	}
	o.held = map[int]*heldPart{}
	o.publishLocked()
	o.mu.Unlock()
	body.line(map[string]any{"delete": map[string]any{"_index": s.meta, "_id": "member-" + s.node}})
	if _, err := s.bulk(ctx, body.Bytes(), "true"); err != nil {
		return &Error{Op: "give the partitions back", Err: err}
	}
	return nil
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
