package esfrontier

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/crawlspace/crawlspace/frontier"
)

// The page limits of the budgets (max_pages_per_cycle,
// max_pages_per_host_per_cycle) with a store several processes share.
// A request is counted in the record of the URL it fetched: the cycle it
// was made in (rc) and the requests made to the URL in that cycle (rn),
// written with its outcome.
//
// A host's requests are made by the holder of its partition alone, so the
// holder counts them exactly: it reads them once (one aggregation) when
// the host first comes up in a cycle, or after it took the partition
// (after the take's refresh), and counts locally from then on, a lease
// reserving its request as with the embedded store. A source's requests
// are this store's own, counted here as they are stored, and the other
// stores': each record names the store that made its last request (rp),
// and the others' are read with the source's URL counts every second,
// leaving out this store's, so no request is counted twice however the
// read and the writes interleave. Before holding a source back the others'
// are read again after a refresh. The others' requests since the last read
// go uncounted, as with the URL limits.
//
// What a page limit holds back stays Waiting for the next cycle. Its mark
// (the source, or the source and host, and the cycle) is a document of the
// meta index, held-<cycle>-<source>[-<host>]: the due-URL reads and the
// whole-cluster idle check leave marked URLs out, so the cycle ends, and
// the next cycle's reads, under another number, bring them back.

// pageUse is a host's or this process's requests of a source in the cycle:
// counted (stored) and leased.
type pageUse struct{ pages, leased int64 }

// pageState is the scheduler's page accounting of one cycle; reset when
// the cycle changes.
type pageState struct {
	cycle uint64
	// host are the requests per source and host, for hosts whose count was
	// read (readHost).
	host     map[srcHost]*pageUse
	readHost map[string]bool
	// srcLeased are this process's leases per source.
	srcLeased map[string]int64
	// heldSrc and heldHost are what a page limit holds back in the cycle.
	heldSrc  map[string]bool
	heldHost map[srcHost]bool
}

func newPageState(cycle uint64) pageState {
	return pageState{cycle: cycle, host: map[srcHost]*pageUse{}, readHost: map[string]bool{}, srcLeased: map[string]int64{},
		heldSrc: map[string]bool{}, heldHost: map[srcHost]bool{}}
}

// pageLimits says whether any source has a page limit.
func (b *budgets) pageLimits() bool {
	for _, l := range b.limits {
		if l.Pages > 0 || l.PagesPerHost > 0 {
			return true
		}
	}
	return false
}

// pagesLocked brings q.pages to the current cycle. q.mu is held.
func (q *scheduler) pagesLocked() *pageState {
	if c := q.s.cycle.Load(); q.pages.host == nil || q.pages.cycle != c {
		q.pages = newPageState(c)
	}
	return &q.pages
}

// overPagesLocked says which page limit a lease of it on h would pass,
// whether that is known (a host whose count is not read yet waits for the
// next read), and reserves its request when none would. q.mu is held.
func (q *scheduler) overPagesLocked(h *host, rec *frontier.Record) (frontier.Limit, bool) {
	l := q.s.bud.limits[rec.Source]
	if l.Pages <= 0 && l.PagesPerHost <= 0 {
		return 0, true
	}
	p := q.pagesLocked()
	k := srcHost{rec.Source, h.key}
	if p.heldSrc[rec.Source] {
		return frontier.LimitPages, true
	}
	if p.heldHost[k] {
		return frontier.LimitPagesPerHost, true
	}
	if !p.readHost[h.key] {
		return 0, false
	}
	hu := p.host[k]
	if hu == nil {
		hu = &pageUse{}
		p.host[k] = hu
	}
	if l.Pages > 0 {
		n, exact := q.s.bud.sourcePages(rec.Source, p.cycle)
		if n+p.srcLeased[rec.Source] >= l.Pages {
			if !exact {
				q.s.bud.wantExact(rec.Source)
				return 0, false
			}
			return frontier.LimitPages, true
		}
	}
	if l.PagesPerHost > 0 && hu.pages+hu.leased >= l.PagesPerHost {
		return frontier.LimitPagesPerHost, true
	}
	hu.leased++
	p.srcLeased[rec.Source]++
	return 0, true
}

// endPageLocked ends a lease's reservation, counting its request when one
// was made and stored. q.mu is held.
func (q *scheduler) endPageLocked(l *lease, counted bool) {
	if !l.reserved {
		return
	}
	l.reserved = false
	p := q.pagesLocked()
	if p.cycle != l.cycle {
		return // a cycle ago: counted in the record, not in this cycle
	}
	if hu := p.host[srcHost{l.rec.Source, l.h.key}]; hu != nil {
		hu.leased--
		if counted {
			hu.pages++
		}
	}
	p.srcLeased[l.rec.Source]--
	if counted {
		q.s.bud.requested(l.rec.Source, l.cycle)
	}
}

// holdBackLocked leaves the source's URLs on h (or everywhere, for the
// source's limit) for the next cycle: out of the buffers, out of the due
// reads, and marked for the other processes' idle checks. q.mu is held.
func (q *scheduler) holdBackLocked(h *host, rec *frontier.Record, limit frontier.Limit) {
	p := q.pagesLocked()
	k := srcHost{rec.Source, h.key}
	mark := held{cycle: p.cycle, source: rec.Source, limit: limit, example: rec.URL, leased: []string{}}
	// A read begun before the mark may bring them back: they are dropped
	// again, and marked once.
	switch limit {
	case frontier.LimitPages:
		for _, o := range q.hosts {
			o.queue = dropSource(o.queue, rec.Source)
		}
		if p.heldSrc[rec.Source] {
			return
		}
		p.heldSrc[rec.Source] = true
	default:
		h.queue = dropSource(h.queue, rec.Source)
		if p.heldHost[k] {
			return
		}
		p.heldHost[k] = true
		mark.host = h.key
	}
	if q.onHoldBack != nil {
		q.onHoldBack()
	}
	// The URLs leased meanwhile are stored Waiting until their outcome,
	// which they will have in this cycle: they are not held back. The
	// links found on them are, and are stored with that outcome: the
	// count waits for it.
	mark.ended = &countdown{done: make(chan struct{})}
	for u, l := range q.leases {
		if l.rec.Source == rec.Source && (limit == frontier.LimitPages || l.h == h) {
			mark.leased = append(mark.leased, u)
			l.marks = append(l.marks, mark.ended)
			mark.ended.n++
		}
	}
	if mark.ended.n == 0 {
		close(mark.ended.done)
	}
	q.changes.Add(1)
	q.s.wg.Add(1)
	q.marking++
	go q.s.bud.markHeld(mark)
}

// countdown is done once n leases have ended. Its n is guarded by the
// scheduler's mu.
type countdown struct {
	n    int
	done chan struct{}
}

// endLeaseLocked forgets an ended lease and counts it down for the marks
// waiting on its outcome. q.mu is held.
func (q *scheduler) endLeaseLocked(l *lease) {
	delete(q.leases, l.rec.URL)
	for _, c := range l.marks {
		if c.n--; c.n == 0 {
			close(c.done)
		}
	}
	l.marks = nil
}

func dropSource(qs []queued, source string) []queued {
	kept := qs[:0]
	for _, it := range qs {
		if it.rec.Source != source {
			kept = append(kept, it)
		}
	}
	clear(qs[len(kept):])
	return kept
}

// heldClauses are the must_not clauses that leave out what the page
// limits hold back in the cycle: this process's marks and marks (others').
func (q *scheduler) heldClausesLocked(marks []held) []any {
	p := q.pagesLocked()
	srcs := map[string]bool{}
	hosts := map[string][]string{}
	for s := range p.heldSrc {
		srcs[s] = true
	}
	for k := range p.heldHost {
		hosts[k.source] = append(hosts[k.source], k.host)
	}
	for _, m := range marks {
		if m.cycle != p.cycle {
			continue
		}
		if m.host == "" {
			srcs[m.source] = true
		} else {
			hosts[m.source] = append(hosts[m.source], m.host)
		}
	}
	var out []any
	for s := range srcs {
		out = append(out, map[string]any{"term": map[string]any{"source": s}})
	}
	for s, hs := range hosts {
		if !srcs[s] {
			out = append(out, map[string]any{"bool": map[string]any{"filter": []any{
				map[string]any{"term": map[string]any{"source": s}}, map[string]any{"terms": map[string]any{"host": hs}}}}})
		}
	}
	return out
}

// readHostPages reads the requests of the cycle on hosts, per source: once
// per host and cycle, so the holder counts from there on.
func (q *scheduler) readHostPages(ctx context.Context, hosts []string, cycle uint64) (map[srcHost]int64, error) {
	out := map[srcHost]int64{}
	if len(hosts) == 0 {
		return out, nil
	}
	body := map[string]any{"size": 0, "query": map[string]any{"bool": map[string]any{"filter": []any{
		map[string]any{"terms": map[string]any{"host": hosts}}, map[string]any{"term": map[string]any{"rc": cycle}}}}},
		"aggs": map[string]any{"h": map[string]any{"terms": map[string]any{"field": "host", "size": len(hosts)},
			"aggs": map[string]any{"s": map[string]any{"terms": map[string]any{"field": "source", "size": 1000},
				"aggs": map[string]any{"n": map[string]any{"sum": map[string]any{"field": "rn"}}}}}}}}
	var ans struct {
		Aggregations struct {
			H struct {
				Buckets []struct {
					Key string `json:"key"`
					S   struct {
						Buckets []struct {
							Key string                  `json:"key"`
							N   struct{ Value float64 } `json:"n"`
						} `json:"buckets"`
					} `json:"s"`
				} `json:"buckets"`
			} `json:"h"`
		} `json:"aggregations"`
	}
	if err := q.s.do(ctx, http.MethodPost, "/"+q.s.urls+"/_search?request_cache=false", body, &ans); err != nil {
		return nil, &Error{Op: "read the hosts' requests", Err: err}
	}
	for _, hb := range ans.Aggregations.H.Buckets {
		for _, sb := range hb.S.Buckets {
			out[srcHost{sb.Key, hb.Key}] = int64(sb.N.Value)
		}
	}
	return out, nil
}

// held is a page limit's mark: what it holds back in a cycle.
type held struct {
	cycle   uint64
	source  string
	host    string // for max_pages_per_host_per_cycle
	limit   frontier.Limit
	example string
	leased  []string // this store's leases of it when marked
	ended   *countdown
}

type heldDoc struct {
	Type    string `json:"type"`
	Cycle   uint64 `json:"cycle"`
	Source  string `json:"source"`
	Host    string `json:"host,omitempty"`
	Limit   string `json:"limit"`
	URLs    int64  `json:"urls"`
	Example string `json:"example"`
}

func (m held) id() string {
	id := fmt.Sprintf("held-%d-%s", m.cycle, m.source)
	if m.host != "" {
		id += "-" + m.host
	}
	return id
}

// markHeld counts what a page limit holds back, writes its mark and tells
// OnBudget; the URLs stay Waiting for the next cycle.
func (b *budgets) markHeld(m held) {
	s := b.s
	defer s.wg.Done()
	defer func() {
		q := s.sched
		q.mu.Lock()
		q.marking--
		q.mu.Unlock()
		q.changes.Add(1)
		q.signal()
	}()
	select {
	case <-m.ended.done:
	case <-s.ctx.Done():
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.ttl)
	defer cancel()
	filter := []any{map[string]any{"term": map[string]any{"state": int(frontier.Waiting)}},
		map[string]any{"term": map[string]any{"source": m.source}}}
	if m.host != "" {
		filter = append(filter, map[string]any{"term": map[string]any{"host": m.host}})
	}
	leased := map[string]any{"terms": map[string]any{"url": m.leased}}
	// After a refresh, so the outcomes just stored no longer count as
	// Waiting: once per mark, at a limit only.
	if err := s.refresh(ctx); err != nil {
		s.log.Warn("cannot count what a page budget holds back", "err", err)
	}
	var ans struct{ Count int64 }
	if err := s.do(ctx, http.MethodPost, "/"+s.urls+"/_count", map[string]any{"query": map[string]any{"bool": map[string]any{"filter": filter,
		"must_not": []any{leased}}}}, &ans); err != nil {
		s.log.Warn("cannot count what a page budget holds back", "err", err)
	}
	d := heldDoc{Type: "held", Cycle: m.cycle, Source: m.source, Host: m.host, Limit: m.limit.String(), URLs: ans.Count, Example: m.example}
	if err := s.do(ctx, http.MethodPut, "/"+s.meta+"/_doc/"+escapeID(m.id())+"?refresh=true", d, nil); err != nil {
		s.log.Warn("cannot mark what a page budget holds back", "err", err)
	}
	host := ""
	if m.limit == frontier.LimitPagesPerHost {
		host = m.host
	}
	b.on(frontier.OverBudget{Source: m.source, Limit: m.limit, Max: m.limit.Of(b.limits[m.source]), Host: host,
		URLs: int(ans.Count), Example: m.example})
}

func escapeID(id string) string {
	r := strings.NewReplacer("/", "%2F", ":", "%3A", "?", "%3F", "#", "%23", "%", "%25")
	return r.Replace(id)
}

// readHeld reads the page limits' marks of cycle.
func (s *Store) readHeld(ctx context.Context, cycle uint64) ([]held, error) {
	// The cycle's only: one mark per host a limit held back, which may be
	// many, and the marks of cycles before are deleted when one begins.
	docs, err := metaOfType[heldDoc](ctx, s, "held", map[string]any{"term": map[string]any{"cycle": cycle}})
	if err != nil {
		return nil, &Error{Op: "read what the page budgets hold back", Err: err}
	}
	out := make([]held, len(docs))
	for i, d := range docs {
		out[i] = held{cycle: d.Cycle, source: d.Source, host: d.Host}
	}
	return out, nil
}

// dropMarks deletes the page limits' marks of the cycles before cycle,
// which it began: nothing reads them any more, and a crawl whose limits
// hold back many hosts every cycle would pile them up. By search and
// _bulk, since _delete_by_query needs a module a node may lack (the
// integ-test distribution has none); a failure, or more than a search's
// 10,000, leaves the rest to the next cycle's beginning.
func (s *Store) dropMarks(cycle uint64) {
	ctx, cancel := context.WithTimeout(s.ctx, s.ttl)
	defer cancel()
	var ans struct {
		Hits struct {
			Hits []struct {
				ID string `json:"_id"`
			} `json:"hits"`
		} `json:"hits"`
	}
	q := map[string]any{"size": 10000, "_source": false, "query": map[string]any{"bool": map[string]any{
		"filter":   []any{map[string]any{"term": map[string]any{"type": "held"}}},
		"must_not": []any{map[string]any{"term": map[string]any{"cycle": cycle}}}}}}
	err := s.do(ctx, http.MethodPost, "/"+s.meta+"/_search", q, &ans)
	if err == nil {
		var b ndjson
		for _, h := range ans.Hits.Hits {
			b.line(map[string]any{"delete": map[string]any{"_index": s.meta, "_id": h.ID}})
		}
		_, err = s.bulk(ctx, b.Bytes(), "")
	}
	if err != nil {
		s.log.Warn("cannot delete the page budgets' marks of the cycles before", "cycle", cycle, "err", err)
	}
}

// requested counts a request of source this store made in cycle and stored.
func (b *budgets) requested(source string, cycle uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cycle != b.ownCycle {
		if cycle < b.ownCycle {
			return
		}
		clear(b.own)
		b.ownCycle = cycle
	}
	b.own[source]++
}

// sourcePages is source's requests in cycle: the other stores' as last
// read and this store's own; exact when that read followed a refresh.
func (b *budgets) sourcePages(source string, cycle uint64) (int64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.src[source]
	var n int64
	if r.cycle == cycle {
		n = r.pages
	}
	if b.ownCycle == cycle {
		n += b.own[source]
	}
	return n, r.exact && r.cycle == cycle
}

// wantExact reads source's counts again after a refresh, at most once a
// second, and has the scheduler look again.
func (b *budgets) wantExact(source string) {
	b.mu.Lock()
	now := b.s.now()
	if t, ok := b.exactAt[source]; ok && now.Sub(t) < budgetReadEvery || b.exacting {
		b.mu.Unlock()
		return
	}
	b.exactAt[source] = now
	b.exacting = true
	b.mu.Unlock()
	b.s.wg.Add(1)
	go func() {
		defer b.s.wg.Done()
		ctx, cancel := context.WithTimeout(b.s.ctx, b.s.ttl)
		defer cancel()
		at := b.seal()
		err := b.s.refresh(ctx)
		if err == nil {
			err = b.readSources(ctx, at, true)
		}
		if err != nil && b.s.ctx.Err() == nil {
			b.s.log.Warn("cannot read the budgets' counts", "err", err)
		}
		b.mu.Lock()
		b.exacting = false
		b.mu.Unlock()
		b.s.sched.askLoad()
		b.s.sched.signal()
	}()
}

func limitsPages(l frontier.Budget) bool { return l.Pages > 0 || l.PagesPerHost > 0 }
