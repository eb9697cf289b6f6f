package provider_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/hostile"
	"github.com/crawlspace/crawlspace/provider"
)

func TestRobotsTxtDisallowedLinkIsExcludedAsRobotsAndNeverRequested(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.text("/robots.txt", "text/plain", "User-agent: *\nDisallow: /private/\n")
	site.html("/", "home", links("/private/secret.html", "/public.html"))
	site.html("/private/secret.html", "secret", "")
	site.html("/public.html", "public", "")
	cfg, out := testConfig(t, "", "", site.URL+"/")

	c, report := crawlKeep(t, cfg)

	r := wantState(t, c, site.URL+"/private/secret.html", frontier.Excluded, "robots")
	if r.Indexed {
		t.Errorf("the disallowed page is marked indexed")
	}
	if n := site.hit("/private/secret.html"); n != 0 {
		t.Errorf("the disallowed page was requested %d times", n)
	}
	wantState(t, c, site.URL+"/public.html", frontier.Fetched, "")
	if got := report.Total.Reasons["robots"]; got != 1 {
		t.Errorf("report counts %d robots exclusions, want 1", got)
	}
	if got, want := indexedURLs(t, out), sortedURLs(site.URL, "/", "/public.html"); !slices.Equal(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
}

func TestRobotsTxtLongestMatchWinsAndAllowWinsATie(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.text("/robots.txt", "text/plain", strings.Join([]string{
		"User-agent: *",
		"Disallow: /tie", // the same length as the Allow below: Allow wins
		"Allow: /tie",
		"Allow: /docs/",
		"Disallow: /docs/secret", // longer than /docs/: Disallow wins
		"Disallow: /*.php$",      // anchored at the start, $ at the end
	}, "\n"))
	pages := []string{"/tie.html", "/docs/open.html", "/docs/secret.html", "/x/page.php", "/x/page.php5"}
	site.html("/", "home", links(pages...))
	for _, p := range pages {
		site.html(p, p, "")
	}
	cfg, _ := testConfig(t, "", "ignored_extensions: []", site.URL+"/")

	c, _ := crawlKeep(t, cfg)

	for _, tc := range []struct {
		path    string
		allowed bool
	}{
		{"/tie.html", true},
		{"/docs/open.html", true},
		{"/docs/secret.html", false},
		{"/x/page.php", false},
		{"/x/page.php5", true},
	} {
		if tc.allowed {
			wantState(t, c, site.URL+tc.path, frontier.Fetched, "")
			if n := site.hit(tc.path); n != 1 {
				t.Errorf("%s requested %d times, want 1", tc.path, n)
			}
		} else {
			wantState(t, c, site.URL+tc.path, frontier.Excluded, "robots")
			if n := site.hit(tc.path); n != 0 {
				t.Errorf("%s requested %d times, want 0", tc.path, n)
			}
		}
	}
}

func TestRobotsTxtNotFoundAllowsEverything(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.status("/robots.txt", http.StatusNotFound)
	site.html("/", "home", links("/a.html", "/b.html"))
	site.html("/a.html", "a", "")
	site.html("/b.html", "b", "")
	cfg, out := testConfig(t, "", "", site.URL+"/")

	crawlKeep(t, cfg)

	if got, want := indexedURLs(t, out), sortedURLs(site.URL, "/", "/a.html", "/b.html"); !slices.Equal(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
	if n := site.hit("/robots.txt"); n != 1 {
		t.Errorf("robots.txt requested %d times, want 1", n)
	}
}

func TestRobotsTxtServerErrorFetchesNothingAndEndsInErrorAfterMaxTemporaryErrors(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.status("/robots.txt", http.StatusInternalServerError)
	site.html("/", "home", links("/a.html"))
	site.html("/a.html", "a", "")
	cfg, out := testConfig(t, "", "max_temporary_errors: 3", site.URL+"/")

	c, report := crawlTimed(t, cfg, provider.Timing{RobotsRetry: 50 * time.Millisecond})

	if got := site.requested(); !slices.Equal(got, []string{"/robots.txt"}) {
		t.Errorf("requested %v, want robots.txt only", got)
	}
	// Retried, but not in a loop: at most once before the crawl starts and
	// once per attempt (an attempt within the retry wait reuses the answer).
	if n := site.hit("/robots.txt"); n < 2 || n > 4 {
		t.Errorf("robots.txt requested %d times, want 2 to 4", n)
	}
	r := wantState(t, c, site.URL+"/", frontier.Error, "robots_unavailable")
	if r.ErrCount != 1 || r.Status != 0 {
		t.Errorf("start URL has ErrCount %d, status %d; want 1 and 0 (it was never requested)", r.ErrCount, r.Status)
	}
	if ex := exampleFor(report, "robots_unavailable"); !strings.Contains(ex, "in a row: 3") {
		t.Errorf("report example %q does not say 3 attempts in a row", ex)
	}
	if got := report.Total.Reasons["robots_unavailable"]; got != 1 {
		t.Errorf("report counts %d robots_unavailable, want 1: %v", got, report.Total.Reasons)
	}
	if got := indexedURLs(t, out); len(got) != 0 {
		t.Errorf("indexed %v while robots.txt was unreachable", got)
	}
}

func TestRobotsTxtServerErrorThatRecoversLetsTheCrawlGoOn(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	fails := 1
	site.handle("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		site.mu.Lock()
		fail := fails > 0
		fails--
		site.mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
	})
	site.html("/", "home", links("/a.html", "/private.html"))
	site.html("/a.html", "a", "")
	cfg, out := testConfig(t, "", "", site.URL+"/")

	c, _ := crawlTimed(t, cfg, provider.Timing{RobotsRetry: 20 * time.Millisecond})

	if got, want := indexedURLs(t, out), sortedURLs(site.URL, "/", "/a.html"); !slices.Equal(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
	wantState(t, c, site.URL+"/private.html", frontier.Excluded, "robots")
	if n := site.hit("/robots.txt"); n != 2 {
		t.Errorf("robots.txt requested %d times, want 2 (the failure and the retry)", n)
	}
}

func TestRobotsTxtIsFetchedOncePerHostPerCrawl(t *testing.T) {
	t.Parallel()
	a, b := newSite(t), newSite(t)
	for _, site := range []*testSite{a, b} {
		site.text("/robots.txt", "text/plain", "User-agent: *\nDisallow: /no\n")
		var paths []string
		for i := range 20 {
			p := fmt.Sprintf("/p%d.html", i)
			paths = append(paths, p)
			site.html(p, p, "")
		}
		site.html("/", "home", links(paths...)+links("/no1", "/no2"))
	}
	// The pages are alike: keep_duplicates keeps each its own document, fetched once.
	cfg, _ := testConfig(t, "fetch: {concurrency: 8}", "politeness: {max_parallel_per_host: 4}\nkeep_duplicates: true", a.URL+"/", b.URL+"/")

	crawlKeep(t, cfg)

	for _, site := range []*testSite{a, b} {
		if n := site.hit("/robots.txt"); n != 1 {
			t.Errorf("%s: robots.txt requested %d times, want 1", site.URL, n)
		}
		if n := site.hit("/p19.html"); n != 1 {
			t.Errorf("%s: /p19.html requested %d times, want 1", site.URL, n)
		}
	}
}

func TestRobotsTxtCrawlDelaySpacesTheRequestsToTheHost(t *testing.T) {
	t.Parallel()
	const delay = 100 * time.Millisecond
	site := newSite(t)
	site.text("/robots.txt", "text/plain", "User-agent: *\nCrawl-delay: 0.1\n")
	var paths []string
	for i := range 6 {
		p := fmt.Sprintf("/p%d.html", i)
		paths = append(paths, p)
		site.html(p, p, "")
	}
	site.html("/", "home", links(paths...))
	// Two slots per host: Crawl-delay must still space every request.
	cfg, _ := testConfig(t, "fetch: {concurrency: 4}", "politeness: {max_parallel_per_host: 2}", site.URL+"/")

	crawlKeep(t, cfg)

	var starts []time.Time
	for _, p := range append([]string{"/"}, paths...) {
		at := site.at(p)
		if len(at) != 1 {
			t.Fatalf("%s requested %d times, want 1", p, len(at))
		}
		starts = append(starts, at[0])
	}
	slices.SortFunc(starts, func(x, y time.Time) int { return x.Compare(y) })
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < delay {
			t.Errorf("request %d came %v after the previous one; Crawl-delay is %v", i, gap, delay)
		}
	}
}

func TestRobotsMetaTagsAndHeadersDecideIndexingAndFollowing(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.html("/", "home", links("/noindex.html", "/nofollow.html", "/none.html", "/header-noindex.html",
		"/header-other-agent.html", "/crawlspace-meta.html", "/relnofollow.html"))
	site.handle("/noindex.html", htmlHead(`<meta name="robots" content="NoIndex">`, links("/from-noindex.html")))
	site.handle("/nofollow.html", htmlHead(`<meta name="ROBOTS" content="index, nofollow">`, links("/from-nofollow.html")))
	site.handle("/none.html", htmlHead(`<meta name="robots" content="none">`, links("/from-none.html")))
	site.handle("/crawlspace-meta.html", htmlHead(`<meta name="crawlspace" content="noindex">`, ""))
	site.handle("/header-noindex.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Robots-Tag", "crawlspace: noindex")
		htmlPage("h", links("/from-header.html"))(w, r)
	})
	site.handle("/header-other-agent.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Robots-Tag", "otherbot: noindex, nofollow")
		htmlPage("h", "")(w, r)
	})
	site.html("/relnofollow.html", "rel", `<a rel="nofollow" href="/from-rel.html">x</a> <a rel="external nofollow" href="/from-rel2.html">y</a>`)
	for _, p := range []string{"/from-noindex.html", "/from-nofollow.html", "/from-none.html", "/from-header.html", "/from-rel.html", "/from-rel2.html"} {
		site.html(p, p, "")
	}
	for _, tc := range []struct {
		name    string
		robots  string
		indexed []string
		follows []string // pages reached only through a directive
	}{
		{
			name:    "obeyed",
			robots:  "",
			indexed: []string{"/", "/nofollow.html", "/header-other-agent.html", "/relnofollow.html", "/from-noindex.html", "/from-header.html"},
			follows: []string{"/from-noindex.html", "/from-header.html"},
		},
		{
			name:   "ignore_nofollow",
			robots: "robots: {ignore_nofollow: true}",
			indexed: []string{"/", "/nofollow.html", "/header-other-agent.html", "/relnofollow.html",
				"/from-noindex.html", "/from-nofollow.html", "/from-none.html", "/from-header.html", "/from-rel.html", "/from-rel2.html"},
			follows: []string{"/from-noindex.html", "/from-nofollow.html", "/from-none.html", "/from-header.html", "/from-rel.html", "/from-rel2.html"},
		},
		{
			name:   "ignore_noindex",
			robots: "robots: {ignore_noindex: true}",
			indexed: []string{"/", "/noindex.html", "/nofollow.html", "/none.html", "/crawlspace-meta.html", "/header-noindex.html",
				"/header-other-agent.html", "/relnofollow.html", "/from-noindex.html", "/from-header.html"},
			follows: []string{"/from-noindex.html", "/from-header.html"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, out := testConfig(t, "", tc.robots, site.URL+"/")
			c, report := crawlKeep(t, cfg)
			if got, want := indexedURLs(t, out), sortedURLs(site.URL, tc.indexed...); !slices.Equal(got, want) {
				t.Errorf("indexed\n got %v\nwant %v", got, want)
			}
			for _, p := range []string{"/from-noindex.html", "/from-nofollow.html", "/from-none.html", "/from-header.html", "/from-rel.html", "/from-rel2.html"} {
				if slices.Contains(tc.follows, p) {
					wantState(t, c, site.URL+p, frontier.Fetched, "")
				} else {
					unknown(t, c, site.URL+p)
				}
			}
			// A noindex page is fetched (its links count) but holds no document.
			r := wantState(t, c, site.URL+"/noindex.html", frontier.Fetched, "")
			if r.Indexed != (tc.name == "ignore_noindex") {
				t.Errorf("/noindex.html indexed %v", r.Indexed)
			}
			if tc.name == "obeyed" {
				if got := report.Total.Reasons["noindex"]; got != 4 {
					t.Errorf("report counts %d noindex, want 4: %v", got, report.Total.Reasons)
				}
			}
		})
	}
}

// htmlHead serves a page with extra head elements.
func htmlHead(head, body string) http.HandlerFunc {
	page := fmt.Sprintf("<!doctype html><html><head><title>t</title>%s</head><body>%s</body></html>", head, body)
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	}
}

func TestRobotsObeyFalseFetchesDisallowedPagesAndWarnsInTheReport(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.text("/robots.txt", "text/plain", "User-agent: *\nDisallow: /\n")
	site.handle("/", htmlHead(`<meta name="robots" content="noindex, nofollow">`, links("/a.html")))
	site.html("/a.html", "a", "")
	cfg, out := testConfig(t, "", "robots: {obey: false}", site.URL+"/")

	_, report := crawlKeep(t, cfg)

	if got, want := indexedURLs(t, out), sortedURLs(site.URL, "/", "/a.html"); !slices.Equal(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
	if n := site.hit("/robots.txt"); n != 0 {
		t.Errorf("robots.txt requested %d times by a source that ignores it", n)
	}
	if !slices.ContainsFunc(report.Warnings, func(w string) bool { return strings.Contains(w, "robots.obey: false") }) {
		t.Errorf("report warnings %q do not mention robots.obey: false", report.Warnings)
	}
}

func TestRobotsTxtBadLinesCostOnlyThemselvesAndOurGroupBeatsTheStarGroup(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.text("/robots.txt", "text/plain", strings.Join([]string{
		"Disallow: /before-any-group", // no User-agent yet: skipped
		"User-agent: *",
		"Disallow: /everyone",
		"",
		"User-agent: CrawlSpace",
		"Crawl-delay: soon", // bad value: skipped, the group stays
		"this line has no colon",
		"Disallow: /only-us",
	}, "\n"))
	pages := []string{"/before-any-group.html", "/everyone.html", "/only-us.html", "/open.html"}
	site.html("/", "home", links(pages...))
	for _, p := range pages {
		site.html(p, p, "")
	}
	cfg, _ := testConfig(t, "", "", site.URL+"/")

	c, _ := crawlKeep(t, cfg)

	wantState(t, c, site.URL+"/only-us.html", frontier.Excluded, "robots")
	// The crawlspace group applies instead of *, not in addition to it.
	for _, p := range []string{"/before-any-group.html", "/everyone.html", "/open.html"} {
		wantState(t, c, site.URL+p, frontier.Fetched, "")
	}
}

func TestRobotsTxtRedirectIsFollowedToTheRules(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.redirect("/robots.txt", "/moved/robots.txt")
	site.text("/moved/robots.txt", "text/plain", "User-agent: *\nDisallow: /private\n")
	site.html("/", "home", links("/private.html", "/public.html"))
	site.html("/private.html", "private", "")
	site.html("/public.html", "public", "")
	cfg, _ := testConfig(t, "", "", site.URL+"/")

	c, _ := crawlKeep(t, cfg)

	wantState(t, c, site.URL+"/private.html", frontier.Excluded, "robots")
	wantState(t, c, site.URL+"/public.html", frontier.Fetched, "")
	if n := site.hit("/moved/robots.txt"); n != 1 {
		t.Errorf("the redirected robots.txt was requested %d times, want 1", n)
	}
}

func TestPageThatBecomesNoindexLeavesTheIndex(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	var noindex atomic.Bool
	site.html("/", "home", links("/page.html"))
	site.handle("/page.html", func(w http.ResponseWriter, r *http.Request) {
		head := ""
		if noindex.Load() {
			head = `<meta name="robots" content="noindex">`
		}
		htmlHead(head, "page")(w, r)
	})
	cfg, out := testConfig(t, "", "max_age: 1ns", site.URL+"/")

	c, _ := crawlKeep(t, cfg)
	noindex.Store(true)
	report := again(t, c)

	r := wantState(t, c, site.URL+"/page.html", frontier.Fetched, "")
	if r.Indexed {
		t.Error("the page is still marked indexed")
	}
	if got := deletedIDs(t, out); !slices.Equal(got, []string{docfields.ID(site.URL + "/page.html")}) {
		t.Errorf("delete actions %v", got)
	}
	if report.Total.Deleted != 1 || report.Total.Reasons["noindex"] != 1 {
		t.Errorf("second cycle: %d deleted, reasons %v", report.Total.Deleted, report.Total.Reasons)
	}
}

func TestRobotsTxtDownForGoodEndsEveryURLOfTheHostAfterMaxTemporaryErrors(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.status("/robots.txt", http.StatusBadGateway)
	var starts []string
	for i := range 40 {
		starts = append(starts, fmt.Sprintf("%s/p%d.html", site.URL, i))
	}
	cfg, _ := testConfig(t, "", "max_temporary_errors: 3", starts...)

	// Retrying robots.txt for each URL in turn, two per retry wait and the
	// wait doubling to 30 minutes, would keep this cycle open for hours.
	c, report := crawlTimed(t, cfg, provider.Timing{RobotsRetry: 20 * time.Millisecond})

	if got := site.requested(); !slices.Equal(got, []string{"/robots.txt"}) {
		t.Errorf("requested %v, want robots.txt only", got)
	}
	if n := site.hit("/robots.txt"); n > 4 {
		t.Errorf("robots.txt requested %d times; after 3 failures the host's URLs end", n)
	}
	for _, u := range starts {
		wantState(t, c, u, frontier.Error, "robots_unavailable")
	}
	if got := report.Total.Reasons["robots_unavailable"]; got != len(starts) {
		t.Errorf("report counts %d robots_unavailable, want %d", got, len(starts))
	}
}

func TestRobotsTxtPastFiveRedirectsOrInALoopIsUnavailableAndAllowsEverythingAsRFC9309Says(t *testing.T) {
	t.Parallel()
	rules := "User-agent: *\nDisallow: /private\n"
	chain, loop, five := newSite(t), newSite(t), newSite(t)
	robots := map[*testSite]*hostile.Redirects{
		chain: {Hops: 6, To: "/rules.txt"},
		loop:  {Hops: 2, Loop: true},
		five:  {Hops: 5, To: "/rules.txt"},
	}
	var starts []string
	for site, r := range robots {
		site.handle("/robots.txt", r.ServeHTTP)
		site.text("/rules.txt", "text/plain", rules)
		site.html("/", "home", links("/private.html"))
		site.html("/private.html", "private", "")
		starts = append(starts, site.URL+"/")
	}
	cfg, _ := testConfig(t, "", "max_temporary_errors: 3\nstay_on_start_hosts: true", starts...)

	// Short retries, so the old behaviour (robots_unavailable after
	// max_temporary_errors retries) fails the test quickly.
	c, report := crawlTimed(t, cfg, provider.Timing{RobotsRetry: 20 * time.Millisecond})

	for _, site := range []*testSite{chain, loop} {
		wantState(t, c, site.URL+"/", frontier.Fetched, "")
		wantState(t, c, site.URL+"/private.html", frontier.Fetched, "")
		// The first request and five redirects, once for the whole crawl.
		if n := robots[site].Requests(); n != 6 {
			t.Errorf("%s: robots.txt requested %d times, want 6", site.URL, n)
		}
		if n := site.hit("/rules.txt"); n != 0 {
			t.Errorf("%s: the rules past the fifth redirect were requested %d times", site.URL, n)
		}
	}
	// Five redirects are followed to the rules.
	wantState(t, c, five.URL+"/private.html", frontier.Excluded, "robots")
	if n := five.hit("/rules.txt"); n != 1 {
		t.Errorf("rules five redirects away requested %d times, want 1", n)
	}
	if n := report.Total.Reasons["robots_unavailable"]; n != 0 {
		t.Errorf("report counts %d robots_unavailable: %v", n, report.Total.Reasons)
	}
}

// rawSite is a loopback site that logs each request target exactly as it
// came on the request line, so a test can compare it with what a browser
// would request: the links of its pages, resolved as the URL Standard
// says.
type rawSite struct {
	*httptest.Server
	mu     sync.Mutex
	log    []string
	routes map[string]http.HandlerFunc // by the raw path, query aside
}

func newRawSite(t *testing.T) *rawSite {
	t.Helper()
	s := &rawSite{routes: map[string]http.HandlerFunc{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.log = append(s.log, r.RequestURI)
		path, _, _ := strings.Cut(r.RequestURI, "?")
		h := s.routes[path]
		s.mu.Unlock()
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// page serves path (any query) as an HTML page, each URL's its own, so
// no two are duplicates fetched again to settle their group.
func (s *rawSite) page(path, body string) {
	s.routes[path] = func(w http.ResponseWriter, r *http.Request) {
		htmlPage(r.RequestURI, body)(w, r)
	}
}

func (s *rawSite) redirect(path, location string) {
	s.routes[path] = func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Location"] = []string{location}
		w.WriteHeader(http.StatusFound)
	}
}

// requests is every request target received, sorted.
func (s *rawSite) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.log)
	slices.Sort(out)
	return out
}

// A page whose links and redirects a browser resolves by the URL Standard
// is crawled the same way: each request the site receives is the one a
// browser would send (the request log is compared), but for the one place
// where crawlspace spells a URL its own way, a "%" that starts no escape,
// sent as "%25". robots.txt judges each URL as the site wrote it.
func TestLinksAndRedirectsAreRequestedAsABrowserRequestsThem(t *testing.T) {
	t.Parallel()
	site := newRawSite(t)
	host := strings.TrimPrefix(site.URL, "http://")
	site.routes["/robots.txt"] = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "User-agent: *\nDisallow: /list?sort=\n")
	}
	site.page("/", `<a href="images\photo.html">a backslash</a>
<a href="/50%off.html">a stray percent</a>
<a href="/list?sort=asc&amp;page=2">robots.txt disallows /list?sort=</a>
<a href="/list?page=3&amp;sort=asc">allowed, and requested in this order</a>
<a href="http:relative.html">a scheme and a relative path</a>
<a href="  /spaced
.html ">spaces around, a newline inside</a>
<a href="/old-a">`+`</a><a href="/old-b"></a><a href="/old-c"></a><a href="/old-d"></a><a href="/old-e"></a>`)
	for _, p := range []string{"/images/photo.html", "/50%25off.html", "/list", "/relative.html", "/spaced.html",
		"/moved-a.html", "/moved-b.html", "/moved-c.html", "/moved-d.html", "/moved-e.html"} {
		site.page(p, "")
	}
	site.redirect("/old-a", "http:moved-a.html")
	site.redirect("/old-b", `\moved-b.html`)
	site.redirect("/old-c", "/moved\t-c.html")
	site.redirect("/old-d", "/moved-d.html?b=2&a=1")
	site.redirect("/old-e", `\\`+host+`\moved-e.html`)
	cfg, _ := testConfig(t, "", `honored_query_params: ["*"]`, site.URL+"/")

	c, _ := crawlKeep(t, cfg)

	// What a browser requests for each link and Location above.
	browser := []string{
		"/", "/robots.txt",
		"/images/photo.html",
		"/50%off.html",
		"/list?page=3&sort=asc",
		"/relative.html",
		"/spaced.html",
		"/old-a", "/moved-a.html",
		"/old-b", "/moved-b.html",
		"/old-c", "/moved-c.html",
		"/old-d", "/moved-d.html?b=2&a=1",
		"/old-e", "/moved-e.html",
	}
	want := slices.Clone(browser)
	want[slices.Index(want, "/50%off.html")] = "/50%25off.html" // the one spelling of crawlspace's own
	slices.Sort(want)
	if got := site.requests(); !slices.Equal(got, want) {
		t.Errorf("the site received\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	wantState(t, c, site.URL+"/list?page=2&sort=asc", frontier.Excluded, "robots")
	wantState(t, c, site.URL+"/list?page=3&sort=asc", frontier.Fetched, "")
	wantState(t, c, site.URL+"/moved-d.html?a=1&b=2", frontier.Fetched, "")
}

// With a query filter that drops a parameter, the URL requested is the
// one the site wrote less that parameter, and robots.txt must allow both:
// the URL as found and the URL requested.
func TestRobotsTxtMustAllowTheURLAsFoundAndTheURLTheFilterRequests(t *testing.T) {
	t.Parallel()
	site := newRawSite(t)
	site.routes["/robots.txt"] = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "User-agent: *\nDisallow: /list?sort=\nDisallow: /item?id=9$\n")
	}
	site.page("/", links("/list?sort=asc&id=1", "/list?id=2&sort=asc", "/item?id=9&utm=x", "/item?utm=x&id=8"))
	site.page("/list", "")
	site.page("/item", "")
	cfg, _ := testConfig(t, "", `honored_query_params: [id]`, site.URL+"/")

	c, _ := crawlKeep(t, cfg)

	want := []string{"/", "/item?id=8", "/list?id=2", "/robots.txt"}
	if got := site.requests(); !slices.Equal(got, want) {
		t.Errorf("the site received %q, want %q", got, want)
	}
	wantState(t, c, site.URL+"/list?id=1", frontier.Excluded, "robots")
	wantState(t, c, site.URL+"/item?id=9", frontier.Excluded, "robots")
}
