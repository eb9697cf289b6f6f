package provider_test

import (
	"bytes"
	"compress/flate"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/hostile"
)

// allocated is how many bytes the process has allocated so far: the work
// a bomb costs, whatever the garbage collector gave back meanwhile.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

func TestCompressionBombsAreTooLargeInEveryEncodingAndDecodeBoundedBytes(t *testing.T) {
	// A few megabytes on the wire, 2 GiB each once decoded.
	const bombSize = 2 << 30
	const limit = 4 << 20
	site := newSite(t)
	pages := map[string]*hostile.Bomb{
		"/gzip":          {Size: bombSize, Encoding: "gzip"},
		"/x-gzip":        {Size: bombSize, Encoding: "x-gzip"},
		"/gzip-identity": {Size: bombSize, Encoding: "gzip, identity"},
		"/nested":        {Size: bombSize, Encoding: "gzip, gzip"},
		"/deflate":       {Size: bombSize, Encoding: "deflate"},
		"/typed":         {Size: bombSize, Layers: 1, ContentType: "application/gzip"},
		"/page.xml.gz":   {Size: bombSize, Layers: 1},
	}
	var paths []string
	for p, b := range pages {
		if _, err := b.Body(); err != nil {
			t.Fatal(err)
		}
		site.handle(p, b.ServeHTTP)
		paths = append(paths, p)
	}
	slices.Sort(paths)
	listings := map[string]*hostile.Bomb{
		"/robots.txt":     {Size: bombSize, Encoding: "x-gzip", ContentType: "text/plain"},
		"/sitemap.xml.gz": {Size: bombSize, Encoding: "gzip, identity", Layers: 1, ContentType: "application/gzip"},
		"/feed.xml":       {Size: bombSize, Encoding: "x-gzip", ContentType: "application/rss+xml"},
	}
	for p, b := range listings {
		if _, err := b.Body(); err != nil {
			t.Fatal(err)
		}
		site.handle(p, b.ServeHTTP)
	}
	site.html("/", "home", links(paths...))
	cfg, out := testConfig(t, fmt.Sprintf("fetch: {max_body_bytes: %d, concurrency: 1}", limit), fmt.Sprintf(`
mime_types: [text/html, application/gzip]
ignored_extensions: []
sitemaps: [%q]
feeds: [%q]
sitemap_limits: {max_bytes: %d}`, site.URL+"/sitemap.xml.gz", site.URL+"/feed.xml", limit), site.URL+"/")

	before := allocated()
	c, report := crawlKeep(t, cfg)
	spent := allocated() - before

	for _, p := range paths {
		wantState(t, c, site.URL+p, frontier.Excluded, "too_large")
	}
	if got := report.Total.Reasons["too_large"]; got != len(paths) {
		t.Errorf("report counts %d too_large, want %d: %v", got, len(paths), report.Total.Reasons)
	}
	if got := indexedURLs(t, out); !slices.Equal(got, sortedURLs(site.URL, "/")) {
		t.Errorf("indexed %v, want the home page only", got)
	}
	for _, p := range []string{"/sitemap.xml.gz", "/feed.xml"} {
		if listings[p].Requests() != 1 {
			t.Errorf("%s requested %d times, want 1", p, listings[p].Requests())
		}
	}
	if got := report.Total.Reasons["sitemap_max_bytes"]; got != 2 {
		t.Errorf("report counts %d sitemap_max_bytes, want 2 (the sitemap and the feed): %v", got, report.Total.Reasons)
	}
	t.Logf("ten bombs of %d MiB cost %d MiB of allocations", bombSize>>20, spent>>20)
	// Ten bombs of 2 GiB: decoded whole, any one of them would allocate
	// more than all of this.
	if spent > 512<<20 {
		t.Errorf("the crawl allocated %d MiB for ten bombs capped at %d MiB each", spent>>20, limit>>20)
	}
}

func TestContentEncodingThatLiesIsAPermanentErrorAndDeflateIsRead(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	page := "<!doctype html><html><head><title>deflated</title></head><body><p>read whole</p></body></html>"
	var deflated bytes.Buffer
	zw, _ := flate.NewWriter(&deflated, flate.BestCompression)
	zw.Write([]byte(page))
	zw.Close()
	lies := map[string]*hostile.Lie{
		"/not-gzip.html":  {ContentType: "text/html", ContentEncoding: "gzip", Body: []byte(page)},
		"/brotli.html":    {ContentType: "text/html", ContentEncoding: "br", Body: []byte("\x1b\x03\x00\x00")},
		"/deflate.html":   {ContentType: "text/html", ContentEncoding: "deflate", Body: deflated.Bytes()},
		"/truncated.html": {ContentType: "text/html", ContentEncoding: "x-gzip", Body: gzipped(t, page)[:20]},
	}
	var paths []string
	for p, l := range lies {
		site.handle(p, l.ServeHTTP)
		paths = append(paths, p)
	}
	slices.Sort(paths)
	site.html("/", "home", links(paths...))
	cfg, out := testConfig(t, "", "", site.URL+"/")

	c, report := crawlKeep(t, cfg)

	for _, p := range []string{"/not-gzip.html", "/brotli.html"} {
		wantState(t, c, site.URL+p, frontier.Error, "content_encoding")
		if lies[p].Requests() != 1 {
			t.Errorf("%s requested %d times, want 1", p, lies[p].Requests())
		}
	}
	if ex := exampleFor(report, "content_encoding"); !strings.Contains(ex, "Content-Encoding") {
		t.Errorf("report example %q does not name the coding", ex)
	}
	// A body cut short is the connection's fault, as for an unencoded one.
	wantState(t, c, site.URL+"/truncated.html", frontier.Error, "connection_error")
	var title string
	for _, a := range readBulk(t, out) {
		if a.doc != nil && a.doc.URL == site.URL+"/deflate.html" {
			title = a.doc.Title
		}
	}
	if title != "deflated" {
		t.Errorf("the deflate page was indexed with title %q, want it decoded", title)
	}
}

func TestDeclaredCharsetTheBytesContradictFallsBackToDetectionWithAWarning(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	const title = "Déjà vu à l'école"
	page := func(extra string) string {
		return "<!doctype html><html><head><title>" + title + "</title></head><body><p>" + title +
			". Les élèves sont allés à la forêt, où ils ont vu des cerfs. Ça va très bien, merci." + extra + "</p></body></html>"
	}
	latin1, _ := charmap.Windows1252.NewEncoder().String(page(""))
	sjisTitle := "日本語のページ"
	sjis, _ := japanese.ShiftJIS.NewEncoder().String("<html><head><title>" + sjisTitle + "</title></head><body><p>これは日本語のテキストです。東京都の天気は晴れです。明日も晴れるでしょう。</p></body></html>")
	cases := []struct {
		path, contentType string
		body              []byte
		title             string
		warned            bool
	}{
		{"/utf8-says-utf16.html", "text/html; charset=utf-16", []byte(page("")), title, true},
		{"/utf16.html", "text/html; charset=utf-16", hostile.UTF16(page(""), false, false), title, false},
		{"/utf16be-says-utf16le.html", "text/html; charset=utf-16le", hostile.UTF16(page(""), true, false), title, true},
		{"/bom-says-utf16be.html", "text/html; charset=iso-8859-1", hostile.UTF16(page(""), true, true), title, true},
		{"/bom-says-utf8.html", "text/html; charset=windows-1252", append([]byte("\xef\xbb\xbf"), page("")...), title, true},
		{"/latin1-says-utf8.html", "text/html; charset=utf-8", []byte(latin1), title, true},
		{"/sjis-says-euc-jp.html", "text/html; charset=euc-jp", []byte(sjis), sjisTitle, true},
		{"/latin1.html", "text/html; charset=iso-8859-1", []byte(latin1), title, false},
		{"/utf8.html", "text/html; charset=utf-8", []byte(page("")), title, false},
	}
	var paths []string
	for _, c := range cases {
		site.handle(c.path, (&hostile.Lie{ContentType: c.contentType, Body: c.body}).ServeHTTP)
		paths = append(paths, c.path)
	}
	site.html("/", "home", links(paths...))
	cfg, out := testConfig(t, "", "keep_duplicates: true", site.URL+"/") // the same text in each charset: each its own document

	c, report := crawlKeep(t, cfg)

	titles := map[string]string{}
	for _, a := range readBulk(t, out) {
		if a.doc != nil {
			titles[a.doc.URL] = a.doc.Title
		}
	}
	warned := 0
	for _, tc := range cases {
		u := site.URL + tc.path
		if titles[u] != tc.title {
			t.Errorf("%s (%s) indexed with title %q, want %q", tc.path, tc.contentType, titles[u], tc.title)
		}
		evs, err := c.Frontier().History(u)
		if err != nil {
			t.Fatal(err)
		}
		var detail string
		for _, ev := range evs {
			if ev.Kind == frontier.EventFetched {
				detail = ev.Detail
			}
		}
		if got := strings.Contains(detail, "charset"); got != tc.warned {
			t.Errorf("%s (%s): history says %q, want a charset warning %v", tc.path, tc.contentType, detail, tc.warned)
		}
		if tc.warned {
			warned++
		}
	}
	if got := report.Total.Reasons["charset_mismatch"]; got != warned {
		t.Errorf("report counts %d charset_mismatch, want %d", got, warned)
	}
	if ex := exampleFor(report, "charset_mismatch"); !strings.Contains(ex, "charset=") {
		t.Errorf("report example %q does not say what was declared", ex)
	}
}
