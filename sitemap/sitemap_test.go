package sitemap

import (
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

const feedURL = "https://feeds.example.com/dir/feed.xml"

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func mustParse(t testing.TB, b []byte, base string, lim Limits) *Result {
	t.Helper()
	res, err := Parse(bytes.NewReader(b), base, lim)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return res
}

func urls(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.URL
	}
	return out
}

func wantURLs(t testing.TB, what string, got []Entry, want ...string) {
	t.Helper()
	g := urls(got)
	if strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got  %q\n want %q", what, g, want)
	}
}

func date(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// allocated reports the bytes the process allocated while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestURLSetWithNamespaceKeepsLocsLastmodsAndSkipsExtensions(t *testing.T) {
	res := mustParse(t, readTestdata(t, "urlset.xml"), "https://www.example.com/sitemap.xml", Limits{})
	if res.Kind != URLSet {
		t.Errorf("Kind = %v, want urlset", res.Kind)
	}
	want := []Entry{
		{"https://www.example.com/year", date("2024-01-01T00:00:00Z")},
		{"https://www.example.com/month", date("2024-02-01T00:00:00Z")},
		{"https://www.example.com/day", date("2024-02-29T00:00:00Z")},
		{"https://www.example.com/minutes", date("2024-02-29T12:45:00Z")},
		{"https://www.example.com/seconds", date("2024-02-29T13:45:30Z")},
		{"https://www.example.com/fraction", date("2024-02-29T19:15:30.25Z")},
		// Entities decoded, surrounding white space trimmed, a bad lastmod is no lastmod.
		{"https://www.example.com/catalog?item=12&desc=vacation_hawaii", time.Time{}},
		{"https://www.example.com/news/article?a=1&b=2", time.Time{}}, // CDATA
		{"https://www.example.com/raw?a=1&b=2", time.Time{}},          // a raw "&" is tolerated
		{"https://www.example.com/café", time.Time{}},                 // a character reference
	}
	if len(res.URLs) != len(want) {
		t.Fatalf("got %d URLs, want %d: %q", len(res.URLs), len(want), urls(res.URLs))
	}
	for i, w := range want {
		if g := res.URLs[i]; g.URL != w.URL || !g.Lastmod.Equal(w.Lastmod) || g.Lastmod.Location() != time.UTC {
			t.Errorf("URLs[%d] = %q %v, want %q %v (UTC)", i, g.URL, g.Lastmod, w.URL, w.Lastmod)
		}
	}
	// A url without loc, a relative loc, an ftp loc and an empty loc.
	if res.Errors != 4 {
		t.Errorf("Errors = %d, want 4", res.Errors)
	}
	if len(res.Sitemaps) != 0 || res.Truncated != "" {
		t.Errorf("Sitemaps %q, Truncated %q: want none", urls(res.Sitemaps), res.Truncated)
	}
	if res.Bytes != int64(len(readTestdata(t, "urlset.xml"))) {
		t.Errorf("Bytes = %d, want the file's size", res.Bytes)
	}
}

func TestURLSetWithoutNamespaceIsRead(t *testing.T) {
	res := mustParse(t, readTestdata(t, "urlset-nons.xml"), "", Limits{})
	if res.Kind != URLSet || res.Errors != 0 {
		t.Errorf("Kind %v Errors %d, want urlset and 0", res.Kind, res.Errors)
	}
	wantURLs(t, "URLs", res.URLs, "http://www.example.org/", "http://www.example.org/about", "http://www.example.org/contact")
	if got := res.URLs[2].Lastmod; !got.Equal(date("2023-06-15T08:30:00Z")) {
		t.Errorf("a lastmod with a space and no zone: %v, want 2023-06-15 08:30 UTC", got)
	}
}

func TestURLSetUnderAPrefixedSitemapNamespaceIsRead(t *testing.T) {
	doc := `<sm:urlset xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">
<sm:url><sm:loc>https://a.example/</sm:loc><sm:lastmod>2020-01-02</sm:lastmod></sm:url></sm:urlset>`
	res := mustParse(t, []byte(doc), "", Limits{})
	wantURLs(t, "URLs", res.URLs, "https://a.example/")
	if !res.URLs[0].Lastmod.Equal(date("2020-01-02T00:00:00Z")) {
		t.Errorf("Lastmod = %v", res.URLs[0].Lastmod)
	}
}

func TestSitemapIndexReturnsChildrenAsSitemaps(t *testing.T) {
	res := mustParse(t, readTestdata(t, "index.xml"), "https://www.example.com/sitemap.xml", Limits{})
	if res.Kind != Index {
		t.Errorf("Kind = %v, want sitemapindex", res.Kind)
	}
	wantURLs(t, "Sitemaps", res.Sitemaps,
		"https://www.example.com/sitemap-pages.xml", "https://www.example.com/sitemap-news.xml.gz")
	if !res.Sitemaps[0].Lastmod.Equal(date("2024-05-01T08:00:00Z")) || !res.Sitemaps[1].Lastmod.IsZero() {
		t.Errorf("lastmods %v, %v", res.Sitemaps[0].Lastmod, res.Sitemaps[1].Lastmod)
	}
	if len(res.URLs) != 0 || res.Errors != 1 {
		t.Errorf("URLs %q, Errors %d: want none and 1 (the relative loc)", urls(res.URLs), res.Errors)
	}
}

func TestGzipIsDetectedByMagicBytesNotByName(t *testing.T) {
	plain := readTestdata(t, "urlset-nons.xml")
	want := mustParse(t, plain, "", Limits{})

	gz := mustParse(t, gzipBytes(t, plain), "https://www.example.com/sitemap.xml", Limits{})
	wantURLs(t, "gzip named .xml", gz.URLs, urls(want.URLs)...)
	if gz.Bytes != int64(len(plain)) {
		t.Errorf("Bytes = %d, want the %d decompressed bytes", gz.Bytes, len(plain))
	}
	notGz := mustParse(t, plain, "https://www.example.com/sitemap.xml.gz", Limits{})
	wantURLs(t, "plain named .gz", notGz.URLs, urls(want.URLs)...)

	text := mustParse(t, gzipBytes(t, []byte("https://a.example/1\nhttps://a.example/2\n")), "", Limits{})
	if text.Kind != Text {
		t.Errorf("gzip text sitemap: Kind %v", text.Kind)
	}
	wantURLs(t, "gzip text", text.URLs, "https://a.example/1", "https://a.example/2")
}

func TestGzipTwiceIsUndoneAndThriceIsNot(t *testing.T) {
	plain := readTestdata(t, "index.xml")
	res := mustParse(t, gzipBytes(t, gzipBytes(t, plain)), "", Limits{})
	if len(res.Sitemaps) != 2 {
		t.Errorf("double gzip: %d sitemaps, want 2", len(res.Sitemaps))
	}
	// A third layer is left as it is: binary, so a text sitemap of junk.
	res, _ = Parse(bytes.NewReader(gzipBytes(t, gzipBytes(t, gzipBytes(t, plain)))), "", Limits{})
	if len(res.Sitemaps)+len(res.URLs) != 0 {
		t.Errorf("triple gzip: found %d entries, want none", len(res.Sitemaps)+len(res.URLs))
	}
}

func TestGzipCutShortKeepsWhatWasReadAndReportsTheError(t *testing.T) {
	var doc strings.Builder
	doc.WriteString("<urlset>")
	for i := range 2000 {
		fmt.Fprintf(&doc, "<url><loc>https://a.example/%d</loc></url>\n", i)
	}
	doc.WriteString("</urlset>")
	gz := gzipBytes(t, []byte(doc.String()))
	res, err := Parse(bytes.NewReader(gz[:len(gz)/2]), "", Limits{})
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("err = %v, want unexpected EOF", err)
	}
	if len(res.URLs) < 100 || len(res.URLs) == 2000 || res.Truncated != "" {
		t.Errorf("kept %d URLs (Truncated %q), want those before the cut and no truncation", len(res.URLs), res.Truncated)
	}
}

func TestContentAfterTheRootElementIsNotRead(t *testing.T) {
	doc := "<urlset><url><loc>https://a.example/1</loc></url></urlset>\n<html><body>" + strings.Repeat("junk ", 1<<20)
	res := mustParse(t, []byte(doc), "", Limits{})
	wantURLs(t, "URLs", res.URLs, "https://a.example/1")
	if res.Kind != URLSet || res.Bytes > 64<<10 {
		t.Errorf("Kind %v after reading %d bytes", res.Kind, res.Bytes)
	}
}

// bombStream returns a gzip stream that decompresses to total bytes of
// filler, compressed on the fly as it is read: neither the plain nor the
// compressed bomb is ever held in memory. close stops the generator.
func bombStream(prefix string, filler byte, total int64) (r io.Reader, written *int64, close func()) {
	pr, pw := io.Pipe()
	n := new(int64)
	go func() {
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestCompression)
		chunk := bytes.Repeat([]byte{filler}, 64<<10)
		zw.Write([]byte(prefix))
		for *n = int64(len(prefix)); *n < total; *n += int64(len(chunk)) {
			if _, err := zw.Write(chunk); err != nil {
				return // the reader has gone
			}
		}
		pw.CloseWithError(zw.Close())
	}()
	return pr, n, func() { pr.Close() }
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestGzipBombStopsAtMaxBytesWithBoundedReadsAndMemory(t *testing.T) {
	const total = 200 << 20 // of zeros: about 200 KB compressed
	const maxBytes = 10 << 20
	stream, _, stop := bombStream("", 0, total)
	defer stop()
	src := &countingReader{r: stream}
	var res *Result
	var err error
	alloc := allocated(func() { res, err = Parse(src, "", Limits{MaxBytes: maxBytes}) })
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if res.Truncated != TruncatedBytes || res.Bytes != maxBytes {
		t.Errorf("Truncated %q after %d bytes, want %q after %d", res.Truncated, res.Bytes, TruncatedBytes, maxBytes)
	}
	// 10 MiB of zeros compress to about 10 KiB; add the input buffer.
	t.Logf("compressed bytes read %d, allocated %d KiB", src.n, alloc>>10)
	if src.n > 64<<10 {
		t.Errorf("read %d compressed bytes, want under 64 KiB: the bomb is being read past the cap", src.n)
	}
	// Buffers, the gzip window and the bomb's own compressor: a few MiB.
	if alloc > 16<<20 {
		t.Errorf("allocated %d MiB while parsing a 200 MiB bomb, want under 16", alloc>>20)
	}
	if len(res.URLs) != 0 || res.Kind != Text {
		t.Errorf("Kind %v with %d URLs, want text with none", res.Kind, len(res.URLs))
	}
}

func TestGzipBombOfWhiteSpaceStopsAtMaxBytes(t *testing.T) {
	stream, _, stop := bombStream("", ' ', 200<<20)
	defer stop()
	res, err := Parse(stream, "", Limits{MaxBytes: 4 << 20})
	if err != nil || res.Truncated != TruncatedBytes || res.Bytes != 4<<20 || res.Kind != Unknown {
		t.Errorf("got Kind %v Truncated %q Bytes %d err %v, want unknown, %q after 4 MiB, no error",
			res.Kind, res.Truncated, res.Bytes, err, TruncatedBytes)
	}
}

func TestGzipBombInsideXMLKeepsEarlierURLsAndStopsEarly(t *testing.T) {
	prefix := "<urlset><url><loc>https://a.example/1</loc></url><url><loc>https://a.example/2</loc></url>"
	stream, _, stop := bombStream(prefix, '\n', 200<<20)
	defer stop()
	src := &countingReader{r: stream}
	res, err := Parse(src, "", Limits{})
	// One text node of endless white space: the token cap ends it long
	// before MaxBytes.
	if !errors.Is(err, errTokenTooLarge) {
		t.Errorf("err = %v, want the token cap", err)
	}
	wantURLs(t, "URLs", res.URLs, "https://a.example/1", "https://a.example/2")
	if res.Bytes > maxToken+64<<10 {
		t.Errorf("read %d bytes, want about %d", res.Bytes, maxToken)
	}
}

func TestCompressedInputIsCappedToo(t *testing.T) {
	// Incompressible content: the compressed stream reaches the cap first.
	var doc bytes.Buffer
	doc.WriteString("<urlset>")
	for i := 0; doc.Len() < 1<<20; i++ {
		fmt.Fprintf(&doc, "<url><loc>https://a.example/%x</loc></url>", uint64(i)*0x9e3779b97f4a7c15)
	}
	doc.WriteString("</urlset>")
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.NoCompression)
	zw.Write(doc.Bytes())
	zw.Close()
	src := &countingReader{r: bytes.NewReader(gz.Bytes())}
	res, err := Parse(src, "", Limits{MaxBytes: 256 << 10})
	if err != nil || res.Truncated != TruncatedBytes {
		t.Fatalf("err %v, Truncated %q: want a clean max_bytes truncation", err, res.Truncated)
	}
	if src.n > 256<<10+1 {
		t.Errorf("read %d compressed bytes past a cap of %d", src.n, 256<<10)
	}
	if len(res.URLs) == 0 {
		t.Error("no URLs kept from before the cap")
	}
}

func TestMaxURLsKeeps50000AndReportsTruncation(t *testing.T) {
	for _, n := range []int{50000, 50001} {
		var xmlDoc, textDoc, indexDoc bytes.Buffer
		xmlDoc.WriteString(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		indexDoc.WriteString(`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		for i := range n {
			fmt.Fprintf(&xmlDoc, "<url><loc>https://www.example.com/page/%d</loc></url>\n", i)
			fmt.Fprintf(&indexDoc, "<sitemap><loc>https://www.example.com/sitemap-%d.xml</loc></sitemap>\n", i)
			fmt.Fprintf(&textDoc, "https://www.example.com/page/%d\n", i)
		}
		xmlDoc.WriteString("</urlset>")
		indexDoc.WriteString("</sitemapindex>")
		wantTrunc := ""
		if n > DefaultMaxURLs {
			wantTrunc = TruncatedURLs
		}
		for name, doc := range map[string][]byte{"urlset": xmlDoc.Bytes(), "text": textDoc.Bytes(), "index": indexDoc.Bytes()} {
			res := mustParse(t, doc, "", Limits{})
			got := len(res.URLs) + len(res.Sitemaps)
			if got != 50000 || res.Truncated != wantTrunc {
				t.Errorf("%s of %d: kept %d, Truncated %q; want 50000 and %q", name, n, got, res.Truncated, wantTrunc)
			}
		}
	}
}

func TestMaxURLsStopsReading(t *testing.T) {
	var doc bytes.Buffer
	doc.WriteString("<urlset>")
	for i := range 10000 {
		fmt.Fprintf(&doc, "<url><loc>https://www.example.com/page/%d</loc></url>\n", i)
	}
	res := mustParse(t, doc.Bytes(), "", Limits{MaxURLs: 10})
	if len(res.URLs) != 10 || res.Truncated != TruncatedURLs {
		t.Errorf("kept %d, Truncated %q", len(res.URLs), res.Truncated)
	}
	// What was read: the entries kept and the input buffers, not the file.
	if res.Bytes > 64<<10 {
		t.Errorf("read %d of %d bytes to keep 10 entries", res.Bytes, doc.Len())
	}
}

func TestMaxURLsAppliesToFeeds(t *testing.T) {
	res := mustParse(t, readTestdata(t, "rss2.xml"), feedURL, Limits{MaxURLs: 2})
	if len(res.URLs) != 2 || res.Truncated != TruncatedURLs {
		t.Errorf("kept %d, Truncated %q; want 2 and %q", len(res.URLs), res.Truncated, TruncatedURLs)
	}
}

func TestMaxBytesCutKeepsEarlierURLsWithoutAnError(t *testing.T) {
	doc := readTestdata(t, "urlset-nons.xml")
	cut := bytes.Index(doc, []byte("http://www.example.org/contact")) + 10
	res, err := Parse(bytes.NewReader(doc), "", Limits{MaxBytes: int64(cut)})
	if err != nil || res.Truncated != TruncatedBytes {
		t.Fatalf("err %v, Truncated %q: want nil and %q", err, res.Truncated, TruncatedBytes)
	}
	wantURLs(t, "URLs", res.URLs, "http://www.example.org/", "http://www.example.org/about")
}

func TestMaxBytesCutNeverTurnsATextLineIntoAShorterURL(t *testing.T) {
	doc := "https://a.example/first\nhttps://a.example/second-page-with-a-long-name\n"
	cut := strings.Index(doc, "-with")
	res, err := Parse(strings.NewReader(doc), "", Limits{MaxBytes: int64(cut)})
	if err != nil || res.Truncated != TruncatedBytes || res.Errors != 0 {
		t.Fatalf("err %v, Truncated %q, Errors %d", err, res.Truncated, res.Errors)
	}
	wantURLs(t, "URLs", res.URLs, "https://a.example/first")

	// A file that ends without a newline is complete, not cut.
	res = mustParse(t, []byte("https://a.example/first\nhttps://a.example/last"), "", Limits{})
	wantURLs(t, "no final newline", res.URLs, "https://a.example/first", "https://a.example/last")
}

func TestTextSitemapSkipsBlankAndCountsJunkLines(t *testing.T) {
	res := mustParse(t, readTestdata(t, "text.txt"), "https://www.example.com/sitemap.txt", Limits{})
	if res.Kind != Text {
		t.Errorf("Kind = %v, want text", res.Kind)
	}
	// The BOM, CRLF line ends and surrounding white space are not part of a URL.
	wantURLs(t, "URLs", res.URLs, "https://www.example.com/a", "https://www.example.com/b",
		"HTTPS://WWW.EXAMPLE.COM/C", "https://www.example.com/d")
	// A comment, prose, no scheme, an inner space, mailto: and a URL without a host.
	if res.Errors != 6 {
		t.Errorf("Errors = %d, want 6", res.Errors)
	}
}

func TestTextSitemapSkipsAnOverlongLineInConstantMemory(t *testing.T) {
	doc := "https://a.example/1\nhttps://a.example/" + strings.Repeat("x", 200<<10) + "\nhttps://a.example/2\n"
	res := mustParse(t, []byte(doc), "", Limits{})
	wantURLs(t, "URLs", res.URLs, "https://a.example/1", "https://a.example/2")
	if res.Errors != 1 {
		t.Errorf("Errors = %d, want 1", res.Errors)
	}
}

func TestRSS2TakesLinkThenPermalinkGuidAndPubDate(t *testing.T) {
	res := mustParse(t, readTestdata(t, "rss2.xml"), feedURL, Limits{})
	if res.Kind != RSS {
		t.Errorf("Kind = %v, want rss", res.Kind)
	}
	want := []Entry{
		{"https://news.example.com/2024/05/linked", date("2024-05-01T07:30:00Z")},
		{"https://news.example.com/2024/05/guid-only", date("2024-05-02T10:00:00Z")},
		{"https://feeds.example.com/2024/05/relative", date("2024-05-03T13:00:00Z")}, // against the feed's URL
		{"https://news.example.com/2024/05/dc", date("2024-05-04T12:00:00Z")},
	}
	if len(res.URLs) != len(want) {
		t.Fatalf("got %q, want %d URLs", urls(res.URLs), len(want))
	}
	for i, w := range want {
		if g := res.URLs[i]; g.URL != w.URL || !g.Lastmod.Equal(w.Lastmod) {
			t.Errorf("URLs[%d] = %q %v, want %q %v", i, g.URL, g.Lastmod, w.URL, w.Lastmod)
		}
	}
	// The guid "12345" is no URL, javascript: is no page.
	if res.Errors != 2 {
		t.Errorf("Errors = %d, want 2", res.Errors)
	}
}

func TestRSS1TakesItemLinksAndRDFAbout(t *testing.T) {
	res := mustParse(t, readTestdata(t, "rss1.rdf"), feedURL, Limits{})
	if res.Kind != RSS || res.Errors != 0 {
		t.Errorf("Kind %v Errors %d, want rss and 0", res.Kind, res.Errors)
	}
	wantURLs(t, "URLs", res.URLs, "https://blog.example.com/first", "https://blog.example.com/second")
	if !res.URLs[1].Lastmod.Equal(date("2024-04-02T00:00:00Z")) {
		t.Errorf("dc:date: %v", res.URLs[1].Lastmod)
	}
}

func TestAtomResolvesRelativeLinksAgainstXMLBaseAndTakesAlternates(t *testing.T) {
	res := mustParse(t, readTestdata(t, "atom.xml"), feedURL, Limits{})
	if res.Kind != Atom {
		t.Errorf("Kind = %v, want atom", res.Kind)
	}
	want := []Entry{
		{"https://www.example.com/blog/2024/first-post", date("2024-06-01T12:00:00Z")}, // updated beats published
		{"https://archive.example.com/2019/post", date("2019-01-02T03:04:05Z")},        // published when not updated
		{"https://www.example.com/docs/guide.html", time.Time{}},
		{"https://www.example.com/blog/xhtml", time.Time{}},
	}
	if len(res.URLs) != len(want) {
		t.Fatalf("got %q, want %d URLs", urls(res.URLs), len(want))
	}
	for i, w := range want {
		if g := res.URLs[i]; g.URL != w.URL || !g.Lastmod.Equal(w.Lastmod) {
			t.Errorf("URLs[%d] = %q %v, want %q %v", i, g.URL, g.Lastmod, w.URL, w.Lastmod)
		}
	}
	if res.Errors != 1 { // the entry with only an enclosure
		t.Errorf("Errors = %d, want 1", res.Errors)
	}
}

func TestAtomWithoutXMLBaseResolvesAgainstTheFeedURL(t *testing.T) {
	doc := `<feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="posts/1"/></entry>
<entry><link href="//cdn.example.net/2"/></entry><entry><link href="posts/3"/></entry></feed>`
	res := mustParse(t, []byte(doc), feedURL, Limits{})
	wantURLs(t, "URLs", res.URLs, "https://feeds.example.com/dir/posts/1", "https://cdn.example.net/2", "https://feeds.example.com/dir/posts/3")
	res = mustParse(t, []byte(doc), "", Limits{})
	if len(res.URLs) != 0 || res.Errors != 3 {
		t.Errorf("no base: %q and %d errors, want none and 3", urls(res.URLs), res.Errors)
	}
}

func TestMalformedXMLMidwayKeepsEarlierURLsAndReportsTheError(t *testing.T) {
	res, err := Parse(bytes.NewReader(readTestdata(t, "malformed.xml")), "", Limits{})
	var se *xml.SyntaxError
	if !errors.As(err, &se) || se.Line != 7 {
		t.Fatalf("err = %v, want a syntax error on line 7", err)
	}
	wantURLs(t, "URLs", res.URLs, "https://www.example.com/one", "https://www.example.com/two", "https://www.example.com/three")
	if res.Kind != URLSet || res.Truncated != "" {
		t.Errorf("Kind %v Truncated %q", res.Kind, res.Truncated)
	}
}

func TestBrokenConnectionKeepsWhatWasRead(t *testing.T) {
	reset := errors.New("connection reset by peer")
	for name, doc := range map[string]string{
		"xml":  "<urlset><url><loc>https://a.example/1</loc></url><url><loc>https://a.example/2</lo",
		"text": "https://a.example/1\nhttps://a.example/2\nhttps://a.example/3-cut",
	} {
		r := io.MultiReader(strings.NewReader(doc), iotest.ErrReader(reset))
		res, err := Parse(r, "", Limits{})
		if !errors.Is(err, reset) {
			t.Errorf("%s: err = %v, want the read error", name, err)
		}
		if len(res.URLs) == 0 || res.URLs[0].URL != "https://a.example/1" || strings.HasSuffix(res.URLs[len(res.URLs)-1].URL, "cut") {
			t.Errorf("%s: kept %q, want the complete entries only", name, urls(res.URLs))
		}
	}
}

func TestUnescapedAmpersandsAndHTMLEntitiesDoNotStopTheParse(t *testing.T) {
	doc := `<urlset><url><loc>https://a.example/?x=1&y=2&amp;z=3</loc></url>
<url><loc>https://a.example/&eacute;t&eacute;</loc></url><url><loc>https://a.example/last</loc></url></urlset>`
	res := mustParse(t, []byte(doc), "", Limits{})
	wantURLs(t, "URLs", res.URLs, "https://a.example/?x=1&y=2&z=3", "https://a.example/été", "https://a.example/last")
}

func TestMismatchedEndTagsAreTolerated(t *testing.T) {
	doc := `<urlset><url><loc>https://a.example/1</url><url><loc>https://a.example/2</loc></url></urlset>`
	res := mustParse(t, []byte(doc), "", Limits{})
	wantURLs(t, "URLs", res.URLs, "https://a.example/1", "https://a.example/2")
}

func TestBillionLaughsCostsBoundedWorkAndExpandsNothing(t *testing.T) {
	doc := readTestdata(t, "billion-laughs.xml")
	var res *Result
	var err error
	alloc := allocated(func() { res, err = Parse(bytes.NewReader(doc), "", Limits{}) })
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	t.Logf("allocated %d KiB", alloc>>10)
	// Expanded, &lol9; alone would be 3 GB.
	if alloc > 1<<20 {
		t.Errorf("allocated %d KiB for a %d-byte document", alloc>>10, len(doc))
	}
	for _, e := range res.URLs {
		if len(e.URL) > 64 || strings.Contains(e.URL, "lollol") || strings.Contains(e.URL, "root:") {
			t.Errorf("an entity was expanded: %.80q", e.URL)
		}
		if strings.Contains(e.URL, "attacker") {
			t.Errorf("a DTD-declared entity was expanded: %q", e.URL)
		}
	}
	// The parse went on past the entity references to the end.
	if n := len(res.URLs); n == 0 || res.URLs[n-1].URL != "https://www.example.com/after" {
		t.Errorf("URLs %q, want the last to be .../after", urls(res.URLs))
	}
}

func TestDeepNestingIsRejectedInBoundedMemory(t *testing.T) {
	doc := "<urlset><url><loc>https://a.example/1</loc></url>" + strings.Repeat("<a>", 1<<20)
	var res *Result
	var err error
	alloc := allocated(func() { res, err = Parse(strings.NewReader(doc), "", Limits{}) })
	if !errors.Is(err, errTooDeep) {
		t.Errorf("err = %v, want the depth cap", err)
	}
	wantURLs(t, "URLs", res.URLs, "https://a.example/1")
	t.Logf("allocated %d KiB", alloc>>10)
	if alloc > 4<<20 {
		t.Errorf("allocated %d KiB for 1 Mi open elements, want the depth cap to bound it", alloc>>10)
	}
}

func TestHugeStartTagIsRejectedInBoundedMemory(t *testing.T) {
	var doc strings.Builder
	doc.WriteString(`<urlset><url><loc>https://a.example/1</loc></url><url `)
	for i := 0; doc.Len() < 10<<20; i++ {
		fmt.Fprintf(&doc, `xmlns:a%d="b" `, i)
	}
	doc.WriteString("/></urlset>")
	var res *Result
	var err error
	alloc := allocated(func() { res, err = Parse(strings.NewReader(doc.String()), "", Limits{}) })
	if !errors.Is(err, errTokenTooLarge) {
		t.Errorf("err = %v, want the token cap", err)
	}
	wantURLs(t, "URLs", res.URLs, "https://a.example/1")
	t.Logf("allocated %d KiB", alloc>>10)
	// Decoded whole, the tag's bindings would take some 250 MB.
	if alloc > 32<<20 {
		t.Errorf("allocated %d MiB for one huge start tag", alloc>>20)
	}
}

func TestWrongRootIsUnknownFormat(t *testing.T) {
	for _, doc := range []string{
		"<!DOCTYPE html>\n<html><head><title>Not found</title></head><body>Sorry</body></html>",
		`<?xml version="1.0"?><note><to>x</to></note>`,
	} {
		res, err := Parse(strings.NewReader(doc), "", Limits{})
		if !errors.Is(err, ErrUnknownFormat) || res.Kind != Unknown {
			t.Errorf("%.30q: Kind %v err %v, want unknown and ErrUnknownFormat", doc, res.Kind, err)
		}
	}
}

func TestEmptyInputIsUnknownWithoutError(t *testing.T) {
	for _, doc := range []string{"", "  \n\t\r\n", "\xef\xbb\xbf"} {
		res, err := Parse(strings.NewReader(doc), "", Limits{})
		if err != nil || res.Kind != Unknown || len(res.URLs) != 0 || res.Truncated != "" {
			t.Errorf("%q: %+v, %v", doc, res, err)
		}
	}
}

func TestDeclaredEncodingIsDecoded(t *testing.T) {
	res := mustParse(t, readTestdata(t, "latin1.xml"), "", Limits{})
	wantURLs(t, "ISO-8859-1", res.URLs, "https://www.example.com/café")

	// A declaration that lies (UTF-16 over ASCII bytes) or names no known
	// charset is read as UTF-8.
	for _, enc := range []string{"UTF-16", "x-no-such-charset"} {
		doc := `<?xml version="1.0" encoding="` + enc + `"?><urlset><url><loc>https://a.example/é</loc></url></urlset>`
		res := mustParse(t, []byte(doc), "", Limits{})
		wantURLs(t, enc, res.URLs, "https://a.example/é")
	}
}

func TestUTF16IsTranscoded(t *testing.T) {
	doc := `<?xml version="1.0" encoding="UTF-16"?><urlset><url><loc>https://a.example/é</loc></url></urlset>`
	le := []byte{0xff, 0xfe}
	be := []byte{0xfe, 0xff}
	for _, r := range doc {
		le = append(le, byte(r), byte(r>>8))
		be = append(be, byte(r>>8), byte(r))
	}
	for name, b := range map[string][]byte{"LE with BOM": le, "BE with BOM": be, "LE without BOM": le[2:], "BE without BOM": be[2:]} {
		res, err := Parse(bytes.NewReader(b), "", Limits{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		wantURLs(t, name, res.URLs, "https://a.example/é")
	}
}

func TestKindStringNamesEachFormat(t *testing.T) {
	for k, want := range map[Kind]string{Unknown: "unknown", URLSet: "urlset", Index: "sitemapindex", Text: "text", RSS: "rss", Atom: "atom", 9: "Kind(9)"} {
		if k.String() != want {
			t.Errorf("%d: %q, want %q", k, k.String(), want)
		}
	}
}

func TestIsAbsHTTPAcceptsOnlyAbsoluteHTTPURLsWithAHost(t *testing.T) {
	for s, want := range map[string]bool{
		"http://a.example/":            true,
		"HTTPS://A.EXAMPLE":            true,
		"https://user@a.example:8443/": true,
		"https://[::1]:8080/x":         true,
		"https://a.example/ü?q=1#f":    true,
		"https://a.example/a b":        false,
		"https://a.example/\x7f":       false,
		"https://":                     false,
		"https:///path":                false,
		"https://@/":                   false,
		"https://:80/":                 false,
		"https:/a.example/":            false,
		"ftp://a.example/":             false,
		"//a.example/":                 false,
		"/path":                        false,
		"https://a.example/" + strings.Repeat("x", maxURLLen): false,
	} {
		if got := isAbsHTTP(s); got != want {
			t.Errorf("isAbsHTTP(%q) = %v, want %v", s, got, want)
		}
	}
}
