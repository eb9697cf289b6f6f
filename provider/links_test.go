package provider_test

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/provider"
)

func TestLinksFromBaseHrefFramesIframesAndAreasAreFollowedScriptsAndOtherSchemesAreNot(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.handle("/", htmlHead(`<base href="/sub/">`, `
<a href="relative.html">relative to base</a>
<iframe src="/iframe.html"></iframe>
<frame src="/frame.html">
<map name="m"><area href="/area.html" alt="a"></map>
<script>document.write('<a href="/script.html">x</a>'); var u = "/script2.html";</script>
<a href="mailto:someone@example.com">mail</a>
<a href="javascript:void(0)">js</a>
<a href="ftp://example.com/file.html">ftp</a>
<a href="tel:+15551234">tel</a>`))
	for _, p := range []string{"/sub/relative.html", "/iframe.html", "/frame.html", "/area.html", "/relative.html", "/script.html", "/script2.html"} {
		site.html(p, p, "")
	}
	cfg, out := testConfig(t, "", "", site.URL+"/")

	c, _ := crawlKeep(t, cfg)

	want := sortedURLs(site.URL, "/", "/sub/relative.html", "/iframe.html", "/frame.html", "/area.html")
	if got := indexedURLs(t, out); !slices.Equal(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
	for _, p := range []string{"/relative.html", "/script.html", "/script2.html"} {
		unknown(t, c, site.URL+p)
	}
	if got := site.requested(); !slices.Equal(got, []string{"/", "/area.html", "/frame.html", "/iframe.html", "/robots.txt", "/sub/relative.html"}) {
		t.Errorf("requested %v", got)
	}
}

func TestOnePageSpeltManyWaysIsFetchedOnce(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	host := site.Listener.Addr().String()
	site.html("/", "home", links(
		"/page.html#top", "/page.html#bottom", "/page.html",
		"/a/../page.html", "/./page.html", "/%70age.html",
		"http://"+host+"/page.html#x",
		"HTTP://"+host+"/page.html",
		"/page.html?utm_source=mail", // not an honoured parameter
		"/item?id=1", "/item?id=2", "/item?id=1&session=abc",
	))
	site.html("/page.html", "page", "")
	site.html("/item", "item", "")
	cfg, _ := testConfig(t, "", "keep_duplicates: true", site.URL+"/") // /item?id=1 and 2 are alike: each its own document, fetched once

	crawlKeep(t, cfg)

	want := map[string]int{"/": 1, "/page.html": 1, "/item?id=1": 1, "/item?id=2": 1, "/robots.txt": 1}
	for _, uri := range site.requested() {
		if site.hit(uri) != want[uri] {
			t.Errorf("%s requested %d times, want %d", uri, site.hit(uri), want[uri])
		}
	}
	if len(site.requested()) != len(want) {
		t.Errorf("requested %v", site.requested())
	}
}

func TestQueryFilterMakesAnEndlessCalendarFinite(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.handle("/calendar", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		d, _ := strconv.Atoi(q.Get("day"))
		m, _ := strconv.Atoi(q.Get("month"))
		htmlPage("calendar", fmt.Sprintf(`<a href="/calendar?day=%d&month=%d">next day</a> <a href="/calendar?day=1&month=%d">next month</a> <a href="/event?id=%d">event</a>`,
			d+1, m, m+1, d%3))(w, r)
	})
	site.html("/event", "event", "")
	site.html("/", "home", links("/calendar?day=1&month=1"))
	cfg, _ := testConfig(t, "", "", site.URL+"/")

	c, _ := crawlKeep(t, cfg)

	// The filter leaves /calendar itself: one request, whose links all lead back to it.
	if n := site.hit("/calendar"); n != 1 {
		t.Errorf("/calendar requested %d times, want 1", n)
	}
	for _, uri := range site.requested() {
		if uri != "/" && uri != "/calendar" && uri != "/robots.txt" && uri != "/event?id=0" {
			t.Errorf("requested %s", uri)
		}
	}
	wantState(t, c, site.URL+"/calendar", frontier.Fetched, "")
	unknown(t, c, site.URL+"/calendar?day=1&month=1")
}

func TestMaxLinkDepthStopsTheCrawlThatManyLinksFromAStartURL(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.html("/", "start", links("/d1.html"))
	for i := 1; i < 10; i++ {
		site.html(fmt.Sprintf("/d%d.html", i), "", links(fmt.Sprintf("/d%d.html", i+1)))
	}
	cfg, out := testConfig(t, "", "max_link_depth: 3", site.URL+"/")

	c, report := crawlKeep(t, cfg)

	if got, want := indexedURLs(t, out), sortedURLs(site.URL, "/", "/d1.html", "/d2.html", "/d3.html"); !slices.Equal(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
	if r := record(t, c, site.URL+"/d3.html"); r.Depth != 3 {
		t.Errorf("/d3.html has depth %d", r.Depth)
	}
	wantState(t, c, site.URL+"/d4.html", frontier.Excluded, "max_link_depth")
	unknown(t, c, site.URL+"/d5.html")
	if n := site.hit("/d4.html"); n != 0 {
		t.Errorf("/d4.html requested %d times", n)
	}
	if report.Total.Reasons["max_link_depth"] != 1 {
		t.Errorf("report reasons %v", report.Total.Reasons)
	}
}

func TestMaxLinksPerPageCapsTheLinksQueuedFromOnePage(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	var paths []string
	for i := range 30 {
		paths = append(paths, fmt.Sprintf("/p%02d.html", i))
	}
	site.html("/", "home", links(paths...))
	for _, p := range paths {
		site.html(p, p, "")
	}
	cfg, out := testConfig(t, "fetch: {max_links_per_page: 5}", "", site.URL+"/")

	c, _ := crawlKeep(t, cfg)

	if got, want := indexedURLs(t, out), sortedURLs(site.URL, append([]string{"/"}, paths[:5]...)...); !slices.Equal(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
	unknown(t, c, site.URL+paths[5])
}

func TestLinksPastMaxLinksPerPageAreAReasonInTheReportAndThePagesHistory(t *testing.T) {
	t.Parallel()
	// Well past the default max_links_per_page of 2000, and no larger:
	// every link is lexed, counted and refused.
	const found = 5000
	site := newSite(t)
	var b strings.Builder
	for i := range found {
		fmt.Fprintf(&b, `<a href="/p/%d.html">%d</a>`, i, i)
	}
	site.html("/", "home", b.String())
	// The links are refused as found, so the crawl counts the links kept
	// without fetching them.
	cfg, _ := testConfig(t, "", `exclude: ["/p/"]`, site.URL+"/")

	c, report := crawlKeep(t, cfg)

	if got := report.Total.Reasons["excluded"]; got != 2000 {
		t.Errorf("%d links kept, want the default max_links_per_page of 2000", got)
	}
	if got := report.Total.Reasons["links_capped"]; got != 1 {
		t.Errorf("report counts %d links_capped, want 1: %v", got, report.Total.Reasons)
	}
	var ex provider.Example
	for _, e := range report.Examples {
		if e.Reason == "links_capped" {
			ex = e
		}
	}
	if ex.URL != site.URL+"/" || !strings.Contains(ex.Detail, "2000") || !strings.Contains(ex.Detail, fmt.Sprint(found)) {
		t.Errorf("report example %+v, want the page with 2000 kept of %d", ex, found)
	}
	evs, err := c.Frontier().History(site.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; !slices.ContainsFunc(evs, func(ev frontier.Event) bool {
		return ev.Kind == frontier.EventFetched && strings.Contains(ev.Detail, "links_capped")
	}) {
		t.Errorf("the page's history does not say its links were capped; last event %+v", last)
	}
	wantState(t, c, site.URL+"/", frontier.Fetched, "")
}
