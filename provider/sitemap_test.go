package provider_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
)

// urlset renders a sitemap of locs, each "URL" or "URL|lastmod".
func urlset(locs ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for _, l := range locs {
		u, lastmod, _ := strings.Cut(l, "|")
		b.WriteString("<url><loc>" + u + "</loc>")
		if lastmod != "" {
			b.WriteString("<lastmod>" + lastmod + "</lastmod>")
		}
		b.WriteString("</url>")
	}
	b.WriteString("</urlset>")
	return b.String()
}

func sitemapIndex(locs ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for _, l := range locs {
		b.WriteString("<sitemap><loc>" + l + "</loc></sitemap>")
	}
	b.WriteString("</sitemapindex>")
	return b.String()
}

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func day(s string) time.Time {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return d
}

func TestSitemapNamedInRobotsTxtQueuesPagesNoLinkReachesAndKeepsLastmod(t *testing.T) {
	t.Parallel()
	for _, use := range []bool{true, false} {
		t.Run(fmt.Sprintf("use_sitemaps=%v", use), func(t *testing.T) {
			site := newSite(t)
			site.text("/robots.txt", "text/plain", fmt.Sprintf("User-agent: *\nAllow: /\nSitemap: %s/maps/sitemap.xml\n", site.URL))
			site.text("/maps/sitemap.xml", "application/xml", urlset(site.URL+"/orphan.html|2026-01-02", site.URL+"/"))
			site.html("/", "home", "")
			site.html("/orphan.html", "orphan", "")
			cfg, out := testConfig(t, "", fmt.Sprintf("use_sitemaps: %v", use), site.URL+"/")

			c, _ := crawlKeep(t, cfg)

			if !use {
				if n := site.hit("/maps/sitemap.xml"); n != 0 {
					t.Errorf("sitemap requested %d times with use_sitemaps: false", n)
				}
				unknown(t, c, site.URL+"/orphan.html")
				return
			}
			r := wantState(t, c, site.URL+"/orphan.html", frontier.Fetched, "")
			if !r.Lastmod.Equal(day("2026-01-02")) || !r.Indexed {
				t.Errorf("orphan: lastmod %v, indexed %v", r.Lastmod, r.Indexed)
			}
			if got := indexedURLs(t, out); !slices.Equal(got, sortedURLs(site.URL, "/", "/orphan.html")) {
				t.Errorf("indexed %v", got)
			}
			if n := site.hit("/maps/sitemap.xml"); n != 1 {
				t.Errorf("sitemap requested %d times, want 1", n)
			}
		})
	}
}

func TestSitemapIndexWithGzipAndTextChildrenQueuesEveryChildsURLs(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.text("/index.xml", "application/xml", sitemapIndex(site.URL+"/pages.xml.gz", site.URL+"/more.xml", site.URL+"/list.txt"))
	gz := gzipped(t, urlset(site.URL+"/g1.html|2025-12-24", site.URL+"/g2.html|2026-02-01T10:00:00Z"))
	site.handle("/pages.xml.gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-gzip")
		w.Write(gz)
	})
	site.text("/more.xml", "text/xml", urlset(site.URL+"/m1.html"))
	site.text("/list.txt", "text/plain", site.URL+"/t1.html\n"+site.URL+"/t2.html\n")
	site.html("/", "home", "")
	for _, p := range []string{"/g1.html", "/g2.html", "/m1.html", "/t1.html", "/t2.html"} {
		site.html(p, p, "")
	}
	cfg, out := testConfig(t, "", fmt.Sprintf("sitemaps: [%q]", site.URL+"/index.xml"), site.URL+"/")

	c, _ := crawlKeep(t, cfg)

	want := sortedURLs(site.URL, "/", "/g1.html", "/g2.html", "/m1.html", "/t1.html", "/t2.html")
	if got := indexedURLs(t, out); !slices.Equal(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
	if r := record(t, c, site.URL+"/g1.html"); !r.Lastmod.Equal(day("2025-12-24")) {
		t.Errorf("g1 lastmod %v", r.Lastmod)
	}
	if r := record(t, c, site.URL+"/g2.html"); !r.Lastmod.Equal(time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("g2 lastmod %v", r.Lastmod)
	}
	for _, f := range []string{"/index.xml", "/pages.xml.gz", "/more.xml", "/list.txt"} {
		if n := site.hit(f); n != 1 {
			t.Errorf("%s requested %d times, want 1", f, n)
		}
	}
}

func TestDiscoveryFalseCrawlsOnlyStartURLsSitemapsAndFeeds(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.html("/", "home", links("/linked.html"))
	site.text("/sitemap.xml", "application/xml", urlset(site.URL+"/from-sitemap.html"))
	site.text("/rss.xml", "application/rss+xml", fmt.Sprintf(`<?xml version="1.0"?>
<rss version="2.0"><channel><title>news</title><link>%[1]s/</link>
<item><title>one</title><link>%[1]s/from-rss.html</link><pubDate>Mon, 05 Jan 2026 10:00:00 GMT</pubDate></item>
</channel></rss>`, site.URL))
	site.text("/atom.xml", "application/atom+xml", fmt.Sprintf(`<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>news</title><id>urn:x</id><updated>2026-01-05T10:00:00Z</updated>
<entry><title>two</title><id>urn:x:2</id><link rel="alternate" href="%[1]s/from-atom.html"/><updated>2026-01-05T10:00:00Z</updated></entry>
</feed>`, site.URL))
	for _, p := range []string{"/linked.html", "/from-sitemap.html", "/from-rss.html", "/from-atom.html"} {
		site.html(p, p, links(p+"-child.html"))
	}
	cfg, out := testConfig(t, "", fmt.Sprintf(`
discovery: false
sitemaps: [%q]
feeds: [%q, %q]`, site.URL+"/sitemap.xml", site.URL+"/rss.xml", site.URL+"/atom.xml"), site.URL+"/")

	c, _ := crawlKeep(t, cfg)

	want := sortedURLs(site.URL, "/", "/from-sitemap.html", "/from-rss.html", "/from-atom.html")
	if got := indexedURLs(t, out); !slices.Equal(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
	for _, p := range []string{"/linked.html", "/from-sitemap.html-child.html", "/from-rss.html-child.html", "/from-atom.html-child.html"} {
		unknown(t, c, site.URL+p)
		if n := site.hit(p); n != 0 {
			t.Errorf("%s requested %d times with discovery: false", p, n)
		}
	}
}

func TestSitemapBombsCostBoundedWorkAndTheCrawlGoesOn(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	// A gzip stream whose padding would inflate to 64 MiB; the limit is 64 KiB.
	var inflated atomic.Int64
	site.handle("/bomb.xml.gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/gzip")
		zw, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
		fmt.Fprintf(zw, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>%s/before.html</loc></url>`, site.URL)
		pad := bytes.Repeat([]byte(" "), 64<<10)
		for range 1024 {
			if r.Context().Err() != nil {
				return // the client hung up
			}
			if _, err := zw.Write(pad); err != nil {
				return
			}
			zw.Flush()
			w.(http.Flusher).Flush()
			inflated.Add(int64(len(pad)))
		}
		fmt.Fprintf(zw, `<url><loc>%s/after.html</loc></url></urlset>`, site.URL)
		zw.Close()
	})
	// An index chain deeper than max_depth, and an index listing itself.
	site.handle("/chain/", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(r.URL.Path, "/chain/%d.xml", &n)
		fmt.Fprint(w, sitemapIndex(fmt.Sprintf("%s/chain/%d.xml", site.URL, n+1)))
	})
	site.text("/self.xml", "application/xml", sitemapIndex(site.URL+"/self.xml"))
	// More URLs than max_urls.
	var many []string
	for i := range 200 {
		many = append(many, fmt.Sprintf("%s/many/%d.html", site.URL, i))
	}
	site.text("/many.xml", "application/xml", urlset(many...))
	site.handle("/many/", htmlPage("many", ""))
	site.html("/", "home", "")
	site.html("/before.html", "before", "")
	site.html("/after.html", "after", "")
	cfg, _ := testConfig(t, "", fmt.Sprintf(`
sitemaps: [%q, %q, %q, %q]
sitemap_limits: {max_bytes: 65536, max_urls: 10, max_depth: 3}`,
		site.URL+"/bomb.xml.gz", site.URL+"/chain/0.xml", site.URL+"/self.xml", site.URL+"/many.xml"), site.URL+"/")

	c, report := crawlKeep(t, cfg)

	wantState(t, c, site.URL+"/", frontier.Fetched, "")
	wantState(t, c, site.URL+"/before.html", frontier.Fetched, "")
	unknown(t, c, site.URL+"/after.html")
	// The client hangs up once it has read max_bytes; the server notices a
	// few chunks later, far from the 64 MiB it would send a patient reader.
	if n := inflated.Load(); n >= 16<<20 {
		t.Errorf("the server produced %d bytes of padding before the client hung up", n)
	}
	for i := range 4 {
		if n := site.hit(fmt.Sprintf("/chain/%d.xml", i)); n != 1 {
			t.Errorf("/chain/%d.xml requested %d times, want 1", i, n)
		}
	}
	if n := site.hit("/chain/4.xml"); n != 0 {
		t.Errorf("/chain/4.xml, past max_depth, requested %d times", n)
	}
	if n := site.hit("/self.xml"); n != 1 {
		t.Errorf("/self.xml requested %d times, want 1", n)
	}
	fetchedMany := 0
	for i := range 200 {
		if site.hit(fmt.Sprintf("/many/%d.html", i)) > 0 {
			fetchedMany++
		}
	}
	if fetchedMany != 10 {
		t.Errorf("%d URLs of the long sitemap fetched, want max_urls (10)", fetchedMany)
	}
	for _, reason := range []string{"sitemap_max_bytes", "sitemap_max_depth", "sitemap_max_urls"} {
		if report.Total.Reasons[reason] != 1 {
			t.Errorf("report counts %d %s, want 1: %v", report.Total.Reasons[reason], reason, report.Total.Reasons)
		}
	}
}

func TestSitemapURLsOutsideTheCrawlSpaceAreExcludedWithTheirReason(t *testing.T) {
	t.Parallel()
	site, other := newSite(t), newSite(t)
	site.text("/robots.txt", "text/plain", "User-agent: *\nDisallow: /blocked/\nSitemap: "+site.URL+"/sitemap.xml\n")
	site.text("/sitemap.xml", "application/xml", urlset(
		site.URL+"/ok.html",
		site.URL+"/private/a.html",
		site.URL+"/img.png",
		site.URL+"/blocked/b.html",
		other.URL+"/elsewhere.html",
	))
	site.html("/", "home", "")
	for _, p := range []string{"/ok.html", "/private/a.html", "/img.png", "/blocked/b.html"} {
		site.html(p, p, "")
	}
	other.html("/elsewhere.html", "x", "")
	cfg, out := testConfig(t, "", "exclude: [/private/]", site.URL+"/")

	c, report := crawlKeep(t, cfg)

	wantState(t, c, site.URL+"/ok.html", frontier.Fetched, "")
	wantState(t, c, site.URL+"/private/a.html", frontier.Excluded, "excluded")
	wantState(t, c, site.URL+"/img.png", frontier.Excluded, "ignored_extension")
	wantState(t, c, site.URL+"/blocked/b.html", frontier.Excluded, "robots")
	wantState(t, c, other.URL+"/elsewhere.html", frontier.Excluded, "offsite")
	for _, p := range []string{"/private/a.html", "/img.png", "/blocked/b.html"} {
		if n := site.hit(p); n != 0 {
			t.Errorf("%s requested %d times", p, n)
		}
	}
	if len(other.requested()) != 0 {
		t.Errorf("the other host got %v", other.requested())
	}
	for _, reason := range []string{"excluded", "ignored_extension", "robots", "offsite"} {
		if report.Total.Reasons[reason] != 1 {
			t.Errorf("report counts %d %s, want 1: %v", report.Total.Reasons[reason], reason, report.Total.Reasons)
		}
	}
	if got := indexedURLs(t, out); !slices.Equal(got, sortedURLs(site.URL, "/", "/ok.html")) {
		t.Errorf("indexed %v", got)
	}
}
