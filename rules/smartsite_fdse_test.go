package rules

import (
	"fmt"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/urlnorm"
)

// Smartsite: "a visited url must match one of the configured start urls:
// the host must match ... the scheme must match".
func TestStayOnStartHostsNeedsTheStartURLsHostAndScheme(t *testing.T) {
	s := compileYAML(t, source(`start_urls: ["https://doc.seneca.nl/start", "http://www.seneca.nl:8080/"]`)).Source("site")
	checkTable(t, s, []want{
		{"https://doc.seneca.nl/other/page", true, ReasonNone},
		{"HTTPS://DOC.seneca.nl:443/x", true, ReasonNone},
		{"http://doc.seneca.nl/other/page", false, ReasonOffsite},
		{"https://www.seneca.nl/", false, ReasonOffsite},
		{"http://www.seneca.nl:8080/a", true, ReasonNone},
		{"http://www.seneca.nl/a", false, ReasonOffsite},
		{"https://seneca.nl/", false, ReasonOffsite},
	})
	if d := decide(t, s, "http://doc.seneca.nl/", 1); !strings.HasSuffix(d.Rule, "sources[0].stay_on_start_hosts") {
		t.Errorf("offsite rule = %q", d.Rule)
	}
}

func TestSmartsiteDefaultIgnoredExtensionsAreRefusedBeforeAnyRequest(t *testing.T) {
	s := compileYAML(t, source(`start_urls: ["http://site.example/"]`)).Source("site")
	if len(DefaultIgnoredExtensions) != 50 {
		t.Fatalf("the seed's default list has 50 extensions, got %d", len(DefaultIgnoredExtensions))
	}
	for _, ext := range DefaultIgnoredExtensions {
		checkTable(t, s, []want{{"http://site.example/files/a." + ext, false, ReasonIgnoredExtension}})
	}
	checkTable(t, s, []want{
		{"http://site.example/Movie.MP4", false, ReasonIgnoredExtension},
		{"http://site.example/a.mp4;jsessionid=1", false, ReasonIgnoredExtension},
		{"http://site.example/a.mp4?id=1", false, ReasonIgnoredExtension},
		{"http://site.example/page.html", true, ReasonNone},
		{"http://site.example/report.pdf", true, ReasonNone},
		{"http://site.example/mp4/", true, ReasonNone},
		{"http://site.example/v1.2/guide", true, ReasonNone},
		{"http://site.example/watch", true, ReasonNone},
	})
	if d := decide(t, s, "http://site.example/a.gif", 1); d.Rule != "crawl.yaml:3:11 sources[0]" && !strings.HasSuffix(d.Rule, "ignored_extensions[0]") {
		t.Errorf("rule = %q", d.Rule)
	}
}

func TestExtraAndAlwaysIgnoredExtensions(t *testing.T) {
	s := compileYAML(t, "allow_private_networks: true\nalways_ignored_extensions: [bak]\nsources:\n  - name: site\n"+
		"    start_urls: [\"http://site.example/\"]\n    ignored_extensions: [default, .LOG, old]\n").Source("site")
	checkTable(t, s, []want{
		{"http://site.example/a.log", false, ReasonIgnoredExtension},
		{"http://site.example/a.old", false, ReasonIgnoredExtension},
		{"http://site.example/a.bak", false, ReasonIgnoredExtension},
		{"http://site.example/a.zip", false, ReasonIgnoredExtension},
	})
	if d := decide(t, s, "http://site.example/a.bak", 1); !strings.HasSuffix(d.Rule, "always_ignored_extensions[0]") {
		t.Errorf("rule = %q", d.Rule)
	}
	none := compileYAML(t, "allow_private_networks: true\nalways_ignored_extensions: [bak]\nsources:\n  - name: site\n"+
		"    start_urls: [\"http://site.example/\"]\n    ignored_extensions: []\n").Source("site")
	checkTable(t, none, []want{
		{"http://site.example/a.zip", true, ReasonNone},
		{"http://site.example/a.bak", false, ReasonIgnoredExtension},
	})
}

// An extensionless URL answering video/mp4 is skipped before its body is
// read, because mp4 is ignored and video/mp4 is its type.
func TestExtensionlessURLIsDecidedByTheMIMETypeOfItsIgnoredExtension(t *testing.T) {
	s := compileYAML(t, source(`start_urls: ["http://site.example/"]`)).Source("site")
	d := s.DecideMIME("video/mp4", "http://site.example/watch")
	if d.Crawl || d.Reason != ReasonIgnoredExtension || !strings.Contains(d.Rule, "ignored_extensions") {
		t.Errorf("extensionless video/mp4: %+v", d)
	}
	if d := s.DecideMIME("image/png", "http://site.example/logo"); d.Reason != ReasonIgnoredExtension {
		t.Errorf("extensionless image/png: %+v", d)
	}
	// With an extension the URL check already ran; the type filter decides.
	if d := s.DecideMIME("video/mp4", "http://site.example/watch.php"); d.Reason != ReasonMIMEType {
		t.Errorf("video/mp4 from watch.php: %+v", d)
	}
	if d := s.DecideMIME("text/html", "http://site.example/watch"); !d.Crawl {
		t.Errorf("extensionless HTML: %+v", d)
	}
	// A type listed in mime_types is indexed even if an ignored extension shares it.
	x := compileYAML(t, source(`start_urls: ["http://site.example/"]`, `mime_types: [text/html, application/xml]`)).Source("site")
	if d := x.DecideMIME("application/xml", "http://site.example/feed"); !d.Crawl {
		t.Errorf("listed application/xml refused: %+v", d)
	}
}

// The seed's calendar: .../calendar?year=2018&month=11&day=8 must not lead
// to an endless walk, while item?id=12345 is one page per id.
func TestQueryFilterKeepsHonoredParametersAndDropsCalendarOnes(t *testing.T) {
	s := compileYAML(t, source(`start_urls: ["http://site.example/"]`)).Source("site")
	base := "http://site.example/calendar?year=2018&month=11&day=8"
	for ref, want := range map[string]string{
		"?year=2018&month=11&day=9": "http://site.example/calendar",
		"item?id=12345":             "http://site.example/item?id=12345",
		"item?sort=asc&id=12345":    "http://site.example/item?id=12345",
	} {
		found, err := urlnorm.Resolve(base, ref)
		if got := s.Key(found); err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}
	more := compileYAML(t, source(`start_urls: ["http://site.example/"]`, `honored_query_params: [id, nr]`)).Source("site")
	if got, _ := more.Normalize("http://site.example/item?nr=2&id=1&day=8"); got != "http://site.example/item?id=1&nr=2" {
		t.Errorf("with nr honoured: %q", got)
	}
}

// FDSE: links must use an allowed protocol.
func TestSchemesOutsideTheListAreRefused(t *testing.T) {
	s := compileYAML(t, source(`start_urls: ["http://site.example/"]`, `stay_on_start_hosts: false`, `schemes: [http]`)).Source("site")
	checkTable(t, s, []want{
		{"http://site.example/a", true, ReasonNone},
		{"https://site.example/a", false, ReasonScheme},
		{"ftp://site.example/a", false, ReasonScheme},
		{"gopher://site.example/a", false, ReasonScheme},
	})
	def := compileYAML(t, source(`start_urls: ["http://site.example/"]`, `stay_on_start_hosts: false`)).Source("site")
	checkTable(t, def, []want{
		{"https://site.example/a", true, ReasonNone},
		{"ftp://site.example/a", false, ReasonScheme},
	})
}

func TestURLLongerThanMaxURLLengthIsRefused(t *testing.T) {
	s := compileYAML(t, source(`start_urls: ["http://site.example/"]`, `max_url_length: 128`)).Source("site")
	base := "http://site.example/"
	checkTable(t, s, []want{
		{base + strings.Repeat("a", 128-len(base)), true, ReasonNone},
		{base + strings.Repeat("a", 129-len(base)), false, ReasonURLTooLong},
	})
}

// FDSE: "the crawler will ignore links of the form HREF="file.pl?test"
// because there is a question mark in the address". follow_query_strings:
// false judges the URL as found, whatever the query filter would keep.
func TestFollowQueryStringsFalseRefusesURLsFoundWithAQuery(t *testing.T) {
	for _, honored := range []string{`["*"]`, `[id]`, `[]`} {
		s := compileYAML(t, source(`start_urls: ["http://site.example/"]`, `follow_query_strings: false`, `honored_query_params: `+honored)).Source("site")
		checkTable(t, s, []want{
			{"http://site.example/file.pl?test", false, ReasonQueryString},
			{"http://site.example/item?id=1", false, ReasonQueryString},
			{"http://site.example/file.pl", true, ReasonNone},
			{"http://site.example/file.pl?", true, ReasonNone}, // an empty query is no query
		})
		found := "http://site.example/file.pl?test"
		if u, d := s.DecideFound(found, 1); u != found || !strings.HasSuffix(d.Rule, "sources[0].follow_query_strings") {
			t.Errorf("honored %s: DecideFound refuses %q by %q, want the URL as found by follow_query_strings", honored, u, d.Rule)
		}
	}
}

// The longest max_url_length a config may set is what the state store
// holds (config refuses more): with it, a URL one byte longer is refused.
func TestAURLLongerThanTheStateStoreHoldsIsRefusedAtTheLongestMaxURLLength(t *testing.T) {
	s := compileYAML(t, source(`start_urls: ["http://site.example/"]`, fmt.Sprintf("max_url_length: %d", urlnorm.MaxLength))).Source("site")
	base := "http://site.example/"
	checkTable(t, s, []want{
		{base + strings.Repeat("a", urlnorm.MaxLength-len(base)), true, ReasonNone},
		{base + strings.Repeat("a", urlnorm.MaxLength+1-len(base)), false, ReasonURLTooLong},
	})
}

// FDSE's "Index Entire Site": the start URL's directory and below.
func TestStayInStartDirKeepsToTheStartDirectoryAndBelow(t *testing.T) {
	s := compileYAML(t, source(
		`start_urls: ["http://site.example/docs/index.html", "http://site.example/blog/"]`,
		`stay_in_start_dir: true`,
	)).Source("site")
	checkTable(t, s, []want{
		{"http://site.example/docs/", true, ReasonNone},
		{"http://site.example/docs/a/b.html", true, ReasonNone},
		{"http://site.example/blog/2020/post", true, ReasonNone},
		{"http://site.example/", false, ReasonOutsideStartDir},
		{"http://site.example/docsx/", false, ReasonOutsideStartDir},
		{"http://site.example/other/docs/", false, ReasonOutsideStartDir},
	})
}

func TestOffsiteLinksCanBeAllowed(t *testing.T) {
	s := compileYAML(t, source(`start_urls: ["http://site.example/"]`, `stay_on_start_hosts: false`)).Source("site")
	checkTable(t, s, []want{{"http://elsewhere.example/", true, ReasonNone}})
}

// Checks run cheapest first; a URL failing several reports the first.
func TestCheckOrderGivesTheFirstFailingReason(t *testing.T) {
	s := compileYAML(t, source(
		`start_urls: ["http://site.example/keep/"]`,
		`schemes: [http]`,
		`max_url_length: 40`,
		`include: [/keep/]`,
		`exclude: [/drop/]`,
		`rules: ["forbid prefix http://site.example/drop/*"]`,
	)).Source("site")
	checkTable(t, s, []want{
		{"https://site.example/drop/a.gif", false, ReasonScheme},
		{"http://site.example/drop/" + strings.Repeat("x", 30), false, ReasonURLTooLong},
		{"http://site.example/drop/a.gif", false, ReasonIgnoredExtension},
		{"http://other.example/drop/", false, ReasonOffsite},
		{"http://site.example/drop/a", false, ReasonForbiddenPrefix},
		{"http://site.example/x/drop/", false, ReasonNotIncluded},
		{"http://site.example/keep/drop/", false, ReasonExcluded},
	})
}

func TestDecideRefusesWhatIsNotAURL(t *testing.T) {
	s := compileYAML(t, source(`start_urls: ["http://site.example/"]`)).Source("site")
	for _, u := range []string{"", "site.example/a", "http://", "mailto:x@y"} {
		if d := s.Decide(u, 0); d.Crawl || d.Reason != ReasonInvalid {
			t.Errorf("Decide(%q) = %+v", u, d)
		}
	}
}

func TestRouteGivesADiscoveredURLToTheSourceThatCrawlsIt(t *testing.T) {
	set := compileYAML(t, "allow_private_networks: true\nsources:\n"+
		"  - name: docs\n    start_urls: [\"http://docs.example/\"]\n    exclude: [/private/]\n"+
		"  - name: blog\n    start_urls: [\"http://blog.example/\"]\n"+
		"  - name: all\n    start_urls: [\"http://docs.example/private/\"]\n    include: [/private/]\n")
	docs, blog, all := set.Source("docs"), set.Source("blog"), set.Source("all")
	for _, tc := range []struct {
		url  string
		from *Source
		want *Source
		ok   bool
	}{
		{"http://docs.example/a", docs, docs, true},
		{"http://blog.example/post", docs, blog, true},
		{"http://docs.example/private/x", docs, all, true},
		{"http://elsewhere.example/", docs, docs, false},
		{"http://blog.example/post", nil, blog, true},
		{"http://elsewhere.example/", nil, docs, false},
	} {
		src, u, d := set.Route(tc.url, 1, tc.from)
		if src != tc.want || u != tc.url || d.Crawl != tc.ok || (d.Crawl && d.Source != tc.want.Name) {
			name := "<nil>"
			if src != nil {
				name = src.Name
			}
			t.Errorf("Route(%s) = %s %s %+v; want %s crawl=%v", tc.url, name, u, d, tc.want.Name, tc.ok)
		}
	}
	// Refused by its own source for a reason other than offsite, a URL is
	// explained by that source, not by the first one.
	src, _, d := set.Route("http://blog.example/a.exe", 1, nil)
	if src != blog || d.Reason != ReasonIgnoredExtension {
		t.Errorf("Route(a.exe) = %v %+v", src.Name, d)
	}
}

func TestRouteRawGivesTheURLEachSourceWouldFetch(t *testing.T) {
	set := compileYAML(t, "allow_private_networks: true\nsources:\n"+
		"  - name: docs\n    start_urls: [\"http://docs.example/\"]\n"+
		"  - name: shop\n    start_urls: [\"http://shop.example/\"]\n    honored_query_params: [sku]\n"+
		"    exclude: [day=3]\n")
	src, u, found, d, err := set.RouteRaw("HTTP://Shop.example/item?sku=1&day=2#x", 0)
	if err != nil || src.Name != "shop" || u != "http://shop.example/item?sku=1" || found != "http://shop.example/item?sku=1&day=2" || !d.Crawl {
		t.Errorf("RouteRaw = %v %q %q %+v %v", src, u, found, d, err)
	}
	src, u, _, d, _ = set.RouteRaw("http://docs.example/a?sku=1&id=3", 0)
	if src.Name != "docs" || u != "http://docs.example/a?id=3" || !d.Crawl {
		t.Errorf("RouteRaw = %v %q %+v", src.Name, u, d)
	}
	// Refused as found: the URL given back is the one refused, as found.
	src, u, _, d, _ = set.RouteRaw("http://shop.example/item?sku=1&day=3", 0)
	if src.Name != "shop" || u != "http://shop.example/item?day=3&sku=1" || d.Reason != ReasonExcluded {
		t.Errorf("RouteRaw = %v %q %+v", src.Name, u, d)
	}
	if _, _, _, d, err := set.RouteRaw("mailto:x@example", 0); err == nil || d.Reason != ReasonInvalid || d.Crawl {
		t.Errorf("RouteRaw(mailto) = %+v, %v", d, err)
	}
	if src, _, _, d, _ := set.RouteRaw("http://shop.example/a.exe", 0); src.Name != "shop" || d.Reason != ReasonIgnoredExtension {
		t.Errorf("a refused URL is explained by the source of its host: %v %+v", src.Name, d)
	}
}
