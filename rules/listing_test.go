package rules

import (
	"slices"
	"strings"
	"testing"
)

// A sitemap or feed file is a request the crawler makes: the checks of
// where requests may go refuse it as they refuse a page, those that choose
// which pages the index holds do not.
func TestDecideListingAppliesTheChecksOfWhereRequestsGoAndNotThoseOfWhichPagesAreKept(t *testing.T) {
	set := compileYAML(t, source(
		`start_urls: ["https://site.example/docs/"]`,
		`stay_in_start_dir: true`,
		`follow_query_strings: false`,
		`max_path_depth: 2`,
		`include: ["/docs/"]`,
		`exclude: ["/private/"]`,
		`rules: ["forbid domain cdn.site.example", "forbid prefix https://site.example/old/"]`,
		`crawl_rules: [{match: {path: /ignored/}, ignore: true}]`,
		`schemes: [https]`,
	))
	s := set.Source("site")
	for _, w := range []want{
		// Refused as pages, read as files.
		{"https://site.example/sitemap.xml", true, ""},
		{"https://site.example/sitemaps/news.xml.gz?page=2", true, ""},
		{"https://site.example/a/b/c/feed.rss", true, ""},
		// Where requests may not go.
		{"http://site.example/sitemap.xml", false, ReasonScheme},
		{"https://other.example/sitemap.xml", false, ReasonOffsite},
		{"https://cdn.site.example/sitemap.xml", false, ReasonOffsite},
		{"https://site.example/private/sitemap.xml", false, ReasonExcluded},
		{"https://site.example/old/sitemap.xml", false, ReasonForbiddenPrefix},
		{"https://site.example/ignored/sitemap.xml", false, ReasonRuleIgnore},
	} {
		d := s.DecideListing(w.url)
		if d.Crawl != w.crawl || d.Reason != w.reason {
			t.Errorf("DecideListing(%s): crawl=%v reason=%q rule=%q; want crawl=%v reason=%q", w.url, d.Crawl, d.Reason, d.Rule, w.crawl, w.reason)
		}
		if !w.crawl && d.Rule == "" && w.reason != ReasonScheme {
			t.Errorf("DecideListing(%s): refused by %s without naming the rule", w.url, d.Reason)
		}
	}
	// The same files as pages.
	for _, u := range []string{"https://site.example/sitemap.xml", "https://site.example/sitemaps/news.xml.gz?page=2", "https://site.example/a/b/c/feed.rss"} {
		if d := s.Decide(u, 0); d.Crawl {
			t.Errorf("Decide(%s) crawls it as a page; the test wants a URL refused as one", u)
		}
	}

	open := compileYAML(t, source(`start_urls: ["https://site.example/"]`, `stay_on_start_hosts: false`, `rules: ["forbid domain cdn.site.example"]`)).Source("site")
	if d := open.DecideListing("https://cdn.site.example/sitemap.xml"); d.Crawl || d.Reason != ReasonForbiddenDomain {
		t.Errorf("a forbidden domain's sitemap: crawl=%v reason=%q", d.Crawl, d.Reason)
	}
	if d := open.DecideListing("https://elsewhere.example/sitemap.xml"); !d.Crawl {
		t.Errorf("a sitemap on another host with stay_on_start_hosts false: refused as %s", d.Reason)
	}
}

// A sitemap or feed of the config that the crawl space refuses is a
// warning placed at its line: it would never be read.
func TestASitemapOrFeedTheCrawlSpaceRefusesIsAWarningAtItsLine(t *testing.T) {
	set := compileYAML(t, source(
		`start_urls: ["https://site.example/"]`,
		`exclude: ["/private/"]`,
		`sitemaps: ["https://site.example/sitemap.xml", "https://site.example/private/sitemap.xml"]`,
		`feeds: ["https://other.example/feed.xml"]`,
	))
	want := []string{
		"crawl.yaml:6:52: sources[0].sitemaps[1]: https://site.example/private/sitemap.xml is outside the source's crawl space, so it is never read: excluded (crawl.yaml:5:15 sources[0].exclude[0])",
		"crawl.yaml:7:13: sources[0].feeds[0]: https://other.example/feed.xml is outside the source's crawl space, so it is never read: offsite (crawl.yaml:3:5 sources[0].stay_on_start_hosts)",
	}
	if got := set.Warnings(); !slices.Equal(got, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
