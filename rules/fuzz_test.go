package rules

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// FuzzCompile feeds arbitrary rule lines, patterns and crawl rule values to
// the compiler: it must return a Set or config errors, never panic, and a
// Set it returns must decide URLs without panicking.
func FuzzCompile(f *testing.F) {
	for _, s := range [][4]string{
		{"forbid domain server*.ibm.com", "regexp:search\\?date=|^https:", "/\\d{4}/", ".foo.com"},
		{"allow prefix http://sales.ibm.com/*fs/*", "/green/olive", "(?<=x)", "foo.com"},
		{"allow address [2001:db8::] [ffff::]", "regexp:(a)\\1", "[30:]", "b\\.c"},
		{"forbid address 0.0.0.0 0.0.0.0", "regexp:a*+", "^x$", "*"},
		{"allow domain [::1]:8080", "", "", ""},
		{"forbid http://*/*/*", "%zz", "(?i)CAFÉ", "bücher.de"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, rule, pattern, expr, value string) {
		// Loaded, so every default is set; the fuzzed values go in after
		// config's checks, which Compile must survive without.
		cfg, err := config.Parse("fuzz.yaml", []byte("allow_private_networks: true\nsources:\n  - name: s\n    start_urls: [\"http://start.example/\"]\n"))
		if err != nil {
			t.Fatal(err)
		}
		src := &cfg.Sources[0]
		src.Rules = []string{rule}
		src.Exclude = []string{pattern}
		src.KillExact = []string{value}
		src.CrawlRules = []config.CrawlRule{
			{Match: config.Match{Atom: &config.Atom{Field: "url", Kind: "inside", Value: expr}}, Priority: 1},
			{Match: config.Match{Or: []config.Match{
				{Domain: &value}, {Path: &value}, {InQuery: &value}, {Query: &value},
				{Atom: &config.Atom{Field: "path", Kind: "suffix", Norm: "norm", Value: value}},
				{Length: &config.Length{Field: "host", Value: value}},
			}}, Ignore: true},
		}
		set, err := Compile(cfg)
		if err != nil {
			var errs config.Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("Compile error %T %v is not config.Errors", err, err)
			}
			for _, e := range errs {
				if e.Msg == "" || e.File == "" {
					t.Fatalf("unpositioned error %+v", e)
				}
			}
			return
		}
		s := set.Source("s")
		for _, u := range []string{"http://start.example/", "http://sales.ibm.com/nfs/a", "https://x.foo.com:8443/a?b=c", "http://[::1]:8080/"} {
			checkDecision(t, s, u, 1, s.Decide(u, 1))
		}
	})
}

// checkDecision holds what every decision must satisfy.
func checkDecision(t *testing.T, s *Source, u string, depth int, d Decision) {
	t.Helper()
	switch {
	case !d.Crawl && (d.Index || d.Follow || d.Reason == ReasonNone):
		t.Fatalf("%s: refused without a reason or still indexed/followed: %+v", u, d)
	case d.Reason == ReasonNone && !(d.Crawl && d.Index && d.Follow):
		t.Fatalf("%s: no reason but not fully allowed: %+v", u, d)
	case d.Reason == ReasonKilled && (!d.Crawl || d.Index):
		t.Fatalf("%s: killed must be crawled, not indexed: %+v", u, d)
	case d.Priority < -2 || d.Priority > 2:
		t.Fatalf("%s: priority %d", u, d.Priority)
	}
	if again := s.Decide(u, depth); !reflect.DeepEqual(again, d) {
		t.Fatalf("%s: not deterministic: %+v then %+v", u, d, again)
	}
}

var fuzzYAML = `allow_private_networks: true
extra_fields: {extra_section: keyword}
sources:
  - name: fz
    start_urls: ["http://www.ibm.com/section-1/"]
    stay_on_start_hosts: false
    honored_query_params: [id, page]
    max_path_depth: 8
    include: [/section-, 'regexp:\.ibm\.com/(docs|api)/', ibm.com/blog]
    exclude: [/archive/, 'regexp:\?date=\d+|/cgi-bin/|\.pdf$', '%7E', /private]
    kill_patterns: [/index/, 'regexp:/hub-\d+$']
    rules:
      - forbid prefix http://www.ibm.com/section-*/private/*
      - allow prefix http://www.ibm.com/section-*
      - forbid http://*.ibm.com/*fs/*
      - forbid domain server*.ibm.com
      - allow domain *.ibm.com
      - allow domain www.lotus.com:443
      - forbid domain *
    crawl_rules:
      - {match: {and: [{domain: ibm.com}, {path: /section-9/}]}, priority: -2, add_meta: {section: nine}}
      - {match: {atom: {field: path, kind: inside, value: '/\d{4}/'}}, index: false}
      - {match: {ext: .PHP}, follow: false}
      - {match: {inquery: debug}, ignore: true}
`

// FuzzDecide checks the matcher on arbitrary URLs: it never panics, its
// decisions are consistent, and the indexed matchers (Aho-Corasick,
// radix trees) agree with a plain scan of every rule in order.
func FuzzDecide(f *testing.F) {
	for _, u := range []string{
		"http://www.ibm.com/section-1/a", "http://www.ibm.com/section-2/x/private/y", "http://server7.ibm.com/",
		"https://www.lotus.com/", "http://www.ibm.com/docs/a.pdf", "http://a.ibm.com/nfs/x?date=1",
		"http://www.ibm.com/section-9/hub-12", "http://www.ibm.com/section-3/2018/a.php?debug=1&id=2",
		"HTTP://WWW.IBM.COM:80/section-1/../section-9/%7Euser", "http://[::1]/section-1/",
	} {
		f.Add(u, 1)
	}
	cfg, err := config.Parse("fuzz.yaml", []byte(fuzzYAML))
	if err != nil {
		f.Fatal(err)
	}
	set, err := Compile(cfg)
	if err != nil {
		f.Fatal(err)
	}
	s := set.Source("fz")
	src := &cfg.Sources[0]
	f.Fuzz(func(t *testing.T, raw string, depth int) {
		s.Decide(raw, depth) // unnormalised input must not panic either
		if found, err := urlnorm.Found(raw); err == nil {
			checkFound(t, s, found, depth)
		}
		u, err := s.Normalize(raw)
		if err != nil {
			return
		}
		d := s.Decide(u, depth)
		checkDecision(t, s, u, depth, d)
		p, _ := urlnorm.Split(u)

		var scan scanResult
		s.pats.scan(u, &scan)
		for g, list := range [][]string{src.Include, src.Exclude, src.KillPatterns} {
			if got, want := s.pats.first(g, u, &scan), naiveFirst(list, u); got != want {
				t.Fatalf("%s: list %d: automaton says entry %d, a plain scan %d", u, g, got, want)
			}
		}
		wantDomain, wantPrefix := int32(noMatch), int32(noMatch)
		for i := range s.ibm.domains {
			dr := &s.ibm.domains[i]
			if (dr.port == "" || dr.port == p.EffectivePort()) && glob(dr.chunks, p.Host, false, false) {
				wantDomain = int32(i)
				break
			}
		}
		for i := range s.ibm.prefixes {
			if glob(s.ibm.prefixes[i].chunks, u, true, true) {
				wantPrefix = int32(i)
				break
			}
		}
		if got := s.ibm.decideDomain(p.Host, p.EffectivePort()); got != wantDomain {
			t.Fatalf("%s: domain index says rule %d, a plain scan %d", u, got, wantDomain)
		}
		if got := s.ibm.decidePrefix(u); got != wantPrefix {
			t.Fatalf("%s: prefix index says rule %d, a plain scan %d", u, got, wantPrefix)
		}
	})
}

// naiveFirst is the obvious first-match over a pattern list.
func naiveFirst(list []string, u string) int32 {
	for i, e := range list {
		if expr, ok := strings.CutPrefix(e, regexpPrefix); ok {
			if regexp.MustCompile(expr).MatchString(u) {
				return int32(i)
			}
		} else if strings.Contains(u, urlnorm.Escape(e)) {
			return int32(i)
		}
	}
	return noMatch
}

func TestGlobAgreesWithRegexpTranslation(t *testing.T) {
	for _, tc := range []struct {
		pattern, s       string
		openEnd, noSlash bool
	}{
		{"http://h/*fs/*", "http://h/nfs/x", true, true},
		{"http://h/*fs/*", "http://h/a/nfs/x", true, true},
		{"a*b*c", "axxbyyc", false, false},
		{"a*b*c", "axxbyycz", false, false},
		{"*.user.ibm.com", "joe.user.ibm.com", false, false},
		{"*.user.ibm.com", "user.ibm.com", false, false},
		{"h/*/*x", "h/a/bx/cx", true, true},
		{"h/*x/y", "h/ax/ax/y", true, true},
		{"*", "", false, false},
		{"a**b", "ab", false, false},
	} {
		star := ".*"
		if tc.noSlash {
			star = "[^/]*"
		}
		parts := strings.Split(tc.pattern, "*")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		expr := "^" + strings.Join(parts, star)
		if !tc.openEnd {
			expr += "$"
		}
		want := regexp.MustCompile(expr).MatchString(tc.s)
		if got := glob(strings.Split(tc.pattern, "*"), tc.s, tc.openEnd, tc.noSlash); got != want {
			t.Errorf("glob(%q, %q) = %v, regexp %s says %v", tc.pattern, tc.s, got, expr, want)
		}
	}
}

// FuzzGlob checks the wildcard matcher of domain and prefix rules against
// its translation into a regular expression.
func FuzzGlob(f *testing.F) {
	f.Add("http://h/*fs/*", "http://h/nfs/x", true, true)
	f.Add("*.user.ibm.com", "mary.smith.user.ibm.com", false, false)
	f.Add("a*b*a*b", "abababab", false, false)
	f.Fuzz(func(t *testing.T, pattern, s string, openEnd, noSlash bool) {
		if len(pattern) > 64 || len(s) > 256 {
			return
		}
		star := "(?s:.*)"
		if noSlash {
			star = "[^/]*"
		}
		parts := strings.Split(pattern, "*")
		quoted := make([]string, len(parts))
		for i := range parts {
			quoted[i] = regexp.QuoteMeta(parts[i])
		}
		expr := `\A` + strings.Join(quoted, star)
		if !openEnd {
			expr += `\z`
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return // invalid UTF-8 in the pattern
		}
		if got, want := glob(parts, s, openEnd, noSlash), re.MatchString(s); got != want {
			t.Fatalf("glob(%q, %q, openEnd=%v, noSlash=%v) = %v, %s says %v", pattern, s, openEnd, noSlash, got, expr, want)
		}
	})
}

// checkFound checks DecideFound against its definition: the URL as found
// judged first, then its key, which is a fixed point of Key, and the key
// of the URL requested (Fetch).
func checkFound(t *testing.T, s *Source, found string, depth int) {
	u, d := s.DecideFound(found, depth)
	key := s.Key(found)
	if again := s.Key(key); again != key {
		t.Fatalf("%s: keyed %s, then %s", found, key, again)
	}
	if k := s.Key(s.Fetch(found)); k != key {
		t.Fatalf("%s: keyed %s, but the URL requested, %s, is keyed %s", found, key, s.Fetch(found), k)
	}
	if r := s.Request(key, found); r != s.Fetch(found) {
		t.Fatalf("%s: the request for key %s is %s, want %s", found, key, r, s.Fetch(found))
	}
	fd := s.Decide(found, depth)
	switch {
	case !fd.Crawl:
		all, _ := urlnorm.Normalize(found)
		if u != all || d.Reason != fd.Reason || d.Rule != fd.Rule || d.Crawl {
			t.Fatalf("%s refused as found (%s), but DecideFound gives %s %+v", found, fd.Reason, u, d)
		}
	case u != key || d.Reason != s.Decide(key, depth).Reason:
		t.Fatalf("%s let in as found: DecideFound gives %s %+v, want %s decided", found, u, d, key)
	}
}
