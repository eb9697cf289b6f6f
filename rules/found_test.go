package rules

import (
	"slices"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/urlnorm"
)

// decideFound judges raw as a found link and returns the URL the decision
// is about with the decision.
func decideFound(t *testing.T, s *Source, raw string) (string, Decision) {
	t.Helper()
	found, err := urlnorm.Found(raw)
	if err != nil {
		t.Fatal(err)
	}
	return s.DecideFound(found, 1)
}

// Funnelback's example works under the default query filter, which drops
// date and OpenImageResource: the patterns see the URL as found. Before,
// it only worked with every parameter honoured.
func TestFunnelbackExcludeExampleHoldsUnderTheDefaultQueryFilter(t *testing.T) {
	s := compileYAML(t, source(
		`start_urls: ["http://site.example/"]`,
		`exclude: ['regexp:search\?date=|\?OpenImageResource']`,
	)).Source("site")
	checkTable(t, s, []want{
		{"http://site.example/search?date=2018-11-08", false, ReasonExcluded},
		{"http://site.example/img?OpenImageResource", false, ReasonExcluded},
		{"http://site.example/search", true, ReasonNone},
		{"http://site.example/search?q=date", true, ReasonNone},
	})
	// The refusal names the URL as found, the one a page links to.
	if u, _ := decideFound(t, s, "http://site.example/search?date=2018-11-08#top"); u != "http://site.example/search?date=2018-11-08" {
		t.Errorf("refused URL %q, want the URL as found", u)
	}
	// Let in, the URL is the one the filter makes of it.
	if u, d := decideFound(t, s, "http://site.example/search?q=date&id=4"); u != "http://site.example/search?id=4" || !d.Crawl {
		t.Errorf("DecideFound = %q %+v, want the rewrite crawled", u, d)
	}
}

// Every refusing check judges the URL as found and then the URL fetched;
// what the fetched page becomes is the fetched URL's decision, the same
// whichever spelling of it was found first.
func TestFoundURLAndItsRewriteAreBothJudgedAndTheRewriteDecidesThePage(t *testing.T) {
	s := compileYAML(t, "allow_private_networks: true\nextra_fields: {extra_kind: keyword}\nsources:\n  - name: site\n"+
		"    start_urls: [\"http://site.example/\"]\n"+
		"    exclude: [sessionid=, 'regexp:/print$']\n"+
		"    kill_exact: [\"http://site.example/k2\"]\n"+
		"    crawl_rules:\n"+
		"      - {match: {inquery: print}, index: false, priority: 2, add_meta: {kind: print}}\n"+
		"      - {match: {inquery: debug}, ignore: true}\n").Source("site")
	for _, tc := range []struct {
		raw, u string
		d      Decision
	}{
		// Refused as found: the URL as found.
		{"http://site.example/a?sessionid=9", "http://site.example/a?sessionid=9", Decision{Reason: ReasonExcluded}},
		{"http://site.example/a?debug=1", "http://site.example/a?debug=1", Decision{Reason: ReasonRuleIgnore}},
		// Let in as found, refused as fetched: the URL fetched.
		{"http://site.example/print?x=1", "http://site.example/print", Decision{Reason: ReasonExcluded}},
		// Let in: the rewrite's decision, whatever the spelling said.
		{"http://site.example/doc?view=print", "http://site.example/doc", Decision{Crawl: true, Index: true, Follow: true}},
		{"http://site.example/k2?utm_source=mail", "http://site.example/k2", Decision{Crawl: true, Follow: true, Reason: ReasonKilled}},
	} {
		u, d := decideFound(t, s, tc.raw)
		if u != tc.u || d.Crawl != tc.d.Crawl || d.Index != tc.d.Index || d.Follow != tc.d.Follow || d.Reason != tc.d.Reason {
			t.Errorf("%s: %q %+v\nwant %q %+v", tc.raw, u, d, tc.u, tc.d)
		}
		if d.Crawl && (d.Priority != 0 || d.Meta != nil) {
			t.Errorf("%s: priority %d, meta %v: a spelling's crawl rule decided for the page", tc.raw, d.Priority, d.Meta)
		}
	}
	// The same rule on a URL fetched as found does decide.
	if _, d := decideFound(t, s, "http://site.example/doc?view=print&id=print"); d.Index || d.Priority != 2 || d.Meta["extra_kind"][0] != "print" {
		t.Errorf("a rule on a kept parameter: %+v", d)
	}
}

func TestStartURLTheQueryFilterRewritesIsWarnedAboutAndFetchedRewritten(t *testing.T) {
	set := compileYAML(t, source(
		`start_urls: ["http://site.example/list?sort=asc&id=3&day=2", "http://site.example/"]`,
		`kill_exact: ["http://site.example/page?print=1"]`,
	))
	want := []string{
		`crawl.yaml:4:18: sources[0].start_urls[0]: the query filter drops sort, day from start URL http://site.example/list?sort=asc&id=3&day=2, so http://site.example/list?id=3 is fetched instead (list them in honored_query_params to keep them)`,
		`crawl.yaml:5:18: sources[0].kill_exact[0]: the query filter drops print from http://site.example/page?print=1, so no document has this URL and the entry kills nothing: the page is fetched and indexed as http://site.example/page (list it in honored_query_params to keep it)`,
	}
	if got := set.Warnings(); !slices.Equal(got, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := set.Source("site").StartURLs(); !slices.Equal(got, []string{"http://site.example/list?id=3", "http://site.example/"}) {
		t.Errorf("start URLs %q", got)
	}
	if w := compileYAML(t, source(`start_urls: ["http://site.example/item?id=3"]`)).Warnings(); w != nil {
		t.Errorf("a start URL the filter keeps whole is warned about: %q", w)
	}
}

func TestStartURLRefusedAsFoundIsAConfigError(t *testing.T) {
	errs := compileErrors(t, source(
		`start_urls: ["http://site.example/list?sort=asc"]`,
		`exclude: [sort=]`,
	))
	if !errorsMention(errs, "sources[0].start_urls[0]", "start URL http://site.example/list?sort=asc is outside", "excluded", "sources[0].exclude[0]") {
		t.Errorf("errors: %v", errs)
	}
}

// Links without a query, the most common, cost DecideFound nothing over
// Decide: no allocation.
func TestDecideFoundAllocatesNothingForAURLWithoutAQuery(t *testing.T) {
	s := compileYAML(t, source(`start_urls: ["http://site.example/"]`, `exclude: [/drafts/]`)).Source("site")
	for _, u := range []string{"http://site.example/docs/a.html", "http://site.example/drafts/b", "http://site.example/item?id=7"} {
		if n := testing.AllocsPerRun(100, func() { s.DecideFound(u, 1) }); n != 0 {
			t.Errorf("DecideFound(%s) allocates %v times", u, n)
		}
	}
}

// A rule about a query judges it as the site wrote it, parameters in their
// order: the link /list?sort=asc&page=2 starts with /list?sort=, whatever
// the key it is stored under (/list?page=2&sort=asc) says.
func TestRulesJudgeTheQueryInTheOrderTheSiteWroteIt(t *testing.T) {
	s := compileYAML(t, source(
		`start_urls: ["http://site.example/"]`,
		`honored_query_params: ["*"]`,
		`exclude: ['regexp:/list\?sort=']`,
		`rules: ["forbid prefix http://site.example/table?order=*"]`,
		"crawl_rules: [{match: {atom: {field: url, kind: prefix, value: \"http://site.example/feed?format=\"}}, ignore: true}]",
	)).Source("site")
	for _, tc := range []struct {
		raw, u string
		reason Reason
		crawl  bool
	}{
		{"http://site.example/list?sort=asc&page=2", "http://site.example/list?page=2&sort=asc", ReasonExcluded, false},
		{"http://site.example/list?page=2&sort=asc", "http://site.example/list?page=2&sort=asc", ReasonNone, true},
		{"http://site.example/table?order=up&id=1", "http://site.example/table?id=1&order=up", ReasonForbiddenPrefix, false},
		{"http://site.example/table?id=1&order=up", "http://site.example/table?id=1&order=up", ReasonNone, true},
		{"http://site.example/feed?format=rss&a=1", "http://site.example/feed?a=1&format=rss", ReasonRuleIgnore, false},
	} {
		u, d := decideFound(t, s, tc.raw)
		if u != tc.u || d.Crawl != tc.crawl || d.Reason != tc.reason {
			t.Errorf("%s: %q %+v; want %q, %s", tc.raw, u, d, tc.u, tc.reason)
		}
	}
}
