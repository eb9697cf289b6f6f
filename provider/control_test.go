package provider_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/provider"
)

// controlSite is a site of three linked pages for the requests' tests.
func controlSite(t *testing.T) *testSite {
	site := newSite(t)
	site.html("/", "Home", links("/a.html", "/b.html"))
	site.html("/a.html", "A", "first")
	site.html("/b.html", "B", "second")
	site.text("/robots.txt", "text/plain", "User-agent: *\nDisallow: /private/\n")
	return site
}

// A paused source fetches nothing, robots.txt included, and its cycle
// warns; the pause holds when the crawler is opened again; another source
// is crawled meanwhile; once resumed, the source is crawled.
func TestAPausedSourceFetchesNothingAcrossARestartUntilResumed(t *testing.T) {
	t.Parallel()
	site := controlSite(t)
	other := newSite(t)
	other.html("/", "Other", "other")
	cfg := crawltest.Config(t, fmt.Sprintf(`output: {file: %q}
allow_private_networks: true
sources:
  - {name: s, start_urls: [%q]}
  - {name: t, start_urls: [%q]}
`, t.TempDir()+"/docs.ndjson", site.URL+"/", other.URL+"/"))

	c := crawltest.New(t, cfg)
	p, err := c.PauseSource("s", "ops")
	if err != nil || p.By != "ops" || p.Since.IsZero() {
		t.Fatalf("PauseSource = %+v, %v", p, err)
	}
	if _, err := c.PauseSource("nope", "ops"); !errors.Is(err, provider.ErrNoSource) {
		t.Errorf("pausing an unknown source: %v, want ErrNoSource", err)
	}
	r := again(t, c)
	if got := site.requested(); len(got) != 0 {
		t.Fatalf("a paused source requested %v", got)
	}
	if other.hit("/") != 1 {
		t.Errorf("the other source was not crawled while s was paused")
	}
	if !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.HasPrefix(w, "source s is paused since ") }) {
		t.Errorf("the report does not say s is paused: %q", r.Warnings)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c = crawltest.New(t, cfg)
	if _, ok := c.Paused()["s"]; ok {
		t.Error("Paused knows s before the crawler read the store")
	}
	again(t, c)
	if got := site.requested(); len(got) != 0 {
		t.Fatalf("after a restart, the paused source requested %v", got)
	}
	if p := c.Paused()["s"]; p.By != "ops" {
		t.Errorf("after a restart, Paused()[s] = %+v", p)
	}
	if was, err := c.ResumeSource("s"); err != nil || !was {
		t.Fatalf("ResumeSource = %v, %v", was, err)
	}
	again(t, c)
	if got := site.requested(); !slices.Equal(got, []string{"/", "/a.html", "/b.html", "/robots.txt"}) {
		t.Errorf("once resumed, s requested %v", got)
	}
}

// A source paused while its cycle runs fetches nothing more in it: the
// cycle ends with its URLs queued, and once it is resumed the next cycle
// fetches them, its discovery not due.
func TestAPauseTakesEffectInTheRunningCycleAndTheResumeInTheNext(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	var pages []string
	for i := range 20 {
		pages = append(pages, fmt.Sprintf("/p%d.html", i))
	}
	site.html("/", "Home", links(pages...))
	for _, p := range pages {
		site.html(p, p, p)
	}
	cfg, _ := testConfig(t, "fetch: {concurrency: 1}", "politeness: {max_parallel_per_host: 1}", site.URL+"/")
	c := crawltest.New(t, cfg)
	site.status("/robots.txt", http.StatusNotFound)
	site.handle("/", func(w http.ResponseWriter, r *http.Request) {
		if _, err := c.PauseSource("s", "test"); err != nil {
			t.Error(err)
		}
		htmlPage("Home", links(pages...))(w, r)
	})
	again(t, c)
	for _, p := range pages {
		if site.hit(p) != 0 {
			t.Fatalf("%s was fetched after its source was paused", p)
		}
	}
	wantState(t, c, site.URL+"/p0.html", frontier.Waiting, "")
	if _, err := c.ResumeSource("s"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.CrawlDue(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if site.hit(p) != 1 {
			t.Errorf("%s fetched %d times once resumed, want once", p, site.hit(p))
		}
	}
	if site.hit("/") != 1 {
		t.Errorf("the start URL was fetched %d times: the resumed source's discovery was not due", site.hit("/"))
	}
}

// A recrawl request queues a changed page, which the next cycle fetches and
// writes though its discovery is not due; a URL outside the crawl space is
// refused with the reason and rule explain gives; a URL not known yet is
// queued; a page of a paused source is queued and said to wait.
func TestARecrawlRequestRefetchesThePageAndRefusesOneOutsideTheCrawlSpace(t *testing.T) {
	t.Parallel()
	site := controlSite(t)
	site.html("/new.html", "New", "new")
	cfg, out := testConfig(t, "", "exclude: [/b.html]", site.URL+"/")
	c := crawltest.New(t, cfg)
	again(t, c)
	site.html("/a.html", "A", "first, changed")
	got, err := c.Recrawl([]string{site.URL + "/a.html", site.URL + "/b.html", "http://elsewhere.test/x", "::", site.URL + "/new.html"})
	if err != nil {
		t.Fatal(err)
	}
	want := []provider.URLDecision{
		{URL: site.URL + "/a.html", Decision: "queued", Source: "s", Fetch: site.URL + "/a.html"},
		{URL: site.URL + "/b.html", Decision: "refused", Source: "s", Reason: "excluded", Rule: got[1].Rule},
		{URL: "http://elsewhere.test/x", Decision: "refused", Source: "s", Reason: "offsite", Rule: got[2].Rule},
		{URL: "::", Decision: "refused", Reason: "invalid_url", Detail: got[3].Detail},
		{URL: site.URL + "/new.html", Decision: "queued", Source: "s", Fetch: site.URL + "/new.html"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("decisions:\n got %+v\nwant %+v", got, want)
	}
	if !strings.Contains(got[1].Rule, ".yaml:") || !strings.Contains(got[1].Rule, "exclude") {
		t.Errorf("the refusal's rule %q does not name the config line", got[1].Rule)
	}
	wantState(t, c, site.URL+"/a.html", frontier.Waiting, "")
	if _, _, err := c.CrawlDue(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if site.hit("/a.html") != 2 || site.hit("/new.html") != 1 || site.hit("/") != 1 {
		t.Errorf("requests: /a.html %d, /new.html %d, / %d; want 2, 1, 1", site.hit("/a.html"), site.hit("/new.html"), site.hit("/"))
	}
	var body string
	for _, a := range readBulk(t, out) {
		if a.op == "index" && a.doc.URL == site.URL+"/a.html" {
			body = a.doc.Body
		}
	}
	if body != "first, changed" {
		t.Errorf("the recrawled page's document holds %q", body)
	}

	if _, err := c.PauseSource("s", "test"); err != nil {
		t.Fatal(err)
	}
	got, err = c.Recrawl([]string{site.URL + "/a.html"})
	if err != nil || got[0].Decision != "queued" || !strings.HasPrefix(got[0].Detail, "source s is paused since ") {
		t.Errorf("a paused source's recrawl: %+v, %v", got, err)
	}
}

// A delete request removes the document and keeps the URL out of the crawl
// though the site still links it, until a recrawl request names it; a
// configuration change does not bring it back either.
func TestADeleteRequestRemovesTheDocumentAndKeepsTheURLOutUntilARecrawl(t *testing.T) {
	t.Parallel()
	site := controlSite(t)
	cfg, out := testConfig(t, "", "", site.URL+"/")
	c := crawltest.New(t, cfg)
	again(t, c)
	got, err := c.Remove(context.Background(), []string{site.URL + "/a.html", site.URL + "/gone.html", site.URL + "/private/x"})
	if err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	want := []provider.URLDecision{
		{URL: site.URL + "/a.html", Decision: "deleted", Source: "s", Fetch: site.URL + "/a.html", Document: &yes},
		{URL: site.URL + "/gone.html", Decision: "deleted", Source: "s", Fetch: site.URL + "/gone.html", Document: &no},
	}
	for i, w := range want {
		g := got[i]
		if g.URL != w.URL || g.Decision != w.Decision || g.Source != w.Source || g.Fetch != w.Fetch || g.Document == nil || *g.Document != *w.Document || g.Detail != "" {
			t.Errorf("decision %d: %+v, want %+v", i, g, w)
		}
	}
	// robots.txt is the fetch layer's, not the crawl space's: a delete of
	// a URL it disallows is decided as a link to it would be.
	if got[2].Decision != "deleted" {
		t.Errorf("a URL robots.txt disallows: %+v", got[2])
	}
	if ids := deletedIDs(t, out); !slices.Contains(ids, docfields.ID(site.URL+"/a.html")) {
		t.Errorf("no delete of /a.html's document reached the sink: %v", ids)
	}
	r := wantState(t, c, site.URL+"/a.html", frontier.Excluded, provider.ReasonRemoved)
	if r.Indexed || r.Pending != "" {
		t.Errorf("after the delete landed: indexed %v, pending %q", r.Indexed, r.Pending)
	}
	wantState(t, c, site.URL+"/gone.html", frontier.Excluded, provider.ReasonRemoved)
	again(t, c)
	if site.hit("/a.html") != 1 {
		t.Errorf("the deleted page was fetched again (%d requests) though still linked", site.hit("/a.html"))
	}
	if err := c.Reapply(); err != nil {
		t.Fatal(err)
	}
	wantState(t, c, site.URL+"/a.html", frontier.Excluded, provider.ReasonRemoved)

	if got, err := c.Recrawl([]string{site.URL + "/a.html"}); err != nil || got[0].Decision != "queued" {
		t.Fatalf("recrawl of the deleted page: %+v, %v", got, err)
	}
	if _, _, err := c.CrawlDue(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if site.hit("/a.html") != 2 {
		t.Errorf("the page a recrawl request brought back was fetched %d times, want 2", site.hit("/a.html"))
	}
	wantState(t, c, site.URL+"/a.html", frontier.Fetched, "")
}

// A discovery request makes a source's start URLs due at once.
func TestDiscoverNowMakesTheSourcesDiscoveryDue(t *testing.T) {
	t.Parallel()
	site := controlSite(t)
	cfg, _ := testConfig(t, "", "discovery_interval: 1h", site.URL+"/")
	c := crawltest.New(t, cfg)
	again(t, c)
	if _, _, err := c.CrawlDue(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if site.hit("/") != 1 {
		t.Fatalf("the start URL was fetched %d times before its discovery was due", site.hit("/"))
	}
	if err := c.DiscoverNow("nope"); !errors.Is(err, provider.ErrNoSource) {
		t.Errorf("DiscoverNow of an unknown source: %v", err)
	}
	if err := c.DiscoverNow("s"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.CrawlDue(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if site.hit("/") != 2 {
		t.Errorf("the start URL was fetched %d times after DiscoverNow, want 2", site.hit("/"))
	}
}
