package esfrontier_test

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/frontier/esfrontier"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/hostile"
)

// pageSite serves "/" linking /p1 … /pN, and counts the requests of each
// path.
type pageSite struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func newPageSite(t *testing.T, pages int) *pageSite {
	s := &pageSite{hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/" {
			for i := 1; i <= pages; i++ {
				fmt.Fprintf(w, `<a href="/p%d">p%d</a>`, i, i)
			}
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// requests are the site's requests so far, and how many paths were
// requested more than once.
func (s *pageSite) requests() (n, again int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.hits {
		n += c
		if c > 1 {
			again++
		}
	}
	return n, again
}

// Two processes (stores) crawl through one shared state under the page
// budgets: source "h" on three sites under max_pages_per_host_per_cycle,
// source "s" on one under max_pages_per_cycle. Each limit holds to the
// request, the cycle ends with the rest held back (counted under its
// reason, and the requests shown by Usage), and the next cycle fetches
// the pages held back, under the limits again.
func TestPageBudgetsHoldAcrossTwoProcessesAndTheNextCycleFetchesWhatTheyHeldBack(t *testing.T) {
	t.Parallel()
	const pages, perHost, perCycle = 10, 4, 5
	hs := []*pageSite{newPageSite(t, pages), newPageSite(t, pages), newPageSite(t, pages)}
	ss := newPageSite(t, pages)
	budgets := map[string]frontier.Budget{"h": {PagesPerHost: perHost}, "s": {Pages: perCycle}}
	kept := &notes{by: map[[2]string]int{}}
	prefix := estest.Index(t)
	open := budgetedStores(t, prefix, budgets, kept, 1)
	a, b := open("a"), open("b")
	// a begins each cycle and b joins it as a process of a cluster does:
	// from its next renewal, which reads the cycle (b's BeginCycle would
	// begin another once it knows a's).
	begin := func() {
		t.Helper()
		c, err := a.BeginCycle()
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-b.CycleAfter(c - 1):
		case <-untilDeadline(t).Done():
		}
		if b.Cycle() != c {
			t.Fatalf("the processes are in cycles %d and %d", c, b.Cycle())
		}
	}
	crawl := func() {
		var wg sync.WaitGroup
		for _, s := range []*esfrontier.Store{a, a, b, b} {
			wg.Go(func() { crawlTrap(t, s) })
		}
		wg.Wait()
	}
	begin()
	items := []frontier.Item{{URL: ss.URL + "/", Source: "s", Class: frontier.Start}}
	for _, h := range hs {
		items = append(items, frontier.Item{URL: h.URL + "/", Source: "h", Class: frontier.Start})
	}
	if _, err := a.Add(items...); err != nil {
		t.Fatal(err)
	}
	crawl()

	for i, h := range hs {
		if n, _ := h.requests(); n != perHost {
			t.Errorf("site %d of h had %d requests in the first cycle, want max_pages_per_host_per_cycle %d", i, n, perHost)
		}
	}
	if n, _ := ss.requests(); n != perCycle {
		t.Errorf("s made %d requests in the first cycle, want max_pages_per_cycle %d", n, perCycle)
	}
	// Each site holds pages+1 URLs: all but those fetched were held back,
	// counted once under their limit.
	if got, want := kept.get("h", frontier.LimitPagesPerHost), len(hs)*(pages+1-perHost); got != want {
		t.Errorf("%d URLs of h counted under max_pages_per_host_per_cycle, want %d", got, want)
	}
	if got, want := kept.get("s", frontier.LimitPages), pages+1-perCycle; got != want {
		t.Errorf("%d URLs of s counted under max_pages_per_cycle, want %d", got, want)
	}
	for _, s := range []*esfrontier.Store{a, b} {
		for src, want := range map[string]int64{"h": int64(len(hs) * perHost), "s": perCycle} {
			u, err := s.Usage(src)
			if err != nil {
				t.Fatal(err)
			}
			if u.PagesIn(s.Cycle()) != want {
				t.Errorf("%s: %s's usage %+v, want %d requests in cycle %d", s.Node(), src, u, want, s.Cycle())
			}
		}
	}

	// The next cycle fetches what was held back, each page once, under the
	// limits again.
	begin()
	crawl()
	for i, h := range hs {
		if n, again := h.requests(); n != 2*perHost || again != 0 {
			t.Errorf("site %d of h had %d requests after two cycles (%d paths twice), want %d, each path once", i, n, again, 2*perHost)
		}
	}
	if n, again := ss.requests(); n != 2*perCycle || again != 0 {
		t.Errorf("s made %d requests after two cycles (%d paths twice), want %d, each path once", n, again, 2*perCycle)
	}
	// The first cycle's marks went when the second began; the second's
	// are those it made: one per host of h, one for s.
	if got, want := marksByCycle(t, prefix), map[uint64]int{a.Cycle(): len(hs) + 1}; !maps.Equal(got, want) {
		t.Errorf("the meta index holds page limit marks by cycle %v, want %v", got, want)
	}
}

// marksByCycle counts the page limits' marks in prefix's meta index by
// their cycle.
func marksByCycle(t *testing.T, prefix string) map[uint64]int {
	t.Helper()
	by := map[uint64]int{}
	for _, m := range sourcesOf[struct{ Cycle uint64 }](t, prefix+"-meta", `{"size": 1000, "query": {"term": {"type": "held"}}}`) {
		by[m.Cycle]++
	}
	return by
}

// When max_pages_per_cycle is met, pages are still being fetched, and the
// links found on them wait for the next cycle too: what the limit counts
// as held back is every URL of the source left Waiting at the cycle's end,
// those links included. The site holds its last two pages until the limit
// is met, so their outcomes come after it, as a busy crawler's do.
func TestThePageLimitCountsTheLinksOfThePagesInFlightWhenItIsMet(t *testing.T) {
	t.Parallel()
	const pages, links, workers, late = 10, 5, 4, 2
	trap := &hostile.Trap{Seed: 21, Links: links}
	met := make(chan struct{})
	var served atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) > pages-late {
			<-met
		}
		trap.ServeHTTP(w, r)
	}))
	t.Cleanup(site.Close)
	kept := &notes{by: map[[2]string]int{}}
	prefix := estest.Index(t)
	s := budgetedStores(t, prefix, map[string]frontier.Budget{"t": {Pages: pages}}, kept, workers)("a")
	var once sync.Once
	s.OnHoldBack(func() { once.Do(func() { close(met) }) })
	if _, err := s.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(frontier.Item{URL: site.URL + "/", Source: "t", Class: frontier.Start}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { crawlTrap(t, s) })
	}
	wg.Wait()
	if trap.Pages() != pages {
		t.Fatalf("the trap served %d pages, want max_pages_per_cycle %d", trap.Pages(), pages)
	}
	stored, _ := storedBySource(t, prefix, "t")
	if got, want := kept.get("t", frontier.LimitPages), stored-pages; got != want {
		t.Errorf("%d URLs counted under max_pages_per_cycle, want the %d stored but not fetched", got, want)
	}
}
