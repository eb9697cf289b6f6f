package main

import (
	"bufio"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// churn is a page that links a fresh copy of itself: every ?id= serves the same text and
// links one more ?id=, never seen before. All its URLs are one group of duplicates, which grows
// with every page fetched, until the source's budget stops it.
type churn struct {
	mu  sync.Mutex
	rnd *rand.Rand
}

func newChurn(seed uint64) *churn { return &churn{rnd: rand.New(rand.NewPCG(seed, 0xc4a9))} }

// churnPage is the copy's text: the same under every id.
var churnPage = page("Churn", "state churn", "The same page under every id.", nil)

func (c *churn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	c.mu.Lock()
	next := fmt.Sprintf("/?id=%016x", c.rnd.Uint64())
	c.mu.Unlock()
	body := strings.Replace(string(churnPage.body), "</ul>", "<li>"+link(next, "another copy")+"</li></ul>", 1)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(body))
}

// fanout is a site whose robots.txt names a sitemap index that lists fanoutChildren child
// indexes, each of which lists as many again, at every level, made up as they are asked for:
// the sitemaps never end. Its start page is an ordinary page.
type fanout struct {
	mu    sync.Mutex
	files int // sitemap files served
	base  string
}

// fanoutChildren is how many children each index lists: the sitemaps.org maximum.
const fanoutChildren = 50000

func (f *fanout) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case p == "/":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page("Fan-out", "state fan-out", "A site whose sitemaps never end.", nil).body)
	case p == "/robots.txt":
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "User-agent: *\nAllow: /\nSitemap: %s/sitemap/0/0.xml\n", f.base)
	case strings.HasPrefix(p, "/sitemap/"):
		depth, k, ok := fanoutFile(p)
		if !ok {
			http.NotFound(w, r)
			return
		}
		f.mu.Lock()
		f.files++
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/xml")
		b := bufio.NewWriterSize(w, 64<<10)
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n")
		for i := range uint64(fanoutChildren) {
			// Wrapping past 2^64 only repeats names, many levels down.
			fmt.Fprintf(b, "<sitemap><loc>%s/sitemap/%d/%d.xml</loc></sitemap>\n", f.base, depth+1, k*fanoutChildren+i)
		}
		b.WriteString("</sitemapindex>\n")
		b.Flush()
	default:
		http.NotFound(w, r)
	}
}

// fanoutFile reads /sitemap/DEPTH/K.xml.
func fanoutFile(p string) (depth, k uint64, ok bool) {
	parts := strings.Split(strings.TrimPrefix(p, "/sitemap/"), "/")
	if len(parts) != 2 || !strings.HasSuffix(parts[1], ".xml") {
		return 0, 0, false
	}
	depth, err1 := strconv.ParseUint(parts[0], 10, 64)
	k, err2 := strconv.ParseUint(strings.TrimSuffix(parts[1], ".xml"), 10, 64)
	return depth, k, err1 == nil && err2 == nil
}

func (f *fanout) served() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.files
}

// churn holds the churning page to what a growing group of duplicates may cost: each URL
// fetched at most once a cycle (new copies are new URLs, within the source's budget), and one
// document for the group, under its primary, listing every copy fetched before the last
// completed cycle ended.
func (c *checker) churn(docs map[string]indexedDoc) {
	base := c.hosts["churn"].URL
	cycles := slices.Clone(c.res.Cycles)
	slices.SortFunc(cycles, func(a, b cycle) int { return a.Started.Compare(b.Started) })
	var lastDone time.Time
	for _, cy := range cycles {
		if cy.Outcome == "completed" {
			lastDone = cy.Finished
		}
	}
	perCycle := map[int]map[string]int{}
	first := map[string]time.Time{}
	requests := 0
	for _, r := range c.hosts["churn"].rec.requests() {
		if r.Path == "/robots.txt" {
			continue
		}
		requests++
		// A request belongs to the last cycle begun before it.
		i := sort.Search(len(cycles), func(i int) bool { return cycles[i].Started.After(r.Start) }) - 1
		if perCycle[i] == nil {
			perCycle[i] = map[string]int{}
		}
		perCycle[i][r.Path]++
		if t, ok := first[r.Path]; !ok || r.Start.Before(t) {
			first[r.Path] = r.Start
		}
	}
	var repeated []string
	for i, paths := range perCycle {
		for p, n := range paths {
			if n > 1 {
				repeated = append(repeated, fmt.Sprintf("cycle %d: %s ×%d", i+1, p, n))
			}
		}
	}
	stored := 0
	for _, n := range c.stores["churn"] {
		stored += n
	}
	c.add("duplicate churn: each URL fetched at most once a cycle", requests > 0 && len(repeated) == 0 && stored <= churnMaxURLs,
		"%d URLs fetched in %d requests over %d cycles; %d URLs stored (max_urls %d); fetched twice in a cycle: %d%s",
		len(first), requests, len(perCycle), stored, churnMaxURLs, len(repeated), examples(repeated))

	primary := base + "/"
	listed := map[string]bool{}
	if d, ok := docs[primary]; ok {
		for _, u := range d.Duplicates {
			listed[u] = true
		}
	}
	var missing, unknown []string
	for p, t := range first {
		if u := base + p; u != primary && t.Before(lastDone) && !listed[u] {
			missing = append(missing, p)
		}
	}
	for u := range listed {
		if _, ok := first[strings.TrimPrefix(u, base)]; !ok {
			unknown = append(unknown, u)
		}
	}
	got := slices.Sorted(maps.Keys(docs))
	c.add("duplicate churn: one document listing the copies", slices.Equal(got, []string{primary}) && len(missing)+len(unknown) == 0,
		"%d documents%s (want the start page alone), listing %d copies; fetched before the last completed cycle ended and not listed: %d%s; listed and never fetched: %d%s",
		len(got), examples(got), len(listed), len(missing), examples(missing), len(unknown), examples(unknown))
}

// fanout holds the crawl of the site whose sitemaps never end to its start page and to bounded
// memory: reading sitemaps must not starve the start URLs, nor hold every child they list.
func (c *checker) fanout() {
	starts := 0
	var firstStart time.Time
	for _, r := range c.hosts["fanout"].rec.requests() {
		if r.Path == "/" {
			starts++
			if firstStart.IsZero() || r.Start.Before(firstStart) {
				firstStart = r.Start
			}
		}
	}
	completed := 0
	for _, cy := range c.res.Cycles {
		if cy.Outcome == "completed" {
			completed++
		}
	}
	var peak int64
	for _, m := range c.res.Memory {
		peak = max(peak, m.AnonKB)
	}
	when := "never"
	if starts > 0 {
		when = fmt.Sprintf("first %s after the start", clock(firstStart.Sub(c.res.Start)))
	}
	c.add("sitemap fan-out: start page fetched, memory bounded",
		starts >= max(1, completed) && len(c.res.Memory) > 0 && peak <= c.opts.MaxRSSMB<<10,
		"start page fetched %d times (%s; %d cycles completed); %d sitemap indexes of %d children each served; peak RssAnon %.0f MiB (bound %d MiB)",
		starts, when, completed, c.haz.fanout.served(), fanoutChildren, mib(peak), c.opts.MaxRSSMB)
}
