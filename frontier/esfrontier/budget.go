package esfrontier

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// The URL limits of the budgets (max_urls, max_urls_per_host, max_hosts)
// with a store several processes write to. A URL is admitted by the
// process that finds it, before its create, as the embedded store admits
// it in the transaction that adds it: over a limit it is not stored, it is
// counted under the limit's reason (Options.OnBudget, and the source's
// refusal count in the meta index), and a link to it met again is judged
// again.
//
// The counts are the index's, read every second (a source's URLs and the
// hosts it queued URLs on, by one aggregation) and for the hosts a batch
// of links goes to when their last read is older than that, plus what this
// process created that a read may not include: creations not yet answered,
// and those answered since the read began (less the index's refresh
// interval for a read made without a refresh, which may count some twice
// and errs on the side of the limit). Before a URL is refused on such
// counts, they are read again after a refresh (at most once a second per
// source), so one process alone keeps every limit exactly, and so does a
// crawl whose hosts' links are found on the hosts themselves (a host is
// scheduled by one process, which reads the counts again after a refresh
// when it takes the host over). What other processes create meanwhile is
// not counted: links found by one process to a host another crawls may
// exceed a limit by what the others created since the last read, about
// two seconds of their creations (the read's age plus the refresh).

const (
	// budgetReadEvery is how often the counts are read again.
	budgetReadEvery = time.Second
	// budgetLag is how long a creation may stay out of a read made
	// without a refresh: the URL index's refresh interval, with a margin.
	budgetLag = 2 * time.Second
	// doneSlot is the granularity of the creations kept by time.
	doneSlot = 100 * time.Millisecond
	// doneKeep is how long answered creations are kept for the counts.
	doneKeep = 10 * time.Second
)

type budgets struct {
	s      *Store
	limits map[string]frontier.Budget
	on     func(frontier.OverBudget)

	mu    sync.Mutex
	src   map[string]countRead
	hosts map[srcHost]countRead
	// pend are the creations admitted whose create is not answered yet,
	// done those answered, by doneSlot, the oldest first.
	pend   counts
	done   []*doneSlotCounts
	sealed time.Time
	// exactAt is each source's last read after a refresh, made to decide
	// a refusal.
	exactAt map[string]time.Time
	// kept is this process's count of the URLs each source's limits kept
	// out, as last written.
	kept map[string]*budgetDoc
	// own are the requests this store made and stored per source in
	// ownCycle, for the page limits (pages.go); exacting says a read after
	// a refresh is under way.
	own      map[string]int64
	ownCycle uint64
	exacting bool
}

type srcHost struct{ source, host string }

// countRead is a source's or a host's counts as read at at: URLs, and the
// hosts the source queued URLs on (for a host: whether it is one of them).
type countRead struct {
	urls, hosts int64
	at          time.Time
	exact       bool // read after a refresh begun at at
	// pages are a source's requests in cycle by the other stores (pages.go).
	pages int64
	cycle uint64
}

// since is when this process's creations start to count on top of r.
func (r countRead) since() time.Time {
	if r.exact {
		return r.at
	}
	return r.at.Add(-budgetLag)
}

type counts struct {
	urls    map[string]int64  // per source
	hosts   map[string]int64  // hosts newly queued on, per source
	perHost map[srcHost]int64 // URLs
	queued  map[srcHost]int64 // creations that queued the host
}

func newCounts() counts {
	return counts{urls: map[string]int64{}, hosts: map[string]int64{}, perHost: map[srcHost]int64{}, queued: map[srcHost]int64{}}
}

func (c counts) add(a *admitted, n int64) {
	c.urls[a.key.source] += n
	c.perHost[a.key] += n
	if a.newHost {
		c.hosts[a.key.source] += n
		c.queued[a.key] += n
	}
}

// doneSlotCounts are the creations answered from start to end. A slot
// lasts at most doneSlot and ends at a seal: a read after a refresh begun
// at the seal includes every slot before it and none after.
type doneSlotCounts struct {
	start, end time.Time
	counts
}

// admitted is one creation counted until its create is answered.
type admitted struct {
	key     srcHost
	newHost bool
}

func newBudgets(s *Store, limits map[string]frontier.Budget, on func(frontier.OverBudget)) *budgets {
	if on == nil {
		on = func(frontier.OverBudget) {}
	}
	return &budgets{s: s, limits: limits, on: on, src: map[string]countRead{}, hosts: map[srcHost]countRead{},
		pend: newCounts(), exactAt: map[string]time.Time{}, kept: map[string]*budgetDoc{}, own: map[string]int64{}}
}

// urlLimits says whether any source has a URL limit.
func (b *budgets) urlLimits() bool {
	for _, l := range b.limits {
		if l.URLs > 0 || l.URLsPerHost > 0 || l.Hosts > 0 {
			return true
		}
	}
	return false
}

// run reads the sources' counts every budgetReadEvery.
func (b *budgets) run() {
	s := b.s
	defer s.wg.Done()
	t := time.NewTicker(budgetReadEvery)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.ttl)
		if err := b.readSources(ctx, s.now(), false); err != nil && s.ctx.Err() == nil {
			// The last counts stand meanwhile, with this process's own
			// creations added: only the others' go uncounted longer.
			s.log.Warn("cannot read the budgets' counts", "err", err)
		}
		cancel()
	}
}

// queuedFilter selects the records whose host counts among the hosts the
// source queued URLs on: all but those refused when found (Excluded and
// never checked).
var queuedFilter = map[string]any{"bool": map[string]any{"must_not": []any{map[string]any{"bool": map[string]any{"filter": []any{
	map[string]any{"term": map[string]any{"state": int(frontier.Excluded)}},
	map[string]any{"term": map[string]any{"checked_at": 0}}}}}}}}

// sourceCountAggs are the aggregations of a source's counts besides its
// URLs: the hosts it queued URLs on and its requests in cycle, but for
// those the store notBy made ("" for none).
func sourceCountAggs(cycle uint64, notBy string) map[string]any {
	requests := map[string]any{"filter": []any{map[string]any{"term": map[string]any{"rc": cycle}}}}
	if notBy != "" {
		requests["must_not"] = []any{map[string]any{"term": map[string]any{"rp": notBy}}}
	}
	return map[string]any{"q": map[string]any{"filter": queuedFilter,
		// Exact below 40,000 hosts, within a few percent above.
		"aggs": map[string]any{"hosts": map[string]any{"cardinality": map[string]any{"field": "host", "precision_threshold": 40000}}}},
		"p": map[string]any{"filter": map[string]any{"bool": requests}, "aggs": map[string]any{"n": map[string]any{"sum": map[string]any{"field": "rn"}}}}}
}

// sourceCounts are the answers of sourceCountAggs.
type sourceCounts struct {
	Q struct {
		Hosts struct{ Value int64 } `json:"hosts"`
	} `json:"q"`
	P struct {
		N struct{ Value float64 } `json:"n"`
	} `json:"p"`
}

// readSources reads the counts of every source with a budget; at is when
// the read (or the refresh before it, exact) began.
func (b *budgets) readSources(ctx context.Context, at time.Time, exact bool) error {
	var names []string
	for n := range b.limits {
		names = append(names, n)
	}
	cycle := b.s.cycle.Load()
	body := map[string]any{"size": 0, "query": map[string]any{"terms": map[string]any{"source": names}},
		"aggs": map[string]any{"s": map[string]any{"terms": map[string]any{"field": "source", "size": len(names)},
			// The others' requests: this store counts its own (pages.go).
			"aggs": sourceCountAggs(cycle, b.s.inst)}}}
	var ans struct {
		Aggregations struct {
			S struct {
				Buckets []struct {
					Key      string `json:"key"`
					DocCount int64  `json:"doc_count"`
					sourceCounts
				} `json:"buckets"`
			} `json:"s"`
		} `json:"aggregations"`
	}
	if err := b.s.do(ctx, http.MethodPost, "/"+b.s.urls+"/_search?request_cache=false", body, &ans); err != nil {
		return &Error{Op: "read the budgets' counts", Err: err}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, n := range names {
		if r, ok := b.src[n]; !ok || r.since().Before(countRead{at: at, exact: exact}.since()) {
			b.src[n] = countRead{at: at, exact: exact, cycle: cycle}
		}
	}
	for _, bk := range ans.Aggregations.S.Buckets {
		if r := b.src[bk.Key]; r.at.Equal(at) {
			b.src[bk.Key] = countRead{urls: bk.DocCount, hosts: bk.Q.Hosts.Value, at: at, exact: exact,
				pages: int64(bk.P.N.Value), cycle: cycle}
		}
	}
	b.pruneLocked(b.s.now())
	return nil
}

// readHosts reads the counts of the hosts of keys; at and exact as for
// readSources.
func (b *budgets) readHosts(ctx context.Context, keys []srcHost, at time.Time, exact bool) error {
	if len(keys) == 0 {
		return nil
	}
	var hosts, sources []string
	seen := map[string]bool{}
	for _, k := range keys {
		hosts = append(hosts, k.host)
		if !seen[k.source] {
			seen[k.source] = true
			sources = append(sources, k.source)
		}
	}
	body := map[string]any{"size": 0, "query": map[string]any{"bool": map[string]any{"filter": []any{
		map[string]any{"terms": map[string]any{"host": hosts}}, map[string]any{"terms": map[string]any{"source": sources}}}}},
		"aggs": map[string]any{"s": map[string]any{"terms": map[string]any{"field": "source", "size": len(sources)},
			"aggs": map[string]any{"h": map[string]any{"terms": map[string]any{"field": "host", "size": len(hosts)},
				"aggs": map[string]any{"q": map[string]any{"filter": queuedFilter}}}}}}}
	var ans struct {
		Aggregations struct {
			S struct {
				Buckets []struct {
					Key string `json:"key"`
					H   struct {
						Buckets []struct {
							Key      string `json:"key"`
							DocCount int64  `json:"doc_count"`
							Q        struct {
								DocCount int64 `json:"doc_count"`
							} `json:"q"`
						} `json:"buckets"`
					} `json:"h"`
				} `json:"buckets"`
			} `json:"s"`
		} `json:"aggregations"`
	}
	if err := b.s.do(ctx, http.MethodPost, "/"+b.s.urls+"/_search?request_cache=false", body, &ans); err != nil {
		return &Error{Op: "read the hosts' budget counts", Err: err}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	want := map[srcHost]bool{}
	fresh := countRead{at: at, exact: exact}
	for _, k := range keys {
		if r, ok := b.hosts[k]; !ok || r.since().Before(fresh.since()) {
			want[k] = true
			b.hosts[k] = fresh
		}
	}
	for _, sb := range ans.Aggregations.S.Buckets {
		for _, hb := range sb.H.Buckets {
			if k := (srcHost{sb.Key, hb.Key}); want[k] {
				r := countRead{urls: hb.DocCount, at: at, exact: exact}
				if hb.Q.DocCount > 0 {
					r.hosts = 1
				}
				b.hosts[k] = r
			}
		}
	}
	return nil
}

// staleHosts are the keys of items with a host limit whose counts were
// read longer than budgetReadEvery ago, or never.
func (b *budgets) staleHosts(items []frontier.Item) []srcHost {
	now := b.s.now()
	want := map[srcHost]bool{}
	var out []srcHost
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range items {
		it := &items[i]
		if l := b.limits[it.Source]; l.URLsPerHost == 0 && l.Hosts == 0 {
			continue
		}
		k := srcHost{it.Source, urlnorm.Origin(it.URL)}
		if r, ok := b.hosts[k]; (!ok || now.Sub(r.at) > budgetReadEvery) && !want[k] {
			want[k] = true
			out = append(out, k)
		}
	}
	return out
}

// pruneLocked forgets the creations no read can miss any longer, and the
// hosts read long ago.
func (b *budgets) pruneLocked(now time.Time) {
	kept := b.done[:0]
	for _, d := range b.done {
		if now.Sub(d.end) < doneKeep {
			kept = append(kept, d)
		}
	}
	clear(b.done[len(kept):])
	b.done = kept
	for k, h := range b.hosts {
		if now.Sub(h.at) > doneKeep {
			delete(b.hosts, k)
		}
	}
}

// local sums this process's creations a read made with r may miss.
func (b *budgets) local(r countRead, f func(counts) int64) int64 {
	n := f(b.pend)
	for _, d := range b.done {
		if r.exact && !d.start.Before(r.at) || !r.exact && !d.end.Before(r.since()) {
			n += f(d.counts)
		}
	}
	return n
}

// seal begins a read after a refresh: the creations answered from now on
// go to slots of their own. It returns the read's time.
func (b *budgets) seal() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sealed = b.s.now()
	return b.sealed
}

// judge says which limit keeps it out, if any, on the counts as read and
// whether those counts were exact.
func (b *budgets) judge(it *frontier.Item, queue bool, k srcHost) (frontier.Limit, bool, bool) {
	l := b.limits[it.Source]
	sr, hr := b.src[k.source], b.hosts[k]
	queued := hr.hosts > 0 || b.local(hr, func(c counts) int64 { return c.queued[k] }) > 0
	newHost := queue && !queued
	if queue && it.Class == frontier.Start {
		return 0, newHost, true
	}
	urls := sr.urls + b.local(sr, func(c counts) int64 { return c.urls[k.source] })
	hostURLs := hr.urls + b.local(hr, func(c counts) int64 { return c.perHost[k] })
	hosts := sr.hosts + b.local(sr, func(c counts) int64 { return c.hosts[k.source] })
	switch {
	case l.URLs > 0 && urls >= l.URLs:
		return frontier.LimitURLs, newHost, sr.exact
	case l.URLsPerHost > 0 && hostURLs >= l.URLsPerHost:
		return frontier.LimitURLsPerHost, newHost, hr.exact
	case newHost && l.Hosts > 0 && hosts >= l.Hosts:
		return frontier.LimitHosts, newHost, sr.exact && hr.exact
	}
	return 0, newHost, true
}

// admit counts a new record of it against its source's limits, or says
// which limit keeps it out and whether that was judged on counts read
// after a refresh. queue says it is to be queued (which makes its host one
// of the source's hosts); a Start item to be queued is always admitted, as
// with the embedded store.
func (b *budgets) admit(it *frontier.Item, queue bool) (_ *admitted, _ frontier.Limit, exact bool) {
	if l := b.limits[it.Source]; l.URLs == 0 && l.URLsPerHost == 0 && l.Hosts == 0 {
		return nil, 0, true
	}
	k := srcHost{it.Source, urlnorm.Origin(it.URL)}
	b.mu.Lock()
	defer b.mu.Unlock()
	limit, newHost, exact := b.judge(it, queue, k)
	if limit != 0 {
		return nil, limit, exact
	}
	a := &admitted{key: k, newHost: newHost}
	b.pend.add(a, 1)
	return a, 0, true
}

// answered ends a creation's wait for its create: created, it counts from
// now on as one the reads may miss for a while; known or failed, it no
// longer counts.
func (b *budgets) answered(a *admitted, created bool) {
	if a == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pend.add(a, -1)
	if !created {
		return
	}
	now := b.s.now()
	if n := len(b.done); n == 0 || now.Sub(b.done[n-1].start) >= doneSlot || b.done[n-1].start.Before(b.sealed) {
		b.done = append(b.done, &doneSlotCounts{start: now, counts: newCounts()})
	}
	d := b.done[len(b.done)-1]
	d.add(a, 1)
	d.end = now
}

// recount reads the counts of the sources and hosts of over again after a
// refresh, for those not so read in the last budgetReadEvery, and says
// whether it read any.
func (b *budgets) recount(ctx context.Context, over []overItem) (bool, error) {
	now := b.s.now()
	var keys []srcHost
	seen := map[srcHost]bool{}
	srcs := false
	b.mu.Lock()
	for _, o := range over {
		if t, ok := b.exactAt[o.item.Source]; ok && now.Sub(t) < budgetReadEvery {
			continue
		}
		srcs = true
		if k := (srcHost{o.item.Source, urlnorm.Origin(o.item.URL)}); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	if srcs {
		for _, o := range over {
			b.exactAt[o.item.Source] = now
		}
	}
	b.mu.Unlock()
	if !srcs {
		return false, nil
	}
	now = b.seal()
	if err := b.s.refresh(ctx); err != nil {
		return false, err
	}
	if err := b.readSources(ctx, now, true); err != nil {
		return false, err
	}
	return true, b.readHosts(ctx, keys, now, true)
}

// afterTake reads the counts again after the refresh begun at at, which
// followed the take of partitions: the hosts' last holder created URLs
// this process's last reads may not have seen.
func (b *budgets) afterTake(ctx context.Context, at time.Time) {
	b.mu.Lock()
	clear(b.hosts)
	b.mu.Unlock()
	if err := b.readSources(ctx, at, true); err != nil {
		b.s.log.Warn("cannot read the budgets' counts", "err", err)
	}
}

// refused records what the limits kept out: one note per source, limit
// and host (for the per-host limit), and the source's refusal count and
// first example in the meta index, as the embedded store keeps them.
func (b *budgets) refused(out []overItem) {
	if len(out) == 0 {
		return
	}
	type key struct {
		source string
		limit  frontier.Limit
		host   string
	}
	notes := map[key]*frontier.OverBudget{}
	var order []key
	perSource := map[string][]string{}
	for _, o := range out {
		k := key{o.item.Source, o.limit, ""}
		if o.limit == frontier.LimitURLsPerHost {
			k.host = urlnorm.Origin(o.item.URL)
		}
		n := notes[k]
		if n == nil {
			n = &frontier.OverBudget{Source: k.source, Limit: k.limit, Max: k.limit.Of(b.limits[k.source]), Host: k.host, Example: o.item.URL}
			notes[k] = n
			order = append(order, k)
		}
		n.URLs++
		perSource[k.source] = append(perSource[k.source], o.item.URL)
	}
	// Each process keeps its own count of the URLs kept out, in a
	// document only it writes (the node's scripts may be off, and no two
	// processes then contend for one document); Usage sums them.
	var body ndjson
	b.mu.Lock()
	for src, urls := range perSource {
		d := b.kept[src]
		if d == nil {
			d = b.loadKept(src)
			b.kept[src] = d
		}
		d.Refused += int64(len(urls))
		if d.Example == "" {
			d.Example, d.First = urls[0], b.s.now().UnixNano()
		}
		body.line(map[string]any{"index": map[string]any{"_index": b.s.meta, "_id": "budget-" + src + "-" + b.s.node}})
		body.line(d)
	}
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(b.s.ctx, b.s.ttl)
	defer cancel()
	if items, err := b.s.bulk(ctx, body.Bytes(), ""); err != nil {
		b.s.log.Warn("cannot count the URLs a budget kept out", "err", err)
	} else {
		for i := range items {
			if err := itemError(&items[i]); err != nil {
				b.s.log.Warn("cannot count the URLs a budget kept out", "err", err)
			}
		}
	}
	for _, k := range order {
		b.on(*notes[k])
	}
}

// overItem is an item a limit kept out, until it is known to be new.
type overItem struct {
	item  frontier.Item
	limit frontier.Limit
	exact bool // judged on counts read after a refresh
}

// newOnes returns those of over the index does not hold: a known URL is no
// new record, whatever the limits say, and goes the way of the others.
func (s *Store) newOnes(over []overItem) (fresh, known []overItem, err error) {
	if len(over) == 0 {
		return nil, nil, nil
	}
	docs := make([]map[string]any, len(over))
	for i, o := range over {
		docs[i] = map[string]any{"_id": docID(o.item.URL), "routing": urlnorm.Origin(o.item.URL), "_source": false}
	}
	var ans struct {
		Docs []struct {
			Found bool `json:"found"`
		} `json:"docs"`
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.ttl)
	defer cancel()
	if err := s.do(ctx, http.MethodPost, "/"+s.urls+"/_mget", map[string]any{"docs": docs}, &ans); err != nil {
		return nil, nil, &Error{Op: "look up URLs over a budget", Err: err}
	}
	for i, o := range over {
		if i < len(ans.Docs) && ans.Docs[i].Found {
			known = append(known, o)
		} else {
			fresh = append(fresh, o)
		}
	}
	return fresh, known, nil
}

// budgetDoc is one process's count of a source's URLs kept out, as the
// meta index keeps it (budget-<source>-<node>).
type budgetDoc struct {
	Type    string `json:"type"`
	Source  string `json:"source"`
	Refused int64  `json:"refused"`
	Example string `json:"example"`
	First   int64  `json:"first"` // when Example was kept out
}

// loadKept reads this process's count for source, kept by its previous
// runs; called with mu held, at a source's first refusal.
func (b *budgets) loadKept(source string) *budgetDoc {
	d := &budgetDoc{Type: "budget", Source: source}
	ctx, cancel := context.WithTimeout(b.s.ctx, b.s.ttl)
	defer cancel()
	a, err := b.s.get(ctx, b.s.meta, "budget-"+source+"-"+b.s.node, "")
	if err == nil && a.Found {
		err = json.Unmarshal(a.Source, d)
	}
	if err != nil {
		b.s.log.Warn("cannot read the count of URLs a budget kept out", "err", err)
	}
	return d
}

// metaOfType reads the meta index's documents of type typ that match the
// filters too: a few per process or source, never near a search's 10,000.
func metaOfType[T any](ctx context.Context, s *Store, typ string, filters ...any) ([]T, error) {
	var ans struct {
		Hits struct {
			Hits []struct {
				Source T `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	filters = append(filters, map[string]any{"term": map[string]any{"type": typ}})
	q := map[string]any{"size": 10000, "query": map[string]any{"bool": map[string]any{"filter": filters}}}
	if err := s.do(ctx, http.MethodPost, "/"+s.meta+"/_search", q, &ans); err != nil {
		return nil, err
	}
	out := make([]T, len(ans.Hits.Hits))
	for i, h := range ans.Hits.Hits {
		out[i] = h.Source
	}
	return out, nil
}

// refusals sums the processes' counts of the URLs source's limits kept
// out, with the first of them.
func (s *Store) refusals(ctx context.Context, source string) (budgetDoc, error) {
	docs, err := metaOfType[budgetDoc](ctx, s, "budget")
	if err != nil {
		return budgetDoc{}, err
	}
	var out budgetDoc
	for _, d := range docs {
		if d.Source != source {
			continue
		}
		out.Refused += d.Refused
		if d.Example != "" && (out.Example == "" || d.First < out.First) {
			out.Example, out.First = d.Example, d.First
		}
	}
	return out, nil
}
