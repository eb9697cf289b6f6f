package provider_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/frontier"
)

// wantRequested checks that exactly these paths (with queries) were requested.
func wantRequested(t *testing.T, site *testSite, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := site.requested(); !slices.Equal(got, want) {
		t.Errorf("requested %v\nwant %v", got, want)
	}
}

// Funnelback's own example, exclude_patterns=regexp:search\?date=|\?OpenImageResource,
// under the default query filter (only id kept): the patterns judge the URL
// as found, so the calendar and image URLs are never requested, whether a
// link, a sitemap or a redirect names them, and a canonical naming one is
// not followed. Before, the filter rewrote them first (to /search, /img...),
// the patterns never matched, and the rewritten URLs were fetched.
func TestExcludePatternJudgesTheQueryTheFilterDrops(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.html("/", "home", links("/search?date=2018-01-01", "/img?OpenImageResource", "/moved", "/about", "/list?sort=asc"))
	site.redirect("/moved", "/img2?OpenImageResource")
	site.handle("/about", func(w http.ResponseWriter, r *http.Request) {
		htmlPage("about", `<link rel="canonical" href="/img3?OpenImageResource">about us`)(w, r)
	})
	site.html("/list", "list", "")
	site.text("/sitemap.xml", "application/xml", urlset(site.URL+"/search?date=2019-01-01", site.URL+"/page?OpenImageResource"))
	cfg, out := testConfig(t, "", fmt.Sprintf("sitemaps: [%q]\nexclude: ['regexp:search\\?date=|\\?OpenImageResource']", site.URL+"/sitemap.xml"), site.URL+"/")

	c, report := crawlKeep(t, cfg)

	// /list?sort=asc passes the exclude and is fetched as the filter makes it.
	wantRequested(t, site, "/", "/robots.txt", "/sitemap.xml", "/moved", "/about", "/list")
	for _, u := range []string{"/search?date=2018-01-01", "/img?OpenImageResource", "/img2?OpenImageResource", "/search?date=2019-01-01", "/page?OpenImageResource"} {
		wantState(t, c, site.URL+u, frontier.Excluded, "excluded")
	}
	for _, u := range []string{"/search", "/img", "/img2", "/img3", "/page", "/list?sort=asc"} {
		unknown(t, c, site.URL+u)
	}
	if got := report.Total.Reasons["excluded"]; got != 5 {
		t.Errorf("report counts %d excluded, want 5: %+v", got, report.Total.Reasons)
	}
	if rule := exampleFor(report, "excluded"); !strings.HasSuffix(rule, "sources[0].exclude[0]") {
		t.Errorf("excluded example's rule %q, want the exclude entry", rule)
	}
	if got, want := indexedURLs(t, out), sortedURLs(site.URL, "/", "/about", "/list"); !slices.Equal(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
}

// FDSE: "by default, the crawler will ignore links of the form
// HREF="file.pl?test"". With follow_query_strings: false the link is
// refused as found, with its reason, whatever the query filter would have
// made of it; before, the filter dropped "test" and file.pl was fetched.
func TestFollowQueryStringsFalseRefusesFilePlTestAsFound(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.html("/", "home", links("/file.pl?test", "/item?id=1", "/plain"))
	site.html("/file.pl", "script", "")
	site.html("/item", "item", "")
	site.html("/plain", "plain", "")
	cfg, _ := testConfig(t, "", "follow_query_strings: false", site.URL+"/")

	c, report := crawlKeep(t, cfg)

	wantRequested(t, site, "/", "/robots.txt", "/plain")
	wantState(t, c, site.URL+"/file.pl?test", frontier.Excluded, "query_string")
	wantState(t, c, site.URL+"/item?id=1", frontier.Excluded, "query_string")
	unknown(t, c, site.URL+"/file.pl")
	if got := report.Total.Reasons["query_string"]; got != 2 {
		t.Errorf("report counts %d query_string, want 2: %+v", got, report.Total.Reasons)
	}
	if rule := exampleFor(report, "query_string"); !strings.HasSuffix(rule, "sources[0].follow_query_strings") {
		t.Errorf("query_string example's rule %q, want follow_query_strings", rule)
	}
}

// A link refused as found is stored under the URL as found, which is never
// a URL to fetch: when the configuration changes and lets it in, the crawl
// space is re-applied, and the link is queued as the filter makes it when
// the page holding it is read again, never fetched as found.
func TestLinkRefusedAsFoundIsNeverFetchedAsFoundAfterTheConfigChanges(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.html("/", "home", links("/search?date=2018-01-01"))
	site.html("/search", "search", "")
	cfg, _ := testConfig(t, "", `exclude: ['regexp:search\?date=']`, site.URL+"/")
	c, _ := crawlKeep(t, cfg)
	wantState(t, c, site.URL+"/search?date=2018-01-01", frontier.Excluded, "excluded")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	cfg.Sources[0].Exclude = nil
	cfg.Sources[0].MaxAge = 1 // the home page is read again
	c, _ = crawlKeep(t, cfg)

	wantRequested(t, site, "/", "/robots.txt", "/search")
	if n := site.hit("/"); n != 2 {
		t.Errorf("home requested %d times, want 2", n)
	}
	wantState(t, c, site.URL+"/search", frontier.Fetched, "")
}

// Sitemap and feed files are read as named: a sitemap index listing
// sitemap.xml?page=1 and ?page=2 (as Drupal's does) has both read, though
// the query filter, which is for pages, drops page. Before, both children
// were filtered into the index's own URL and neither was read.
func TestSitemapsDifferingOnlyByQueryAreEachRead(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.handle("/sitemap.xml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		switch r.URL.Query().Get("page") {
		case "":
			fmt.Fprint(w, sitemapIndex(site.URL+"/sitemap.xml?page=1", site.URL+"/sitemap.xml?page=2"))
		case "1":
			fmt.Fprint(w, urlset(site.URL+"/a"))
		case "2":
			fmt.Fprint(w, urlset(site.URL+"/b"))
		}
	})
	site.html("/", "home", "")
	site.html("/a", "a", "")
	site.html("/b", "b", "")
	cfg, _ := testConfig(t, "", fmt.Sprintf("sitemaps: [%q]", site.URL+"/sitemap.xml"), site.URL+"/")

	crawlKeep(t, cfg)

	wantRequested(t, site, "/", "/robots.txt", "/sitemap.xml", "/sitemap.xml?page=1", "/sitemap.xml?page=2", "/a", "/b")
}

// A start URL whose parameters the query filter drops is fetched as the
// filter makes it, and the crawl says so in its report (and log), placed at
// the start URL's line.
func TestStartURLTheQueryFilterRewritesIsFetchedRewrittenAndReported(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.html("/list", "list", "")
	cfg, _ := testConfig(t, "", "", site.URL+"/list?sort=asc")

	_, report := crawlKeep(t, cfg)

	wantRequested(t, site, "/robots.txt", "/list")
	want := fmt.Sprintf("%s:6:18: sources[0].start_urls[0]: the query filter drops sort from start URL %s/list?sort=asc, so %s/list is fetched instead (list it in honored_query_params to keep it)",
		cfg.File, site.URL, site.URL)
	if !slices.Contains(report.Warnings, want) {
		t.Errorf("report warnings %q\nwant among them %q", report.Warnings, want)
	}
}
