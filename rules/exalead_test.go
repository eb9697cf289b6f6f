package rules

import (
	"reflect"
	"strings"
	"testing"
)

// crawlRuleSource compiles a source whose crawl_rules are the YAML lines
// given (already indented as list items under crawl_rules), after a first
// rule that accepts the start URL, so a test's rules never refuse it.
func crawlRuleSource(t *testing.T, rules ...string) *Source {
	t.Helper()
	lines := []string{`start_urls: ["http://start.example/start-page-of-tests"]`, `stay_on_start_hosts: false`,
		`honored_query_params: ["*"]`, `ignored_extensions: []`, `crawl_rules:`,
		`  - {match: {url: "http://start.example/start-page-of-tests"}, accept: true}`}
	for _, r := range rules {
		lines = append(lines, "  "+r)
	}
	yaml := "extra_fields: {extra_section: keyword, extra_team: keyword}\n" + source(lines...)
	return compileYAML(t, yaml).Source("site")
}

// ignored reports which URLs a source's crawl rules ignore.
func matches(t *testing.T, s *Source, table map[string]bool) {
	t.Helper()
	for u, want := range table {
		d := decide(t, s, u, 1)
		if got := d.Reason == ReasonRuleIgnore; got != want {
			t.Errorf("%s: matched=%v, want %v (%+v)", u, got, want, d)
		}
	}
}

// "<Domain val="foo.com" /> matches http://foo.com/ and http://bar.foo.com
// but not http://barfoo.com", and so does its expansion into atoms.
func TestExaleadDomainMatchesTheDomainAndSubdomainsNeverLookalikes(t *testing.T) {
	table := map[string]bool{
		"http://foo.com/": true, "http://bar.foo.com": true, "http://a.b.foo.com/x": true,
		"http://barfoo.com": false, "http://foo.com.evil.example/": false, "http://FOO.com/": true,
	}
	matches(t, crawlRuleSource(t, `- {match: {domain: foo.com}, ignore: true}`), table)
	matches(t, crawlRuleSource(t,
		`- match: {or: [{atom: {field: host, kind: suffix, value: .foo.com}}, {atom: {field: host, kind: exact, value: foo.com}}]}`,
		`  ignore: true`), table)
	// Escaped as the seed's note advises, the same.
	matches(t, crawlRuleSource(t,
		`- match: {or: [{atom: {field: host, kind: suffix, value: '\.foo\.com'}}, {atom: {field: host, kind: exact, value: 'foo\.com'}}]}`,
		`  ignore: true`), table)
}

func TestExaleadShortcuts(t *testing.T) {
	for _, tc := range []struct {
		rule  string
		table map[string]bool
	}{
		{`{path: /cgi-bin}`, map[string]bool{"http://foo.com/cgi-bin/x": true, "http://foo.com/CGI-BIN/x": true, "http://foo.com/a/cgi-bin": false}},
		{`{ext: .gif}`, map[string]bool{"http://foo.com/a.gif": true, "http://foo.com/A.GIF": true, "http://foo.com/agif": false, "http://foo.com/a.gif?x=1": true}},
		{`{host: www.wikipedia.org}`, map[string]bool{"http://www.wikipedia.org/": true, "http://en.wikipedia.org/": false}},
		{`{url: "http://en.wikipedia.org/wiki"}`, map[string]bool{"http://en.wikipedia.org/wiki": true, "HTTP://EN.wikipedia.org:80/wiki#top": true, "http://en.wikipedia.org/wiki/Go": false}},
		{`{scheme: https}`, map[string]bool{"https://foo.com/": true, "http://foo.com/": false}},
		{`{query: q=foo}`, map[string]bool{"http://foo.com/s?q=foo": true, "http://foo.com/s?q=foo&p=2": false, "http://foo.com/s": false}},
		{`{query: "b=2&a=1"}`, map[string]bool{"http://foo.com/s?a=1&b=2": true}},
		{`{query: ""}`, map[string]bool{"http://foo.com/s": true, "http://foo.com/s?a=1": false}},
		{`{inquery: q=foo}`, map[string]bool{"http://foo.com/s?p=2&q=foo": true, "http://foo.com/s?q=foobar": true, "http://foo.com/q=foo": false}},
		{`{length: {field: path, value: "[30:]"}}`, map[string]bool{"http://foo.com/" + strings.Repeat("p", 29): true, "http://foo.com/" + strings.Repeat("p", 28): false}},
		{`{length: {value: "[:10]"}}`, map[string]bool{"http://foo.com/123456789": true, "http://foo.com/1234567890": false}},
		{`{length: {field: host, value: "[11:12]"}}`, map[string]bool{"http://abcdefg.com/": true, "http://abcdefgh.com/": true, "http://abcdef.com/": false, "http://abcdefghi.com/": false}},
	} {
		s := crawlRuleSource(t, `- {match: `+tc.rule+`, ignore: true}`)
		t.Run(tc.rule, func(t *testing.T) { matches(t, s, tc.table) })
	}
}

func TestExaleadAtomKindsAndNorms(t *testing.T) {
	for _, tc := range []struct {
		atom  string
		table map[string]bool
	}{
		// The seed's example, case-sensitive.
		{`{field: path, kind: prefix, norm: none, value: /watch}`, map[string]bool{"http://foo.com/watch?v=1": true, "http://foo.com/Watch": false}},
		// The seed's litteral example.
		{`{field: url, kind: prefix, norm: none, value: "http://www.example.com/"}`, map[string]bool{"http://www.example.com/a": true, "http://example.com/": false}},
		// The default normalisation ignores case.
		{`{field: path, kind: prefix, value: /Watch}`, map[string]bool{"http://foo.com/watch": true, "http://foo.com/WATCH/x": true}},
		{`{field: path, kind: exact, norm: lower, value: /A}`, map[string]bool{"http://foo.com/a": true, "http://foo.com/ab": false}},
		{`{field: path, kind: suffix, norm: none, value: .PDF}`, map[string]bool{"http://foo.com/a.PDF": true, "http://foo.com/a.pdf": false}},
		// norm decodes escapes and drops accents.
		{`{field: path, kind: exact, norm: norm, value: /Cafe}`, map[string]bool{"http://foo.com/caf%C3%A9": true, "http://foo.com/CAFE": true, "http://foo.com/cafes": false}},
		{`{field: path, kind: exact, norm: none, value: /café}`, map[string]bool{"http://foo.com/caf%C3%A9": true, "http://foo.com/cafe": false}},
		{`{field: host, kind: exact, norm: norm, value: bücher.de}`, map[string]bool{"http://xn--bcher-kva.de/": true, "http://bucher.de/": true}},
		{`{field: host, kind: exact, value: bücher.de}`, map[string]bool{"http://xn--bcher-kva.de/": true, "http://bucher.de/": false}},
		// inside is a regular expression, anchored only as written.
		{`{field: path, kind: inside, value: '/\d{4}/\d{2}/'}`, map[string]bool{"http://foo.com/news/2018/11/x": true, "http://foo.com/news/x": false}},
		{`{field: url, kind: inside, norm: none, value: '^https://'}`, map[string]bool{"https://foo.com/": true, "http://foo.com/https://": false}},
		{`{field: query, kind: inside, value: 'SESSION='}`, map[string]bool{"http://foo.com/?session=1": true}},
		{`{field: query, kind: length, value: "[1:]"}`, map[string]bool{"http://foo.com/?a": true, "http://foo.com/": false}},
		{`{field: scheme, kind: exact, value: HTTP}`, map[string]bool{"http://foo.com/": true, "https://foo.com/": false}},
	} {
		s := crawlRuleSource(t, `- {match: {atom: `+tc.atom+`}, ignore: true}`)
		t.Run(tc.atom, func(t *testing.T) { matches(t, s, tc.table) })
	}
}

func TestExaleadBooleanTrees(t *testing.T) {
	s := crawlRuleSource(t, `- match: {and: [{domain: foo.com}, {not: {path: /cgi-bin}}, {or: [{ext: .html}, {ext: /}]}]}`, `  ignore: true`)
	matches(t, s, map[string]bool{
		"http://foo.com/":            true,
		"http://a.foo.com/x.html":    true,
		"http://foo.com/cgi-bin/":    false,
		"http://foo.com/x.php":       false,
		"http://barfoo.com/x.html":   false,
		"http://foo.com/d/cgi-bin/":  true,
		"http://foo.com/cgi-binx.gz": false,
	})
}

func TestExaleadActionsOfTheFirstMatchingRule(t *testing.T) {
	s := crawlRuleSource(t,
		`- {match: {path: /news/}, index: true, follow: false, priority: -2, add_meta: {section: news, team: web}}`,
		`- {match: {path: /hub/}, index: false, follow: true, accept: true, priority: 2}`,
		`- {match: {path: /other/}, source: site}`,
		`- {match: {path: /private/}, accept: false}`,
		`- {match: {path: /}, ignore: true}`,
	)
	news := decide(t, s, "http://foo.com/news/today", 1)
	if !news.Crawl || !news.Index || news.Follow || news.Priority != -2 || news.Reason != ReasonRuleNofollow ||
		!reflect.DeepEqual(news.Meta, map[string][]string{"extra_section": {"news"}, "extra_team": {"web"}}) ||
		!strings.HasSuffix(news.Rule, "crawl_rules[1]") {
		t.Errorf("news: %+v", news)
	}
	hub := decide(t, s, "http://foo.com/hub/", 1)
	if !hub.Crawl || hub.Index || !hub.Follow || hub.Priority != 2 || hub.Reason != ReasonRuleNoindex || hub.Meta != nil {
		t.Errorf("hub: %+v", hub)
	}
	if d := decide(t, s, "http://foo.com/other/", 1); !d.Crawl || !d.Index || !d.Follow || d.Source != "site" || d.Reason != ReasonNone {
		t.Errorf("other: %+v", d)
	}
	for _, u := range []string{"http://foo.com/private/x", "http://foo.com/misc"} {
		if d := decide(t, s, u, 1); d.Crawl || d.Reason != ReasonRuleIgnore {
			t.Errorf("%s: %+v", u, d)
		}
	}
}

// Every rule form is a gate: a crawl rule's actions apply to URLs the
// other forms let in, and cannot widen the crawl space past them.
func TestRuleFormsCombineWithinOneSource(t *testing.T) {
	yaml := "extra_fields: {extra_section: keyword}\n" + source(
		`start_urls: ["http://www.ibm.com/"]`,
		`rules: ["allow prefix http://www.ibm.com/public/*", "forbid domain evil.ibm.com", "allow domain *.ibm.com", "forbid domain *"]`,
		`stay_on_start_hosts: false`,
		`include: [ibm.com]`,
		`exclude: [/drafts/]`,
		`kill_patterns: [/index/]`,
		`crawl_rules:`,
		`  - {match: {path: /public/}, priority: -1, add_meta: {section: public}}`,
		`  - {match: {path: /drafts/}, index: true}`,
	)
	s := compileYAML(t, yaml).Source("site")
	checkTable(t, s, []want{
		{"http://evil.ibm.com/public/x", false, ReasonForbiddenDomain},
		{"http://www.ibm.com/public/drafts/x", false, ReasonExcluded},
		{"http://www.ibm.com/drafts/x", false, ReasonExcluded},
		{"http://www.example.com/ibm.com/", false, ReasonForbiddenDomain},
		{"http://www.ibm.com/public/index/", true, ReasonKilled},
		{"http://w3.ibm.com/", true, ReasonNone},
	})
	d := decide(t, s, "http://www.ibm.com/public/a", 1)
	if d.Priority != -1 || d.Meta["extra_section"][0] != "public" || !strings.HasSuffix(d.Rule, "crawl_rules[0]") {
		t.Errorf("public page: %+v", d)
	}
	d = decide(t, s, "http://w3.ibm.com/", 1)
	if !strings.HasSuffix(d.Rule, "rules[2]") {
		t.Errorf("an allowed URL names its allow domain rule, got %q", d.Rule)
	}
}

func TestExaleadBadValuesAreConfigErrors(t *testing.T) {
	for rule, want := range map[string]string{
		`{atom: {field: url, kind: inside, value: '(?<=/)x'}}`: "lookbehind",
		`{atom: {field: url, kind: inside, value: '(?=a)'}}`:   "lookahead",
		`{atom: {field: path, kind: length, value: "30"}}`:     "[30:]",
		`{atom: {field: fragment, kind: exact, value: x}}`:     "url, scheme, host, path",
		`{url: "not a url"}`: "not an absolute URL",
	} {
		errs := compileErrors(t, "allow_private_networks: true\nsources:\n  - name: site\n    start_urls: [\"http://foo.com/\"]\n"+
			"    crawl_rules:\n      - {match: "+rule+", index: false}\n")
		found := false
		for _, e := range errs {
			found = found || (strings.HasPrefix(e.Path, "sources[0].crawl_rules[0].match") && strings.Contains(e.Msg, want))
		}
		if !found {
			t.Errorf("%s: errors %v do not say %q", rule, errs, want)
		}
	}
}
