package provider_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/provider"
	"github.com/crawlspace/crawlspace/rules"
)

// demoPages are the pages and documents of testdata/site reachable from
// its home page and read without Tika; orphan.html is not linked and
// /policies/travel.html is a 404.
var demoPages = []string{
	"/", "/about.html", "/contact.html",
	"/docs/", "/docs/install.html", "/docs/configure.html",
	"/docs/guide/crawling.html", "/docs/guide/rules.html",
	"/docs/ordering-client-manual.pdf", "/docs/branch-price-list.docx",
	"/news/", "/news/2026/search-launch.html", "/news/2026/annual-report.html", "/news/2026/osaka-warehouse.html",
	"/news/2026/delivery-figures.xlsx",
}

func serveDemoSite(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Join("..", "testdata", "site"))))
	t.Cleanup(srv.Close)
	return srv
}

// crawl runs one cycle the way `crawlspace crawl` does, closing the crawler after it.
func crawl(t *testing.T, cfg *config.Config) *provider.Report {
	t.Helper()
	c := onTestClock(t, crawltest.New(t, cfg))
	report, err := c.Crawl(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	return report
}

func expectedIDs(base string) []string {
	ids := make([]string, 0, len(demoPages))
	for _, p := range demoPages {
		ids = append(ids, docfields.ID(base+p))
	}
	slices.Sort(ids)
	return ids
}

func words(s string) string { return strings.Join(strings.Fields(s), " ") }

func TestCrawlIntoElasticsearchIndexesExactlyTheReachablePages(t *testing.T) {
	t.Parallel()
	esURL := estest.URL(t)
	index := estest.Index(t)
	site := serveDemoSite(t)
	cfg := crawltest.Config(t, fmt.Sprintf(`
elasticsearch:
  addresses: [%q]
  index: %s
  replicas: 0
allow_private_networks: true
sources:
  - name: demo
    start_urls: [%q]
`, esURL, index, site.URL+"/"))

	report := crawl(t, cfg)

	if report.Total.Created != len(demoPages) {
		t.Errorf("report counts %d created, want %d", report.Total.Created, len(demoPages))
	}
	if got := report.Total.Reasons["http_404"]; got != 1 {
		t.Errorf("report counts %d http_404, want 1 (the moved travel policy): %+v", got, report.Total.Reasons)
	}

	docs := searchAll(t, esURL, index)
	ids := make([]string, 0, len(docs))
	for id := range docs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if want := expectedIDs(site.URL); !slices.Equal(ids, want) {
		t.Fatalf("index holds %d ids, want %d:\n got %v\nwant %v", len(ids), len(want), ids, want)
	}

	for _, tc := range []struct {
		path, title string
		body        string // whitespace-normalised, exact
	}{
		{"/contact.html", "Contact", "Contact Service desk: extension 4242 Facilities: extension 1010"},
		{"/news/2026/annual-report.html", "Annual report 2026", "Annual report 2026 Sales grew by eleven percent. The Osaka warehouse doubled its capacity. The delivery figures by quarter are in a spreadsheet."},
		{"/docs/install.html", "Installing the ordering client", "Installing the ordering client Download the installer from the software centre and run it. The ordering client needs a network connection to the warehouse service. Next: configure the client."},
	} {
		doc := docs[docfields.ID(site.URL+tc.path)]
		if doc == nil {
			t.Errorf("%s: not indexed", tc.path)
			continue
		}
		if doc.URL != site.URL+tc.path {
			t.Errorf("%s: doc_url %q", tc.path, doc.URL)
		}
		if doc.Title != tc.title {
			t.Errorf("%s: doc_title %q, want %q", tc.path, doc.Title, tc.title)
		}
		if got := words(doc.Body); got != tc.body {
			t.Errorf("%s: doc_body\n got %q\nwant %q", tc.path, got, tc.body)
		}
	}
}

// searchAll reads every document of the alias through the search API.
func searchAll(t *testing.T, esURL, index string) map[string]*docfields.Document {
	return estest.Documents[docfields.Document](t, esURL, index)
}

// demoIntoFile configures a crawl of the demo site, served on loopback,
// into a file sink at out; base is the site's URL.
func demoIntoFile(t *testing.T) (cfg *config.Config, out, base string) {
	site := serveDemoSite(t)
	out = filepath.Join(t.TempDir(), "docs.ndjson")
	return crawltest.Config(t, fmt.Sprintf(`
output: {file: %q}
allow_private_networks: true
sources:
  - name: demo
    start_urls: [%q]
`, out, site.URL+"/")), out, site.URL
}

func TestCrawlIntoFileSinkWritesOneBulkActionPerReachablePage(t *testing.T) {
	t.Parallel()
	cfg, out, base := demoIntoFile(t)

	report := crawl(t, cfg)
	if report.Total.Written != len(demoPages) {
		t.Errorf("report counts %d written, want %d", report.Total.Written, len(demoPages))
	}

	var ids []string
	for _, a := range readBulk(t, out) {
		if a.op != "index" {
			t.Fatalf("want only index actions, got %s %s", a.op, a.id)
		}
		if docfields.ID(a.doc.URL) != a.id {
			t.Errorf("_id %s does not derive from doc_url %s", a.id, a.doc.URL)
		}
		ids = append(ids, a.id)
	}
	slices.Sort(ids)
	if want := expectedIDs(base); !slices.Equal(ids, want) {
		t.Fatalf("file holds %d ids, want %d", len(ids), len(want))
	}
}

func TestLoopbackStartURLIsAConfigErrorUnlessPrivateNetworksAreAllowed(t *testing.T) {
	t.Parallel()
	cfg := crawltest.Config(t, `
sources:
  - name: demo
    start_urls: ["http://127.0.0.1:9/"]
`)
	_, err := rules.Compile(cfg)
	if err == nil || !strings.Contains(err.Error(), "forbidden_address") || !strings.Contains(err.Error(), ":5:18:") {
		t.Fatalf("want a positioned forbidden_address config error, got %v", err)
	}
}

func TestCrawlRefusesANameResolvingToLoopbackUnlessConfigAllowsPrivateNetworks(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "<title>secret</title>")
	}))
	defer srv.Close()
	// The name is only known to be loopback once resolved, so the dialer must refuse it.
	start := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/"
	cfg := crawltest.Config(t, fmt.Sprintf(`
output: {file: %q}
sources:
  - name: demo
    start_urls: [%q]
    robots: {obey: false}
`, filepath.Join(t.TempDir(), "out.ndjson"), start))

	report := crawl(t, cfg)
	if hits.Load() != 0 {
		t.Errorf("the loopback server got %d requests", hits.Load())
	}
	if report.Total.Reasons["forbidden_address"] != 1 {
		t.Errorf("want the start URL refused as forbidden_address, got %+v", report.Total.Reasons)
	}
}

func TestCrawlKeepsRequestsPerHostWithinMaxParallel(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	inflight, peak := 0, 0
	const pages = 40
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inflight++
		peak = max(peak, inflight)
		mu.Unlock()
		defer func() { mu.Lock(); inflight--; mu.Unlock() }()
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/" {
			for i := range pages {
				fmt.Fprintf(w, `<a href="/p%d">p%d</a>`, i, i)
			}
			return
		}
		// Hold the request long enough for others to pile up if the limit leaked.
		for range 3 {
			fmt.Fprintf(w, "<p>%s</p>", strings.Repeat("x", 64))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-tick():
			}
		}
	}))
	defer srv.Close()
	cfg := crawltest.Config(t, fmt.Sprintf(`
output: {file: %q}
allow_private_networks: true
fetch: {concurrency: 16}
sources:
  - name: demo
    start_urls: [%q]
    politeness: {max_parallel_per_host: 2}
`, filepath.Join(t.TempDir(), "out.ndjson"), srv.URL+"/"))

	report := crawl(t, cfg)
	if report.Total.Fetched != pages+1 {
		t.Errorf("fetched %d, want %d", report.Total.Fetched, pages+1)
	}
	if peak > 2 {
		t.Errorf("the host saw %d requests at once, the limit is 2", peak)
	}
	if peak < 2 {
		t.Errorf("the host never saw 2 requests at once (peak %d): the crawl is not parallel", peak)
	}
}

// tick paces the slow test handler; it is a pause, not a limit on the test.
func tick() <-chan time.Time { return time.After(5 * time.Millisecond) }
