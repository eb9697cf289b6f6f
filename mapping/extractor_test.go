package mapping

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/crawlspace/crawlspace/config"
)

// loadConfig loads a configuration the way crawlspace does, so every
// default is set and every value checked before New sees it.
func loadConfig(t testing.TB, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("crawl.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func newExtractor(t testing.TB, mutate func(*config.Config)) *Extractor {
	t.Helper()
	cfg := loadConfig(t, `user_agent: ExampleBot/2.0
extra_fields:
  extra_category:
  extra_n: integer
  extra_when: date
sources:
  - name: site
    start_urls: ["http://h.test/"]
`)
	if mutate != nil {
		mutate(cfg)
	}
	return New(cfg, &cfg.Sources[0])
}

func extract(t testing.TB, x *Extractor, rawURL, body string, header ...string) *Result {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
	for i := 0; i+1 < len(header); i += 2 {
		h.Add(header[i], header[i+1])
	}
	res, err := x.Extract(Page{URL: u, Header: h, Body: []byte(body), Source: "site", Fetched: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestNewAcceptsAnEmptySourceWithDefaults(t *testing.T) {
	x := newExtractor(t, nil)
	res := extract(t, x, "http://h.test/a.html", `<header>site</header><p>body</p><footer>foot</footer><div class="noindex">x</div>`)
	if res.Doc.Body != "body" {
		t.Errorf("default removals: body %q", res.Doc.Body)
	}
}

func TestExplicitlyEmptyRemovalListsRemoveNothing(t *testing.T) {
	x := newExtractor(t, func(c *config.Config) {
		c.Sources[0].Extraction.RemoveElements = []string{}
		c.Sources[0].Extraction.RemoveClasses = []string{}
	})
	res := extract(t, x, "http://h.test/a.html", `<header>site</header><p>body</p><div class="noindex">x</div>`)
	if res.Doc.Body != "site\nbody\nx" {
		t.Errorf("body %q", res.Doc.Body)
	}
}

func TestWordsAreNeverGluedAcrossElements(t *testing.T) {
	x := newExtractor(t, nil)
	for in, want := range map[string]string{
		`<p>one</p><p>two</p>`:    "one\ntwo",
		`<div>one</div>two`:       "one\ntwo",
		`<ul><li>one<li>two</ul>`: "one\ntwo",
		`one<br>two`:              "one\ntwo",
		`<table><tr><td>one</td><td>two</td></tr></table>`: "one two",
		`<a href="/a">Home</a><a href="/b">About</a>`:      "Home About",
		`see <a href="/x">here</a>.`:                       "see here.",
		`(<a href="/x">link</a>)`:                          "(link)",
		`word<img src="x.png">word`:                        "word word",
		`<h1>Title</h1>Text`:                               "Title\nText",
		`in<b>line</b> <em>em</em>phasis`:                  "inline emphasis",
		`a<span class="noindex">x</span>b`:                 "a b",
		"spaces \t\n\u00a0 collapse\u200b\u00ad here":      "spaces collapse here",
		`<pre>line one
line two</pre>`: "line one\nline two",
	} {
		if got := extract(t, x, "http://h.test/a.html", in).Doc.Body; got != want {
			t.Errorf("%q: body %q, want %q", in, got, want)
		}
	}
}

func TestTitleOrderIsConfigurable(t *testing.T) {
	page := `<title>From title</title><meta name="DC.title" content="From meta"><h1>From h1</h1>`
	for order, want := range map[string]string{
		"title,meta,h1,url": "From title",
		"meta,title":        "From meta",
		"h1,title":          "From h1",
		"url,title":         "guide page",
	} {
		x := newExtractor(t, func(c *config.Config) { c.Sources[0].Extraction.TitleOrder = strings.Split(order, ",") })
		if got := extract(t, x, "http://h.test/docs/guide_page.html", page).Doc.Title; got != want {
			t.Errorf("order %s: title %q, want %q", order, got, want)
		}
	}
}

func TestTitleFallsBackToTheURLEvenWhenTheOrderOmitsIt(t *testing.T) {
	x := newExtractor(t, func(c *config.Config) { c.Sources[0].Extraction.TitleOrder = []string{"title"} })
	if got := extract(t, x, "http://h.test/a/my-page.php", `<h1>Heading</h1>`).Doc.Title; got != "my page" {
		t.Errorf("title %q", got)
	}
}

func TestURLTitles(t *testing.T) {
	for raw, want := range map[string]string{
		"http://h.test/":                          "h.test",
		"http://h.test":                           "h.test",
		"http://h.test:8080/":                     "h.test",
		"http://h.test/docs/":                     "docs",
		"http://h.test/docs/index.html":           "docs",
		"http://h.test/index.html":                "h.test",
		"http://h.test/a/Default.aspx":            "a",
		"http://h.test/getting-started_guide.htm": "getting started guide",
		"http://h.test/caf%C3%A9%20menu.html":     "café menu",
		"http://h.test/release-v1.2":              "release v1.2",
		"http://h.test/archive.tar.gz":            "archive.tar",
		"http://h.test/report?id=5":               "report",
		"http://h.test/---/":                      "h.test",
		"http://h.test/50%25-off":                 "50% off",
	} {
		u, _ := url.Parse(raw)
		if got := urlTitle(u); got != want {
			t.Errorf("%s: %q, want %q", raw, got, want)
		}
	}
}

func TestBodyCapCutsOnACharacterBoundaryAndIsRecorded(t *testing.T) {
	x := newExtractor(t, func(c *config.Config) { c.Sources[0].Extraction.MaxBodyBytes = 10 })
	res := extract(t, x, "http://h.test/", "<p>ab€€€€</p><p>more</p><a href='/after-cap'>x</a>")
	if res.Doc.Body != "ab€€" || !res.BodyTruncated {
		t.Errorf("body %q truncated %v, want \"ab€€\" true", res.Doc.Body, res.BodyTruncated)
	}
	if len(res.Links) != 1 {
		t.Errorf("links after the cap were lost: %v", res.Links)
	}
	res = extract(t, x, "http://h.test/", "<p>short</p>")
	if res.BodyTruncated {
		t.Error("a short body is reported truncated")
	}
}

func TestLinkCapKeepsTheFirstDistinctLinks(t *testing.T) {
	x := newExtractor(t, func(c *config.Config) { c.Fetch.MaxLinksPerPage = 3 })
	var b strings.Builder
	for i := range 10 {
		fmt.Fprintf(&b, `<a href="/p%d">p</a><a href="/p%d">again</a>`, i, i)
	}
	res := extract(t, x, "http://h.test/", b.String())
	if len(res.Links) != 3 || res.Links[2].URL != "http://h.test/p2" || !res.LinksCapped {
		t.Errorf("links %v capped %v", res.Links, res.LinksCapped)
	}
}

func TestContentHashIgnoresRemovedPartsAndMarkupButNotContent(t *testing.T) {
	x := newExtractor(t, func(c *config.Config) { c.Sources[0].Extraction.MetaMappings = []string{"category:extra_category"} })
	page := func(footer, body, cat string) string {
		return `<html><head><title>T</title><meta name="category" content="` + cat + `"></head><body><p class="a">` + body +
			`</p><footer>Generated ` + footer + `</footer><!--noindex-->` + footer + `<!--endnoindex--></body></html>`
	}
	hash := func(s string) string { return extract(t, x, "http://h.test/", s).Doc.ContentHash }
	base := hash(page("2025-01-01 10:00", "Body text", "News"))
	if base == "" || len(base) != 32 {
		t.Fatalf("hash %q", base)
	}
	if h := hash(page("2025-01-02 11:11", "Body text", "News")); h != base {
		t.Error("a changed timestamp in a removed footer changed the hash")
	}
	if h := hash(strings.Replace(page("x", "Body text", "News"), `class="a"`, `class="b" id="new"`, 1)); h != hash(page("x", "Body text", "News")) {
		t.Error("changed markup with the same text changed the hash")
	}
	if h := hash(page("2025-01-01 10:00", "Body text changed", "News")); h == base {
		t.Error("changed body text kept the hash")
	}
	if h := hash(page("2025-01-01 10:00", "Body text", "Sport")); h == base {
		t.Error("a changed extra field kept the hash")
	}
	if h := extract(t, x, "http://h.test/", page("2025-01-01 10:00", "Body text", "News"), "X-Robots-Tag", "nosnippet").Doc.ContentHash; h == base {
		t.Error("nosnippet did not change the hash")
	}
}

// A group's document hashes its pages' content and the list it holds, so
// a change of either is a change, and the list can be rewritten from the
// group as stored; one that lists none keeps its page's hash.
func TestGroupHashIsTheContentAndTheListOfDuplicates(t *testing.T) {
	const content = "0123456789abcdef0123456789abcdef"
	if h := GroupHash(content, nil); h != content {
		t.Errorf("a document listing no duplicates hashes %q, want its page's %q", h, content)
	}
	one := GroupHash(content, []string{"http://h.test/a?id=1"})
	if len(one) != 32 || one == content {
		t.Errorf("hash with one duplicate %q", one)
	}
	for _, other := range []string{
		GroupHash(content, []string{"http://h.test/a?id=1", "http://h.test/a?id=2"}),
		GroupHash(content, []string{"http://h.test/a?id=2"}),
		GroupHash("fedcba9876543210fedcba9876543210", []string{"http://h.test/a?id=1"}),
		GroupHash(content, []string{"http://h.test/a?id", "=1"}),
	} {
		if other == one {
			t.Errorf("another list or content hashes as %q", one)
		}
	}
	if GroupHash(content, []string{"http://h.test/a?id=1"}) != one {
		t.Error("the same group hashes differently")
	}
}

func TestMetaDatesAndLanguageFallBackInOrder(t *testing.T) {
	x := newExtractor(t, nil)
	res := extract(t, x, "http://h.test/", `<meta name="dcterms.modified" content="not a date">
<meta property="article:modified_time" content="2024-02-03T04:05:06+01:00"><p>x</p>`,
		"Last-Modified", "Wed, 21 Oct 2015 07:28:00 GMT", "Content-Language", "fr")
	if want := time.Date(2024, 2, 3, 3, 5, 6, 0, time.UTC); !res.Doc.Modified.Equal(want) {
		t.Errorf("modified %v, want %v", res.Doc.Modified, want)
	}
	if res.Doc.Language != "fr" {
		t.Errorf("language %q", res.Doc.Language)
	}
	res = extract(t, x, "http://h.test/", `<p>x</p>`, "Last-Modified", "Wed, 21 Oct 2015 07:28:00 GMT")
	if want := time.Date(2015, 10, 21, 7, 28, 0, 0, time.UTC); !res.Doc.Modified.Equal(want) {
		t.Errorf("modified %v from header, want %v", res.Doc.Modified, want)
	}
}

func TestParseDate(t *testing.T) {
	for in, want := range map[string]string{
		"2024-03-01":                      "2024-03-01T00:00:00Z",
		"2024-03-01T10:20:30Z":            "2024-03-01T10:20:30Z",
		"2024-03-01T10:20:30.123+02:00":   "2024-03-01T08:20:30.123Z",
		"2024-03-01T10:20+02:00":          "2024-03-01T08:20:00Z",
		"2024-03-01 10:20":                "2024-03-01T10:20:00Z",
		"2024-03":                         "2024-03-01T00:00:00Z",
		"Tue, 14 Jan 2025 16:00:00 GMT":   "2025-01-14T16:00:00Z",
		"Tue, 14 Jan 2025 16:00:00 +0100": "2025-01-14T15:00:00Z",
		"14 January 2025":                 "2025-01-14T00:00:00Z",
		"January 14, 2025":                "2025-01-14T00:00:00Z",
		"  2025/01/14 ":                   "2025-01-14T00:00:00Z",
		"0001-01-01":                      "",
		"yesterday":                       "",
		"":                                "",
	} {
		got, ok := parseDate(in)
		if want == "" {
			if ok {
				t.Errorf("%q parsed as %v", in, got)
			}
			continue
		}
		if !ok || got.Format(time.RFC3339Nano) != want {
			t.Errorf("%q: %v %v, want %s", in, got, ok, want)
		}
	}
}

func TestExtraFieldsKeepOnlyValuesOfTheirType(t *testing.T) {
	x := newExtractor(t, func(c *config.Config) {
		c.Sources[0].Extraction.MetaMappings = []string{"n:extra_n", "when:extra_when", "cat:extra_category"}
	})
	res := extract(t, x, "http://h.test/", `<meta name="n" content=" 42 "><meta name="n" content="many">
<meta name="n" content="99999999999"><meta name="when" content="2024-05-06"><meta name="when" content="soon">
<meta name="cat" content="  A   b "><p>x</p>`)
	want := map[string][]string{"extra_n": {"42"}, "extra_when": {"2024-05-06T00:00:00Z"}, "extra_category": {"A b"}}
	if !reflect.DeepEqual(res.Doc.Extra, want) {
		t.Errorf("extra %v, want %v", res.Doc.Extra, want)
	}
}

func TestAddMetaFillsExtraFieldsAfterThePagesOwnValues(t *testing.T) {
	x := newExtractor(t, func(c *config.Config) {
		c.Sources[0].Extraction.MetaMappings = []string{"section:extra_category"}
		c.Sources[0].CrawlRules = []config.CrawlRule{{AddMeta: map[string]string{"category": "News", "extra_n": "7"}}}
	})
	u, _ := url.Parse("http://h.test/")
	page := Page{URL: u, Body: []byte(`<meta name="section" content="Local"><p>x</p>`), AddMeta: map[string]string{"category": "News", "extra_n": "7"}}
	res, err := x.Extract(page)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"extra_category": {"Local", "News"}, "extra_n": {"7"}}
	if !reflect.DeepEqual(res.Doc.Extra, want) {
		t.Errorf("extra %v, want %v", res.Doc.Extra, want)
	}
	page.AddMeta = nil
	plain, _ := x.Extract(page)
	if plain.Doc.ContentHash == res.Doc.ContentHash {
		t.Error("add_meta values are not in the content hash")
	}
}

func TestMetaRobotsDirectives(t *testing.T) {
	for content, want := range map[string]Directives{
		"noindex":                 {NoIndex: true},
		"NOFOLLOW":                {NoFollow: true},
		"none":                    {NoIndex: true, NoFollow: true},
		"all":                     {},
		"index, follow":           {},
		"noindex, follow":         {NoIndex: true},
		"noindex nofollow":        {NoIndex: true, NoFollow: true},
		"nosnippet,noarchive":     {NoSnippet: true, NoArchive: true},
		"max-snippet:0":           {NoSnippet: true},
		"max-snippet:50, noindex": {NoIndex: true},
		"nocache":                 {NoArchive: true},
		"unknown, , ":             {},
	} {
		var d Directives
		d.parseMetaRobots(content)
		if d != want {
			t.Errorf("%q: %+v, want %+v", content, d, want)
		}
	}
}

func TestXRobotsTagAppliesUnprefixedAndOwnAgentDirectivesOnly(t *testing.T) {
	agents := []string{"crawlspace", "examplebot"}
	for value, want := range map[string]Directives{
		"noindex":                                                   {NoIndex: true},
		"googlebot: noindex":                                        {},
		"crawlspace: noindex":                                       {NoIndex: true},
		"ExampleBot: nofollow":                                      {NoFollow: true},
		"CRAWLSPACE:noarchive":                                      {NoArchive: true},
		"googlebot: noindex, crawlspace: nofollow":                  {NoFollow: true},
		"noarchive, googlebot: noindex, nofollow":                   {NoArchive: true},
		"unavailable_after: 25 Jun 2050 15:00:00 PST":               {},
		"unavailable_after: Sat, 25 Jun 2050 15:00:00 GMT, noindex": {NoIndex: true},
		"max-snippet: 0":                                            {NoSnippet: true},
		"googlebot: max-snippet: 0":                                 {},
		"none":                                                      {NoIndex: true, NoFollow: true},
	} {
		var d Directives
		d.parseXRobotsTag(value, agents)
		if d != want {
			t.Errorf("%q: %+v, want %+v", value, d, want)
		}
	}
}

func TestCharsetDecisions(t *testing.T) {
	latin1 := []byte("<p>caf\xe9 na\xefve \xfcber</p>")
	for _, tc := range []struct {
		name, ctype string
		body        []byte
		charset     string
		text        string
	}{
		{"utf8 BOM beats a header", "text/html; charset=iso-8859-1", []byte("\xef\xbb\xbf<p>caf\xc3\xa9</p>"), "utf-8", "café"},
		{"utf16le BOM", "text/html", []byte("\xff\xfe<\x00p\x00>\x00h\x00\xe9\x00"), "utf-16le", "hé"},
		{"header charset", "text/html; charset=ISO-8859-1", latin1, "windows-1252", "café naïve über"},
		{"header beats meta", "text/html; charset=utf-8", []byte(`<meta charset="iso-8859-1"><p>caf` + "\xc3\xa9</p>"), "utf-8", "café"},
		{"meta charset", "text/html", append([]byte(`<meta charset="latin1">`), latin1...), "windows-1252", "café naïve über"},
		{"meta http-equiv", "text/html", append([]byte(`<!-- <meta charset="shift_jis"> --><meta http-equiv="content-type" content="text/html;charset=ISO-8859-15">`), latin1...), "iso-8859-15", "café naïve über"},
		{"unknown header label falls to meta", "text/html; charset=bogus", append([]byte(`<meta charset="latin1">`), latin1...), "windows-1252", "café naïve über"},
		{"declared latin1 but valid UTF-8", "text/html; charset=iso-8859-1", []byte("<p>caf\xc3\xa9</p>"), "utf-8", "café"},
		{"meta utf-16 means utf-8", "text/html", []byte(`<meta charset="utf-16"><p>caf` + "\xc3\xa9</p>"), "utf-8", "café"},
		{"invalid UTF-8 is repaired", "text/html; charset=utf-8", []byte("<p>a\xffb</p>"), "utf-8", "a\ufffdb"},
		{"no declaration, Latin-1 bytes", "text/html", latin1, "windows-1252", "café naïve über"},
	} {
		x := newExtractor(t, nil)
		u, _ := url.Parse("http://h.test/")
		res, err := x.Extract(Page{URL: u, Header: http.Header{"Content-Type": {tc.ctype}}, Body: tc.body})
		if err != nil {
			t.Fatal(err)
		}
		if res.Charset != tc.charset || res.Doc.Body != tc.text {
			t.Errorf("%s: charset %q body %q, want %q %q", tc.name, res.Charset, res.Doc.Body, tc.charset, tc.text)
		}
	}
}

func TestMissingContentTypeIsSniffed(t *testing.T) {
	x := newExtractor(t, nil)
	u, _ := url.Parse("http://h.test/")
	res, err := x.Extract(Page{URL: u, Body: []byte("<!DOCTYPE html><html><p>x</p>")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Doc.ContentType != "text/html" {
		t.Errorf("content type %q", res.Doc.ContentType)
	}
}

func TestHeaderCanonicalIsUsedWhenTheHeadHasNone(t *testing.T) {
	x := newExtractor(t, nil)
	res := extract(t, x, "http://h.test/a/b.html", `<p>x</p>`, "Link", `</style.css>; rel=preload, <other.html#x>; rel="alternate canonical"`)
	if res.Canonical != "http://h.test/a/other.html" {
		t.Errorf("canonical %q", res.Canonical)
	}
	res = extract(t, x, "http://h.test/a/b.html", `<p>x</p><link rel="canonical" href="/in-body">`)
	if res.Canonical != "" {
		t.Errorf("a canonical link in the body was taken: %q", res.Canonical)
	}
}

func TestExtractIsSafeForConcurrentUse(t *testing.T) {
	cfg := goldenConfig(t)
	x := New(cfg, &cfg.Sources[0])
	pages := []string{"dc-og-metadata", "custom-mappings", "shift-jis-no-charset", "base-href", "broken"}
	want := make([]*Result, len(pages))
	for i, name := range pages {
		want[i], _ = x.Extract(goldenPage(t, goldenDir+"/"+name+".html"))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 20 {
				k := (g + i) % len(pages)
				got, err := x.Extract(goldenPage(t, goldenDir+"/"+pages[k]+".html"))
				if err != nil || !reflect.DeepEqual(got, want[k]) {
					t.Errorf("%s differs when extracted concurrently", pages[k])
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestPageWithoutURLIsAnError(t *testing.T) {
	x := newExtractor(t, nil)
	if _, err := x.Extract(Page{Body: []byte("<p>x</p>")}); err == nil {
		t.Error("no error")
	}
}

func FuzzExtract(f *testing.F) {
	f.Add([]byte(`<title>t</title><p class="noindex">x<!--noindex--><a href="../a#b">y</a></p>`), "text/html")
	f.Add([]byte("<svg><title><style>x</style></title><a href=//h>\xff</a></svg><h1><h2>z"), "text/html; charset=shift_jis")
	f.Add([]byte("\xff\xfe<\x00p\x00>\x00"), "")
	f.Add([]byte(`<meta name="robots" content="none"><base href="http://[::1]/"><table><td><p><li>`), "text/html; charset=utf-8")
	cfg := goldenConfig(f)
	x := New(cfg, &cfg.Sources[0])
	u, _ := url.Parse("http://www.example.test/dir/page.html")
	f.Fuzz(func(t *testing.T, body []byte, ctype string) {
		res, err := x.Extract(Page{URL: u, Header: http.Header{"Content-Type": {ctype}, "X-Robots-Tag": {ctype}}, Body: body})
		if err != nil {
			t.Fatal(err)
		}
		d := res.Doc
		for _, s := range append([]string{d.Title, d.Body, d.Description, d.Language, res.Canonical}, append(d.Headings, d.Keywords...)...) {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 in %q", s)
			}
		}
		if d.Title == "" {
			t.Fatal("empty title")
		}
		for _, l := range res.Links {
			if !strings.HasPrefix(l.URL, "http://") && !strings.HasPrefix(l.URL, "https://") || strings.Contains(l.URL, "#") {
				t.Fatalf("bad link %q", l.URL)
			}
		}
	})
}

func TestOnlyTheFirstTitleIsTheTitleAndNoTitleIsBodyText(t *testing.T) {
	x := newExtractor(t, nil)
	res := extract(t, x, "http://h.test/", `<title>First</title><body><p>Text</p><title>Second</title><svg><title>Icon</title></svg>`)
	if res.Doc.Title != "First" || res.Doc.Body != "Text" {
		t.Errorf("title %q body %q", res.Doc.Title, res.Doc.Body)
	}
}

func TestDeepNestingStillKeepsScriptsOutOfTheBody(t *testing.T) {
	x := newExtractor(t, nil)
	depth := maxStack + 100
	page := strings.Repeat("<div>", depth) + `<script>var secret = 1;</script><style>p{}</style>deep text` +
		strings.Repeat("</div>", depth) + `<p>after</p><a href="/deep-link">x</a>`
	res := extract(t, x, "http://h.test/", page)
	if strings.Contains(res.Doc.Body, "secret") || strings.Contains(res.Doc.Body, "p{}") {
		t.Errorf("script or style text in the body: %q", res.Doc.Body)
	}
	if !strings.Contains(res.Doc.Body, "deep text") || !strings.HasSuffix(res.Doc.Body, "after\nx") || len(res.Links) != 1 {
		t.Errorf("body %q links %v", res.Doc.Body, res.Links)
	}
}
