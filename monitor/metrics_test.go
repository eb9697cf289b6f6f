package monitor_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/monitor"
	"github.com/crawlspace/crawlspace/provider"
)

// crawlWithMetrics runs a crawl cycle with metrics on.
func crawlWithMetrics(t *testing.T, c *provider.Crawler, sources []string) (*provider.Report, *monitor.Metrics) {
	t.Helper()
	m := monitor.NewMetrics("test", sources)
	c.SetObserver(m)
	report, err := c.Crawl(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return report, m
}

func series(name string, labels ...string) string {
	if len(labels) == 0 {
		return name
	}
	s := name + "{"
	for i := 0; i < len(labels); i += 2 {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf("%s=%q", labels[i], labels[i+1])
	}
	return s + "}"
}

func TestMetricsScrapedAfterACrawlEqualTheReport(t *testing.T) {
	site := mixedSite(t)
	cfg := fileConfig(t, site.URL)
	c := crawltest.New(t, cfg)
	report, m := crawlWithMetrics(t, c, []string{"site"})
	states := monitor.NewStates(c.Frontier(), cfg)
	m.WatchFrontier(states, c.Frontier())
	srv := monitor.NewServer(cfg, c, m, states, "test", nil)
	srv.CycleDone(report, nil, time.Now().Add(time.Hour))
	if _, err := states.Refresh(); err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	got := scrape(t, web.URL+"/metrics")

	want := map[string]float64{
		// /, /a, /b, /new, /quiet and /figures (its headers: the body is skipped)
		series("crawlspace_pages_fetched_total", "code", "2xx", "source", "site"): 6,
		series("crawlspace_pages_fetched_total", "code", "3xx", "source", "site"): 1,
		series("crawlspace_pages_fetched_total", "code", "4xx", "source", "site"): 1,
		series("crawlspace_pages_fetched_total", "code", "5xx", "source", "site"): 1,
		series("crawlspace_fetch_duration_seconds_count", "source", "site"):       9,
		series("crawlspace_cycles_total"):                                         1,
		series("crawlspace_build_info", "version", "test"):                        1,
	}
	tot := report.Sources["site"]
	if tot == nil {
		t.Fatalf("report has no source site: %+v", report.Sources)
	}
	want[series("crawlspace_documents_total", "outcome", "written", "source", "site")] = float64(tot.Written)
	want[series("crawlspace_documents_total", "outcome", "created", "source", "site")] = float64(tot.Created)
	want[series("crawlspace_documents_total", "outcome", "unchanged", "source", "site")] = float64(tot.Unchanged)
	want[series("crawlspace_documents_total", "outcome", "deleted", "source", "site")] = float64(tot.Deleted)
	want[series("crawlspace_documents_total", "outcome", "failed", "source", "site")] = float64(tot.IndexFailures)
	want[series("crawlspace_errors_total", "source", "site")] = float64(tot.Errors)
	for reason, n := range tot.Reasons {
		want[series("crawlspace_urls_by_reason_total", "reason", reason, "source", "site")] = float64(n)
	}
	counts, err := c.Frontier().Counts()
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []frontier.State{frontier.Waiting, frontier.Fetched, frontier.Error, frontier.Excluded} {
		want[series("crawlspace_frontier_urls", "source", "site", "state", st.String())] = float64(counts["site"].States[st])
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	// The report's own figures, so a change to the site shows here first.
	if tot.Fetched != 9 || tot.Written != 4 || tot.Errors != 2 {
		t.Errorf("report: fetched %d, written %d, errors %d; want 9, 4, 2 (reasons %v)", tot.Fetched, tot.Written, tot.Errors, tot.Reasons)
	}
	for _, reason := range []string{"http_404", "http_500", "redirect", "robots", "noindex", "mime_type"} {
		if got[series("crawlspace_urls_by_reason_total", "reason", reason, "source", "site")] < 1 {
			t.Errorf("no URL counted for reason %s; reasons scraped: %v", reason, reasonsOf(got))
		}
	}
	if got[series("crawlspace_fetch_bytes_total", "source", "site")] < 100 {
		t.Errorf("fetch bytes = %v", got[series("crawlspace_fetch_bytes_total", "source", "site")])
	}
	if got[series("crawlspace_frontier_urls", "source", "site", "state", "fetched")] < 5 {
		t.Errorf("frontier gauge of fetched URLs = %v", got[series("crawlspace_frontier_urls", "source", "site", "state", "fetched")])
	}
	if next := got[series("crawlspace_next_discovery_timestamp_seconds", "source", "site")]; next < float64(time.Now().Add(59*time.Minute).Unix()) {
		t.Errorf("next discovery = %v, want about an hour from now", next)
	}
}

func reasonsOf(got map[string]float64) []string {
	var out []string
	for k := range got {
		if len(k) > 31 && k[:31] == "crawlspace_urls_by_reason_total" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func TestMetricsOfACrawlIntoElasticsearchCountWritesAndBulkRequests(t *testing.T) {
	esURL := estest.URL(t)
	index := estest.Index(t)
	site := mixedSite(t)
	cfg := crawltest.Config(t, fmt.Sprintf(`
elasticsearch:
  addresses: [%q]
  index: %s
  replicas: 0
  bulk_flush_interval: 50ms
allow_private_networks: true
sources:
  - name: site
    start_urls: [%q]
`, esURL, index, site.URL+"/"))
	m := monitor.NewMetrics("test", []string{"site"})
	var reports []*provider.Report
	for range 2 {
		c := crawltest.New(t, cfg)
		c.SetObserver(m)
		r, err := c.Crawl(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		reports = append(reports, r)
	}
	web := httptest.NewServer(monitor.NewServer(cfg, nil, m, nil, "test", nil).Handler())
	defer web.Close()
	got := scrape(t, web.URL+"/metrics")
	var created, unchanged int
	for _, r := range reports {
		created += r.Total.Created
		unchanged += r.Total.Unchanged
	}
	if created != 4 || unchanged < 1 {
		t.Errorf("reports: created %d, unchanged %d; want 4 created, then the start page unchanged", created, unchanged)
	}
	if v := got[series("crawlspace_documents_total", "outcome", "created", "source", "site")]; v != float64(created) {
		t.Errorf("created = %v, want %d", v, created)
	}
	if v := got[series("crawlspace_documents_total", "outcome", "unchanged", "source", "site")]; v != float64(unchanged) {
		t.Errorf("unchanged = %v, want %d", v, unchanged)
	}
	if got["crawlspace_elasticsearch_bulk_duration_seconds_count"] < 1 {
		t.Errorf("no _bulk request timed: %v", got["crawlspace_elasticsearch_bulk_duration_seconds_count"])
	}
	if got["crawlspace_elasticsearch_bulk_failures_total"] != 0 {
		t.Errorf("bulk failures = %v", got["crawlspace_elasticsearch_bulk_failures_total"])
	}
}

// BenchmarkObserver is the cost of one fetch counted with and without
// metrics: the report's counting plus the observer's.
func BenchmarkObserver(b *testing.B) {
	m := monitor.NewMetrics("bench", []string{"site"})
	b.Run("fetched", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			m.Fetched("site", 200, 30000, 20*time.Millisecond)
		}
	})
	b.Run("reason", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			m.Reason("site", "robots", 1, false)
		}
	})
	b.Run("document", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			m.Document("site", provider.DocCreated)
		}
	})
}

// BenchmarkCrawlDemoSite crawls testdata/site into the file sink, from an
// empty state store each time, without and with the metrics observer.
func BenchmarkCrawlDemoSite(b *testing.B) {
	site := httptest.NewServer(http.FileServer(http.Dir("../testdata/site")))
	defer site.Close()
	for _, observe := range []bool{false, true} {
		b.Run(fmt.Sprintf("metrics=%v", observe), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				cfg := fileConfig(b, site.URL)
				c := crawltest.New(b, cfg)
				if observe {
					c.SetObserver(monitor.NewMetrics("bench", []string{"site"}))
				}
				b.StartTimer()
				r, err := c.Crawl(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if r.Total.Fetched != 13 {
					b.Fatalf("fetched %d pages, want 13", r.Total.Fetched)
				}
				b.StopTimer()
				c.Close()
				b.StartTimer()
			}
		})
	}
}

// TestElasticsearchRetriesAndBulkFailuresAreCountedPerSource puts a proxy
// in front of the real node that refuses the first _bulk request with 429,
// a fault the node cannot be made to produce on demand; everything else,
// the retried writes included, reaches the node.
func TestElasticsearchRetriesAndBulkFailuresAreCountedPerSource(t *testing.T) {
	esURL := estest.URL(t)
	index := estest.Index(t)
	target, err := url.Parse(esURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var refused atomic.Bool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/_bulk") && refused.CompareAndSwap(false, true) {
			http.Error(w, `{"error":"es_rejected_execution_exception"}`, http.StatusTooManyRequests)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	site := mixedSite(t)
	cfg := crawltest.Config(t, fmt.Sprintf(`
elasticsearch:
  addresses: [%q]
  index: %s
  replicas: 0
  bulk_flush_interval: 50ms
allow_private_networks: true
sources:
  - name: site
    start_urls: [%q]
`, front.URL, index, site.URL+"/"))
	c := crawltest.New(t, cfg)
	report, m := crawlWithMetrics(t, c, []string{"site"})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if report.Total.Created != 4 || report.Total.IndexFailures != 0 {
		t.Fatalf("report: created %d, index failures %d; want the 4 documents created after their retry", report.Total.Created, report.Total.IndexFailures)
	}
	web := httptest.NewServer(monitor.NewServer(cfg, nil, m, nil, "test", nil).Handler())
	defer web.Close()
	got := scrape(t, web.URL+"/metrics")
	if got["crawlspace_elasticsearch_bulk_failures_total"] != 1 {
		t.Errorf("bulk failures = %v, want the one refused request", got["crawlspace_elasticsearch_bulk_failures_total"])
	}
	if n := got[series("crawlspace_elasticsearch_retries_total", "source", "site")]; n < 1 || n > 4 {
		t.Errorf("retries of source site = %v, want the documents of the refused request (1 to 4)", n)
	}
	if got["crawlspace_elasticsearch_bulk_duration_seconds_count"] < 2 {
		t.Errorf("bulk requests timed = %v, want the refused one and its retry", got["crawlspace_elasticsearch_bulk_duration_seconds_count"])
	}
}
