package provider_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/provider"
)

// frontDoor serves a mutableSite through a server of its own that counts
// every request by path, 304s included, and lets a test answer some paths
// itself (a sitemap, a failing page).
type frontDoor struct {
	*httptest.Server
	site     *mutableSite
	mu       sync.Mutex
	hits     map[string]int
	override map[string]http.HandlerFunc
	onHit    func(path string)
}

func newFrontDoor(t *testing.T, site *mutableSite) *frontDoor {
	d := &frontDoor{site: site, hits: map[string]int{}, override: map[string]http.HandlerFunc{}}
	d.Server = httptest.NewServer(d)
	t.Cleanup(d.Close)
	return d
}

func (d *frontDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	d.hits[r.URL.Path]++
	h, hook := d.override[r.URL.Path], d.onHit
	d.mu.Unlock()
	if hook != nil {
		hook(r.URL.Path)
	}
	if h != nil {
		h(w, r)
		return
	}
	d.site.ServeHTTP(w, r)
}

func (d *frontDoor) hit(path string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hits[path]
}

// answer serves path with h instead of the site; nil gives it back.
func (d *frontDoor) answer(path string, h http.HandlerFunc) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if h == nil {
		delete(d.override, path)
		return
	}
	d.override[path] = h
}

func statusOnly(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) }
}

func sitemapOf(urls ...string) http.HandlerFunc {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for _, u := range urls {
		fmt.Fprintf(&b, "<url><loc>%s</loc></url>", u)
	}
	b.WriteString("</urlset>")
	body := b.String()
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, body)
	}
}

// orphanSite links home → b, c, e; b → d; e → f. Every page carries
// validators, so an unchanged page answers a conditional GET with 304.
func orphanSite(t *testing.T) (*mutableSite, *frontDoor) {
	site := newMutableSite(t)
	site.set("/", "Home", "Welcome.", "/b", "/c", "/e")
	site.set("/b", "Bravo", "Links to delta.", "/d")
	site.set("/c", "Charlie", "A leaf.")
	site.set("/d", "Delta", "A leaf below bravo.")
	site.set("/e", "Echo", "Links to foxtrot.", "/f")
	site.set("/f", "Foxtrot", "A leaf below echo.")
	return site, newFrontDoor(t, site)
}

// unlinkCAndD removes home's link to c and b's only link, to d; c and d
// are still served.
func unlinkCAndD(site *mutableSite) {
	site.set("/", "Home", "Welcome.", "/b", "/e")
	site.set("/b", "Bravo", "Links to nothing now.")
}

func orphanConfig(t *testing.T, esURL, index, start, maxAge, policy, extra string) *provider.Crawler {
	t.Helper()
	return onTestClock(t, crawltest.New(t, orphanCfg(t, esURL, index, start, maxAge, policy, extra)))
}

func orphanCfg(t *testing.T, esURL, index, start, maxAge, policy, extra string) *config.Config {
	t.Helper()
	return crawltest.Config(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0}
allow_private_networks: true
sources:
  - name: site
    start_urls: [%q]
    max_age: %s
    orphans: %s
%s`, esURL, index, start, maxAge, policy, extra))
}

// orphanEvents are the reasons of a URL's orphan events, oldest first.
func orphanEvents(t *testing.T, c *provider.Crawler, u string) []string {
	t.Helper()
	evs, err := c.Frontier().History(u)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		if e.Kind == frontier.EventOrphan {
			out = append(out, e.Reason)
		}
	}
	return out
}

func wantIndexed(t *testing.T, esURL, index, base string, want ...string) {
	t.Helper()
	slices.Sort(want)
	if paths, _ := indexed(t, esURL, index, base); !slices.Equal(paths, want) {
		t.Errorf("index holds %v, want %v", paths, want)
	}
}

func TestOrphansAreKeptCountedAndMarkedOnceByDefault(t *testing.T) {
	t.Parallel()
	esURL, index := estest.URL(t), estest.Index(t)
	site, door := orphanSite(t)
	c := orphanConfig(t, esURL, index, door.URL+"/", "1ms", "keep", "")
	first := again(t, c)
	if first.Total.Created != 6 || first.Total.Orphans != 0 {
		t.Fatalf("first crawl: %+v, want 6 created and no orphans", first.Total)
	}

	unlinkCAndD(site)
	letMaxAgePass(t)
	second := again(t, c)
	if k := second.Total; k.Orphans != 2 || k.OrphansKept != 2 || k.Deleted != 0 {
		t.Errorf("second crawl counts %d orphans, %d kept, %d deleted; want 2, 2, 0", k.Orphans, k.OrphansKept, k.Deleted)
	}
	if s := second.Sources["site"]; s == nil || s.Orphans != 2 {
		t.Errorf("the source's counts lack its orphans: %+v", s)
	}
	wantIndexed(t, esURL, index, door.URL, "/", "/b", "/c", "/d", "/e", "/f")
	// e answered its conditional GET with 304: f was reached through the
	// links stored when e was first read.
	site.mu.Lock()
	full := site.fetches["/e"]
	site.mu.Unlock()
	if door.hit("/e") != 2 || full != 1 {
		t.Errorf("/e: %d requests, %d answered 200; want its second answered 304", door.hit("/e"), full)
	}
	for _, p := range []string{"/c", "/d"} {
		if r := wantState(t, c, door.URL+p, frontier.Fetched, ""); !r.Orphan || !r.Indexed {
			t.Errorf("%s: orphan=%v indexed=%v, want a marked orphan still indexed", p, r.Orphan, r.Indexed)
		}
		if got := orphanEvents(t, c, door.URL+p); !slices.Equal(got, []string{"kept"}) {
			t.Errorf("%s: orphan events %v, want [kept]", p, got)
		}
	}
	if r := record(t, c, door.URL+"/f"); r.Orphan {
		t.Error("/f, linked from a page that answered 304, was taken for an orphan")
	}

	letMaxAgePass(t)
	third := again(t, c)
	if third.Total.Orphans != 2 || third.Total.OrphansKept != 2 {
		t.Errorf("third crawl counts %d orphans, %d kept; want 2 and 2", third.Total.Orphans, third.Total.OrphansKept)
	}
	if got := orphanEvents(t, c, door.URL+"/c"); len(got) != 1 {
		t.Errorf("an orphan found again logged %v, want its first finding only", got)
	}

	site.set("/", "Home", "Welcome.", "/b", "/c", "/e")
	letMaxAgePass(t)
	fourth := again(t, c)
	if fourth.Total.Orphans != 1 {
		t.Errorf("after c is linked again the crawl counts %d orphans, want 1 (d)", fourth.Total.Orphans)
	}
	if r := record(t, c, door.URL+"/c"); r.Orphan {
		t.Error("/c is linked again but still marked an orphan")
	}
	if got := orphanEvents(t, c, door.URL+"/c"); !slices.Equal(got, []string{"kept", "linked"}) {
		t.Errorf("/c orphan events %v, want [kept linked]", got)
	}
}

func TestOrphansRecheckFetchesEachOrphanOnceAndDeletesTheOnesGone(t *testing.T) {
	t.Parallel()
	esURL, index := estest.URL(t), estest.Index(t)
	site, door := orphanSite(t)
	// A long max_age: only the start URL is visited again, so only the
	// recheck requests the orphans.
	c := orphanConfig(t, esURL, index, door.URL+"/", "48h", "recheck", "")
	again(t, c)

	// Home links nothing but e now: b, c and d (only linked from b) are
	// orphans, and d is gone.
	site.set("/", "Home", "Welcome.", "/e")
	site.remove("/d")
	before := map[string]int{}
	for _, p := range []string{"/b", "/c", "/d", "/e", "/f"} {
		before[p] = door.hit(p)
	}
	second := again(t, c)
	for _, p := range []string{"/b", "/c", "/d"} {
		if n := door.hit(p) - before[p]; n != 1 {
			t.Errorf("%s was requested %d times by the second crawl, want once (the recheck)", p, n)
		}
	}
	for _, p := range []string{"/e", "/f"} {
		if n := door.hit(p) - before[p]; n != 0 {
			t.Errorf("%s, linked and not due, was requested %d times", p, n)
		}
	}
	k := second.Total
	if k.Orphans != 3 || k.OrphansKept != 2 || k.Deleted != 1 || k.Reasons["http_404"] != 1 {
		t.Errorf("second crawl: %d orphans, %d kept, %d deleted, %d http_404; want 3, 2, 1, 1 (%+v)",
			k.Orphans, k.OrphansKept, k.Deleted, k.Reasons["http_404"], k)
	}
	wantIndexed(t, esURL, index, door.URL, "/", "/b", "/c", "/e", "/f")
	wantState(t, c, door.URL+"/d", frontier.Error, "http_404")
	if got := orphanEvents(t, c, door.URL+"/c"); !slices.Equal(got, []string{"recheck"}) {
		t.Errorf("/c orphan events %v, want [recheck]", got)
	}

	for p := range before {
		before[p] = door.hit(p)
	}
	third := again(t, c)
	for p, want := range map[string]int{"/b": 1, "/c": 1, "/d": 0} {
		if n := door.hit(p) - before[p]; n != want {
			t.Errorf("%s was requested %d times by the third crawl, want %d", p, n, want)
		}
	}
	if third.Total.Orphans != 2 || third.Total.OrphansKept != 2 {
		t.Errorf("third crawl: %+v, want 2 orphans kept", third.Total)
	}
}

func TestOrphansDeletePolicyDeletesThemUntilALinkBringsThemBack(t *testing.T) {
	t.Parallel()
	esURL, index := estest.URL(t), estest.Index(t)
	site, door := orphanSite(t)
	c := orphanConfig(t, esURL, index, door.URL+"/", "1ms", "delete", "")
	again(t, c)

	unlinkCAndD(site)
	letMaxAgePass(t)
	second := again(t, c)
	wantIndexed(t, esURL, index, door.URL, "/", "/b", "/e", "/f")
	k := second.Total
	if k.Orphans != 2 || k.OrphansKept != 0 || k.Deleted != 2 || k.Reasons["orphan"] != 2 {
		t.Errorf("second crawl: %d orphans, %d kept, %d deleted, %d by reason orphan; want 2, 0, 2, 2 (%+v)",
			k.Orphans, k.OrphansKept, k.Deleted, k.Reasons["orphan"], k)
	}
	for _, p := range []string{"/c", "/d"} {
		if r := wantState(t, c, door.URL+p, frontier.Excluded, "orphan"); r.Indexed || r.Pending != "" {
			t.Errorf("%s: indexed=%v pending %q after the deletion was acknowledged", p, r.Indexed, r.Pending)
		}
		if got := orphanEvents(t, c, door.URL+p); !slices.Equal(got, []string{"deleted"}) {
			t.Errorf("%s: orphan events %v, want [deleted]", p, got)
		}
	}

	// A link to c again: it is queued, fetched and indexed in that crawl;
	// d, still unlinked, is not even requested.
	site.set("/", "Home", "Welcome.", "/b", "/c", "/e")
	letMaxAgePass(t)
	d := door.hit("/d")
	third := again(t, c)
	wantIndexed(t, esURL, index, door.URL, "/", "/b", "/c", "/e", "/f")
	if third.Total.Created != 1 || third.Total.Orphans != 0 {
		t.Errorf("third crawl: %+v, want c created again and no orphan", third.Total)
	}
	if r := wantState(t, c, door.URL+"/c", frontier.Fetched, ""); r.Orphan {
		t.Error("/c, indexed again, is still marked an orphan")
	}
	if door.hit("/d") != d {
		t.Error("/d, deleted as an orphan and still unlinked, was requested again")
	}
}

func TestDeletedOrphanReachedAgainThroughStoredLinksIsIndexedAgain(t *testing.T) {
	t.Parallel()
	esURL, index := estest.URL(t), estest.Index(t)
	site := newMutableSite(t)
	site.set("/", "Home", "Welcome.", "/hub")
	site.set("/hub", "Hub", "Crawled through, never indexed.", "/d")
	site.set("/d", "Delta", "Below the hub.")
	door := newFrontDoor(t, site)
	// The hub holds no document, so it is never an orphan itself, and with
	// a long max_age it is not read again: what it links comes from storage.
	c := orphanConfig(t, esURL, index, door.URL+"/", "48h", "delete", fmt.Sprintf("    kill_exact: [%q]\n", door.URL+"/hub"))
	again(t, c)
	wantIndexed(t, esURL, index, door.URL, "/", "/d")

	site.set("/", "Home", "Welcome, no links.")
	if r := again(t, c); r.Total.Reasons["orphan"] != 1 {
		t.Fatalf("unlinking the hub deleted %d orphans, want 1 (d): %+v", r.Total.Reasons["orphan"], r.Total)
	}
	wantIndexed(t, esURL, index, door.URL, "/")

	site.set("/", "Home", "Welcome back.", "/hub")
	hub := door.hit("/hub")
	r := again(t, c)
	if door.hit("/hub") != hub {
		t.Error("the hub was requested again; the test needs its links to come from storage")
	}
	if r.Total.Created != 1 {
		t.Errorf("the crawl that links the hub again: %+v, want d created again", r.Total)
	}
	wantIndexed(t, esURL, index, door.URL, "/", "/d")
	if r := wantState(t, c, door.URL+"/d", frontier.Fetched, ""); r.Orphan {
		t.Error("/d, indexed again, is still marked an orphan")
	}
}

func TestPageListedInASitemapIsNoOrphanEvenWhenTheSitemapCannotBeRead(t *testing.T) {
	t.Parallel()
	esURL, index := estest.URL(t), estest.Index(t)
	site := newMutableSite(t)
	site.set("/", "Home", "Welcome.", "/a")
	site.set("/a", "Alpha", "Linked.")
	site.set("/listed", "Listed", "Only in the sitemap.")
	door := newFrontDoor(t, site)
	door.answer("/sitemap.xml", sitemapOf(door.URL+"/listed"))
	c := orphanConfig(t, esURL, index, door.URL+"/", "1ms", "delete", fmt.Sprintf("    sitemaps: [%q]\n", door.URL+"/sitemap.xml"))
	again(t, c)
	wantIndexed(t, esURL, index, door.URL, "/", "/a", "/listed")

	letMaxAgePass(t)
	if r := again(t, c); r.Total.Orphans != 0 || r.Total.Deleted != 0 {
		t.Errorf("a page listed in the sitemap counted as an orphan: %+v", r.Total)
	}
	wantIndexed(t, esURL, index, door.URL, "/", "/a", "/listed")

	door.answer("/sitemap.xml", statusOnly(http.StatusInternalServerError))
	letMaxAgePass(t)
	if r := again(t, c); r.Total.Orphans != 0 || r.Total.Deleted != 0 {
		t.Errorf("a sitemap that could not be read orphaned what it listed: %+v", r.Total)
	}
	wantIndexed(t, esURL, index, door.URL, "/", "/a", "/listed")

	door.answer("/sitemap.xml", sitemapOf(door.URL+"/a"))
	letMaxAgePass(t)
	if r := again(t, c); r.Total.Orphans != 1 || r.Total.Reasons["orphan"] != 1 {
		t.Errorf("a page the sitemap no longer lists: %+v, want 1 orphan deleted", r.Total)
	}
	wantIndexed(t, esURL, index, door.URL, "/", "/a")
}

func TestInterruptedCrawlDeletesNoOrphan(t *testing.T) {
	t.Parallel()
	esURL, index := estest.URL(t), estest.Index(t)
	site, door := orphanSite(t)
	c := orphanConfig(t, esURL, index, door.URL+"/", "1ms", "delete", "")
	again(t, c)

	unlinkCAndD(site)
	letMaxAgePass(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	door.mu.Lock()
	door.onHit = func(p string) {
		if p == "/f" {
			cancel()
		}
	}
	door.mu.Unlock()
	if _, err := c.Crawl(ctx); err == nil {
		t.Fatal("a crawl cancelled mid-way reported success")
	}
	wantIndexed(t, esURL, index, door.URL, "/", "/b", "/c", "/d", "/e", "/f")
	for _, p := range []string{"/c", "/d"} {
		if r := record(t, c, door.URL+p); r.State == frontier.Excluded || r.Pending != "" {
			t.Errorf("%s after an interrupted crawl: %s %q, pending %q", p, r.State, r.Reason, r.Pending)
		}
	}

	door.mu.Lock()
	door.onHit = nil
	door.mu.Unlock()
	resumed := again(t, c)
	if resumed.Total.Reasons["orphan"] != 2 {
		t.Errorf("the resumed cycle deleted %d orphans, want 2 (%+v)", resumed.Total.Reasons["orphan"], resumed.Total)
	}
	wantIndexed(t, esURL, index, door.URL, "/", "/b", "/e", "/f")
}

func TestOrphansAreNotDecidedWhileLinksAreUnknownOrAStartURLIsUnread(t *testing.T) {
	t.Parallel()
	esURL, index := estest.URL(t), estest.Index(t)
	site, door := orphanSite(t)
	c := orphanConfig(t, esURL, index, door.URL+"/", "1ms", "delete", "")
	again(t, c)

	// c is unlinked, and home links a new page whose first fetch fails: what
	// it links is unknown, and it might link c.
	site.set("/", "Home", "Welcome.", "/b", "/e", "/new")
	door.answer("/new", statusOnly(http.StatusInternalServerError))
	letMaxAgePass(t)
	second := again(t, c)
	if second.Total.Orphans != 0 || second.Total.Reasons["orphan"] != 0 {
		t.Errorf("orphans decided while a page's links were unknown: %+v", second.Total)
	}
	if !slices.ContainsFunc(second.Warnings, func(w string) bool {
		return strings.Contains(w, "orphans not decided") && strings.Contains(w, door.URL+"/new")
	}) {
		t.Errorf("report warnings %q do not say why orphans were not decided", second.Warnings)
	}
	wantIndexed(t, esURL, index, door.URL, "/", "/b", "/c", "/d", "/e", "/f")

	// The home page fails now: nothing is read from the root.
	door.answer("/new", nil)
	site.set("/new", "New", "Works now.")
	door.answer("/", statusOnly(http.StatusServiceUnavailable))
	letMaxAgePass(t)
	third := again(t, c)
	if third.Total.Reasons["orphan"] != 0 {
		t.Errorf("orphans deleted while the start URL could not be read: %+v", third.Total)
	}
	if !slices.ContainsFunc(third.Warnings, func(w string) bool { return strings.Contains(w, "start URL "+door.URL+"/") }) {
		t.Errorf("report warnings %q do not name the unread start URL", third.Warnings)
	}
	wantIndexed(t, esURL, index, door.URL, "/", "/b", "/c", "/d", "/e", "/f", "/new")

	// Everything readable again: c is an orphan at last.
	door.answer("/", nil)
	letMaxAgePass(t)
	fourth := again(t, c)
	if fourth.Total.Reasons["orphan"] != 1 {
		t.Errorf("fourth crawl deleted %d orphans, want 1 (c): %+v", fourth.Total.Reasons["orphan"], fourth.Total)
	}
	wantIndexed(t, esURL, index, door.URL, "/", "/b", "/d", "/e", "/f", "/new")
}

func TestOrphansFoundWhenEveryPageIsReadWholeAgain(t *testing.T) {
	t.Parallel()
	esURL, index := estest.URL(t), estest.Index(t)
	site, door := orphanSite(t)
	site.mu.Lock()
	for _, p := range site.pages {
		p.noValidators = true // no 304: every due page answers 200 and its links are read again
	}
	site.mu.Unlock()
	c := orphanConfig(t, esURL, index, door.URL+"/", "1ms", "delete", "")
	again(t, c)

	unlinkCAndD(site)
	site.mu.Lock()
	for _, p := range site.pages {
		p.noValidators = true
	}
	site.mu.Unlock()
	letMaxAgePass(t)
	r := again(t, c)
	if site.notMod.Load() != 0 {
		t.Fatalf("%d answers were 304; this test needs every page read whole", site.notMod.Load())
	}
	if r.Total.Orphans != 2 || r.Total.Reasons["orphan"] != 2 {
		t.Errorf("second crawl: %+v, want c and d deleted as orphans", r.Total)
	}
	wantIndexed(t, esURL, index, door.URL, "/", "/b", "/e", "/f")
}

// An unchanged re-crawl (every page 304, the start URL fetched again)
// changes nothing the orphan walk reads, so after a walk that found nothing
// it does not walk again; a change the walk reads (a page unlinked) makes
// the next cycle walk and find the orphans, and so does every cycle while
// there are orphans to find.
func TestAnUnchangedCrawlSkipsTheOrphanWalkAndAChangedOneFindsTheOrphans(t *testing.T) {
	t.Parallel()
	const skipped = "orphans: none, nothing the walk reads changed since the last one found none"
	esURL, index := estest.URL(t), estest.Index(t)
	site, door := orphanSite(t)
	cfg := orphanCfg(t, esURL, index, door.URL+"/", "1ms", "keep", "")
	logs := &logBuffer{}
	c := onTestClock(t, crawltest.NewLogged(t, cfg, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	skips := func() int {
		return strings.Count(logs.String(), `"msg":"`+skipped+`"`)
	}

	if r := again(t, c); r.Total.Created != 6 || r.Total.Orphans != 0 || skips() != 0 {
		t.Fatalf("first crawl: %+v and %d skipped walks; want 6 created, no orphans, a walk", r.Total, skips())
	}
	letMaxAgePass(t)
	if r := again(t, c); r.Total.Unchanged != 6 || r.Total.Orphans != 0 || skips() != 1 {
		t.Fatalf("unchanged crawl: %+v and %d skipped walks; want 6 unchanged and the walk skipped", r.Total, skips())
	}
	if door.hit("/") != 2 {
		t.Fatalf("the start URL was requested %d times, want twice", door.hit("/"))
	}
	letMaxAgePass(t)
	if r := again(t, c); r.Total.Orphans != 0 || skips() != 2 {
		t.Fatalf("second unchanged crawl: %+v and %d skipped walks; want the walk skipped again", r.Total, skips())
	}

	unlinkCAndD(site)
	for i := range 2 {
		letMaxAgePass(t)
		if r := again(t, c); r.Total.Orphans != 2 || skips() != 2 {
			t.Errorf("crawl %d after c and d were unlinked: %d orphans and %d skipped walks; want 2 and the walk made",
				i+1, r.Total.Orphans, skips())
		}
	}
	for _, p := range []string{"/c", "/d"} {
		if r := record(t, c, door.URL+p); !r.Orphan {
			t.Errorf("%s is not marked an orphan", p)
		}
	}
}
