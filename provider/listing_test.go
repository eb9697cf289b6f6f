package provider_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/provider"
)

// everyRequest is when each request to the site started, in order.
func (s *testSite) everyRequest() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []time.Time
	for _, at := range s.times {
		all = append(all, at...)
	}
	slices.SortFunc(all, func(x, y time.Time) int { return x.Compare(y) })
	return all
}

// A sitemap index's child, a robots.txt Sitemap line, a sitemap's redirect
// and a feed on a host the crawl space refuses are judged like pages and
// never requested, robots.txt included; each is counted in the report
// under its reason, and the files of the allowed host are read.
func TestSitemapsAndFeedsOnHostsTheCrawlSpaceRefusesAreNeverRequested(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, rule, reason string }{
		{"exclude", `exclude: ["127.0.0.2"]`, "excluded"},
		{"forbid domain", `rules: ["forbid domain 127.0.0.2"]`, "forbidden_domain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			site, far := newSite(t), newSiteAt(t, "127.0.0.2")
			lists := urlset(site.URL + "/from-far.html")
			for _, p := range []string{"/robots.txt", "/named.xml", "/child.xml", "/redirected.xml", "/feed.xml"} {
				far.text(p, "application/xml", lists)
			}
			site.text("/robots.txt", "text/plain", "User-agent: *\nAllow: /\nSitemap: "+far.URL+"/named.xml\n")
			site.text("/index.xml", "application/xml", sitemapIndex(far.URL+"/child.xml", site.URL+"/child.xml"))
			site.text("/child.xml", "application/xml", urlset(site.URL+"/listed.html"))
			site.redirect("/moved.xml", far.URL+"/redirected.xml")
			site.html("/", "home", "")
			site.html("/listed.html", "listed", "")
			site.html("/from-far.html", "from far", "")
			cfg, _ := testConfig(t, "", fmt.Sprintf("stay_on_start_hosts: false\n%s\nsitemaps: [%q, %q]\nfeeds: [%q]",
				tc.rule, site.URL+"/index.xml", site.URL+"/moved.xml", far.URL+"/feed.xml"), site.URL+"/")

			c, report := crawlKeep(t, cfg)

			if got := far.requested(); len(got) != 0 {
				t.Errorf("the refused host got requests for %v", got)
			}
			wantState(t, c, site.URL+"/listed.html", frontier.Fetched, "")
			unknown(t, c, site.URL+"/from-far.html")
			if n := site.hit("/moved.xml"); n != 1 {
				t.Errorf("/moved.xml requested %d times, want 1", n)
			}
			if got := report.Total.Reasons[tc.reason]; got != 4 {
				t.Errorf("report counts %d URLs under %s, want the 4 files: %v", got, tc.reason, report.Total.Reasons)
			}
			var examples []string
			for _, e := range report.Examples {
				if e.Reason == tc.reason {
					examples = append(examples, strings.TrimPrefix(e.URL, far.URL))
				}
			}
			slices.Sort(examples)
			if want := []string{"/child.xml", "/feed.xml", "/named.xml", "/redirected.xml"}; !slices.Equal(examples, want) {
				t.Errorf("examples of %s: %v, want the refused files %v", tc.reason, examples, want)
			}
		})
	}
}

// fanOutFiles is how many child sitemap indexes each file of the fan-out
// lists, fanOutPad what lengthens each child's URL (the memory a child
// held costs grows with it, as a real site's longer URLs would), and
// fanOutMaxFiles the test's sitemap_limits.max_files: small, as the files
// read are what the test spends its time on.
const (
	fanOutFiles    = 5000
	fanOutMaxFiles = 10
)

var fanOutPad = strings.Repeat("p", 150)

// A sitemap index whose every file lists thousands of fresh child indexes
// is read up to sitemap_limits.max_files in the cycle, says so in the
// report, holds no more than that in memory, and keeps no start URL
// waiting: the start page is fetched while the sitemaps are read. It
// measures the process's memory, so it runs alone.
func TestASitemapIndexFanningOutIsReadToMaxFilesInBoundedMemoryWhileTheStartPageIsFetched(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	site := newSite(t)
	var (
		files   atomic.Int64
		next    atomic.Int64
		mu      sync.Mutex
		lastFan time.Time
		grew    int64 = -1
	)
	base := liveHeap()
	site.handle("/fan/", func(w http.ResponseWriter, r *http.Request) {
		n := files.Add(1)
		if n == fanOutMaxFiles {
			// The last file the default limit lets the crawler read: what
			// the earlier ones left queued is all in memory now.
			h := int64(liveHeap()) - int64(base)
			mu.Lock()
			grew = h
			mu.Unlock()
		}
		if n > 3*fanOutMaxFiles {
			cancel() // unbounded: stop the crawl rather than the machine
		}
		mu.Lock()
		lastFan = time.Now()
		mu.Unlock()
		first := next.Add(fanOutFiles) - fanOutFiles
		var b strings.Builder
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		for k := range int64(fanOutFiles) {
			fmt.Fprintf(&b, "<sitemap><loc>%s/fan/%d.xml?%s</loc></sitemap>", site.URL, first+k+1, fanOutPad)
		}
		b.WriteString("</sitemapindex>")
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, b.String())
	})
	site.html("/", "home", "")
	cfg, _ := testConfig(t, "", fmt.Sprintf("sitemaps: [%q]\nsitemap_limits: {max_files: %d}", site.URL+"/fan/0.xml", fanOutMaxFiles), site.URL+"/")
	c := crawltest.NewLogged(t, cfg, slog.New(slog.DiscardHandler))

	report, err := c.Crawl(ctx)

	if ctx.Err() != nil {
		mu.Lock()
		heap := grew
		mu.Unlock()
		t.Fatalf("the crawl was stopped after %d sitemap files, past max_files %d: the fan-out is read without bound (start page requested %d times; the live heap grew by %d KiB by the %dth file)",
			files.Load(), fanOutMaxFiles, site.hit("/"), heap>>10, fanOutMaxFiles)
	}
	if err != nil {
		t.Fatal(err)
	}
	if n := files.Load(); n != fanOutMaxFiles {
		t.Errorf("%d sitemap files requested, want max_files (%d)", n, fanOutMaxFiles)
	}
	if got := report.Total.Reasons["sitemap_max_files"]; got == 0 {
		t.Errorf("the report counts no file under sitemap_max_files: %v", report.Total.Reasons)
	}
	home := site.at("/")
	mu.Lock()
	last, heap := lastFan, grew
	mu.Unlock()
	if len(home) != 1 {
		t.Fatalf("the start page was requested %d times, want 1", len(home))
	}
	if !home[0].Before(last) {
		t.Errorf("the start page was requested at %v, after the last sitemap file (%v): the sitemaps kept it waiting",
			home[0].Format(time.StampMicro), last.Format(time.StampMicro))
	}
	// What the 9 files read before list is 45,000 child URLs of some 200
	// bytes, 12 MB if kept; a bounded queue holds at most max_files of them.
	if heap > 6<<20 {
		t.Errorf("the live heap grew by %d KiB by the %dth sitemap file: the children listed are held without bound", heap>>10, fanOutMaxFiles)
	}
	t.Logf("live heap grew by %d KiB by the %dth sitemap file", heap>>10, fanOutMaxFiles)
}

// Sitemap requests are loads from the host like pages: robots.txt, the
// index, its children and the pages they list are spaced by the source's
// delay with one slot per host, and by the host's Crawl-delay, which
// allows one request at a time, even with two slots.
func TestSitemapRequestsKeepTheHostsDelayAndCrawlDelayLikePages(t *testing.T) {
	t.Parallel()
	const delay = 100 * time.Millisecond
	for _, tc := range []struct{ name, robots, politeness string }{
		{"delay", "User-agent: *\nAllow: /\n", "politeness: {delay: 100ms, max_parallel_per_host: 1}"},
		{"Crawl-delay", "User-agent: *\nCrawl-delay: 0.1\n", "politeness: {max_parallel_per_host: 2}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			site := newSite(t)
			site.text("/robots.txt", "text/plain", tc.robots)
			var children []string
			for i := range 4 {
				child := fmt.Sprintf("/maps/%d.xml", i)
				children = append(children, site.URL+child)
				site.text(child, "application/xml", urlset(fmt.Sprintf("%s/p%d.html", site.URL, i)))
				site.html(fmt.Sprintf("/p%d.html", i), "page", "")
			}
			site.text("/index.xml", "application/xml", sitemapIndex(children...))
			site.html("/", "home", "")
			cfg, _ := testConfig(t, "fetch: {concurrency: 4}",
				fmt.Sprintf("%s\nsitemaps: [%q]", tc.politeness, site.URL+"/index.xml"), site.URL+"/")

			crawlKeep(t, cfg)

			for _, p := range []string{"/robots.txt", "/index.xml", "/maps/3.xml", "/p3.html", "/"} {
				if n := site.hit(p); n != 1 {
					t.Errorf("%s requested %d times, want 1", p, n)
				}
			}
			starts := site.everyRequest()
			for i := 1; i < len(starts); i++ {
				if gap := starts[i].Sub(starts[i-1]); gap < delay {
					t.Errorf("request %d of %d came %v after the one before; the host's delay is %v", i, len(starts), gap, delay)
				}
			}
		})
	}
}

// crawlDelaySite is a site of three pages whose robots.txt asks for
// Crawl-delay seconds.
func crawlDelaySite(t *testing.T, seconds string) *testSite {
	site := newSite(t)
	site.text("/robots.txt", "text/plain", "User-agent: *\nCrawl-delay: "+seconds+"\n")
	site.html("/", "home", links("/a.html", "/b.html"))
	site.html("/a.html", "a", "")
	site.html("/b.html", "b", "")
	return site
}

// testConfigOnly is testConfig's config, for a test that reads no output.
func testConfigOnly(t *testing.T, src, start string) *config.Config {
	cfg, _ := testConfig(t, "", src, start)
	return cfg
}

// A host's robots.txt Crawl-delay is said once per host and cycle: an
// INFO line naming the host and the delay its requests keep, an entry of
// the report, and one in the state store, which status reads.
func TestACrawlDelayIsNamedOncePerHostAndCycleInTheLogTheReportAndTheStore(t *testing.T) {
	t.Parallel()
	site := crawlDelaySite(t, "0.1")
	var log syncBuffer
	c := crawltest.NewLogged(t, testConfigOnly(t, "", site.URL+"/"), slog.New(slog.NewTextHandler(&log, nil)))
	want := provider.CrawlDelay{Host: site.URL, Source: "s", Asked: 100 * time.Millisecond, Delay: 100 * time.Millisecond}

	for cycle := 1; cycle <= 2; cycle++ {
		report, err := c.Crawl(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		lines := log.lines("robots.txt Crawl-delay honoured")
		if len(lines) != cycle {
			t.Fatalf("cycle %d: %d log lines name the Crawl-delay, want one a cycle:\n%s", cycle, len(lines), log.String())
		}
		l := lines[cycle-1]
		if !strings.Contains(l, "level=INFO") || !strings.Contains(l, "host="+site.URL) || !strings.Contains(l, "delay=100ms") {
			t.Errorf("cycle %d: %s\nwant an INFO line naming host %s and delay=100ms", cycle, l, site.URL)
		}
		if !slices.Equal(report.CrawlDelays, []provider.CrawlDelay{want}) {
			t.Errorf("cycle %d: the report's Crawl-delays are %+v, want %+v", cycle, report.CrawlDelays, want)
		}
		stored, err := provider.CrawlDelays(c.Store(), "s")
		if err != nil || !slices.Equal(stored, []provider.CrawlDelay{want}) {
			t.Errorf("cycle %d: the store's Crawl-delays are %+v, %v; want %+v", cycle, stored, err, want)
		}
	}
}

// A Crawl-delay longer than politeness.max_crawl_delay (a day, which would
// hold every page of the host a day) is cut to it: the crawl ends, its
// requests are spaced by the cap, and the host and both delays are named
// in a WARN line, the report, its summary and the state store.
func TestACrawlDelayPastMaxCrawlDelayIsCutToItAndSaidInTheLogTheReportAndTheStore(t *testing.T) {
	t.Parallel()
	const capped = 100 * time.Millisecond
	site := crawlDelaySite(t, "86400")
	var log syncBuffer
	c := crawltest.NewLogged(t, testConfigOnly(t, "politeness: {max_crawl_delay: 100ms}", site.URL+"/"), slog.New(slog.NewTextHandler(&log, nil)))

	report, err := c.Crawl(context.Background())

	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/", "/a.html", "/b.html"} {
		wantState(t, c, site.URL+p, frontier.Fetched, "")
	}
	starts := site.everyRequest()
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < capped {
			t.Errorf("request %d came %v after the one before; the capped delay is %v", i, gap, capped)
		}
	}
	lines := log.lines("robots.txt Crawl-delay capped")
	if len(lines) != 1 {
		t.Fatalf("%d log lines say the Crawl-delay was capped, want 1:\n%s", len(lines), log.String())
	}
	for _, part := range []string{"level=WARN", "host=" + site.URL, "crawl_delay=24h0m0s", "delay=100ms", "setting=politeness.max_crawl_delay"} {
		if !strings.Contains(lines[0], part) {
			t.Errorf("the log line %s\nlacks %s", lines[0], part)
		}
	}
	want := provider.CrawlDelay{Host: site.URL, Source: "s", Asked: 24 * time.Hour, Delay: capped, Capped: true}
	if !slices.Equal(report.CrawlDelays, []provider.CrawlDelay{want}) {
		t.Errorf("the report's Crawl-delays are %+v, want %+v", report.CrawlDelays, want)
	}
	if stored, err := provider.CrawlDelays(c.Store(), "s"); err != nil || !slices.Equal(stored, []provider.CrawlDelay{want}) {
		t.Errorf("the store's Crawl-delays are %+v, %v; want %+v", stored, err, want)
	}
	var summary strings.Builder
	report.Summary(&summary)
	if line := "crawl-delay: " + site.URL + " keeps 100ms (robots.txt Crawl-delay 24h0m0s, cut to politeness.max_crawl_delay)"; !strings.Contains(summary.String(), line) {
		t.Errorf("the summary lacks %q:\n%s", line, summary.String())
	}
}
