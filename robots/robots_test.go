package robots

import (
	"strings"
	"testing"
	"time"

	"github.com/temoto/robotstxt"
)

type want struct {
	agent, path string
	allowed     bool
}

func expect(t *testing.T, r *Rules, cases ...want) {
	t.Helper()
	for _, c := range cases {
		got, line := r.Test(c.agent, c.path)
		if got != c.allowed {
			t.Errorf("Test(%q, %q) = %v (rule %q), want %v", c.agent, c.path, got, line, c.allowed)
		}
		if r.Allowed(c.agent, c.path) != got {
			t.Errorf("Allowed(%q, %q) disagrees with Test", c.agent, c.path)
		}
	}
}

// temotoAllows is what github.com/temoto/robotstxt answers, to show where it
// deviates from RFC 9309.
func temotoAllows(t *testing.T, body, agent, path string) bool {
	t.Helper()
	r, err := robotstxt.FromString(body)
	if err != nil {
		t.Fatalf("temoto rejected the file: %v", err)
	}
	return r.TestAgent(path, agent)
}

func TestRFC9309Section5_1SimpleExample(t *testing.T) {
	r := Parse([]byte(`User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
`))
	expect(t, r,
		// The "*" group, for agents without their own.
		want{"otherbot", "/", true},
		want{"otherbot", "/image.gif", false},
		want{"otherbot", "/image.gif?x", true}, // "$" anchors the end
		want{"otherbot", "/example/", false},
		want{"otherbot", "/example/page.html", false},
		want{"otherbot", "/publications/", true},
		want{"otherbot", "/publications/a.gif", true}, // Allow /publications/ (14 octets) beats *.gif$ (6)
		// foobot: everything disallowed but two pages.
		want{"foobot", "/", false},
		want{"foobot", "/example/page.html", true},
		want{"foobot", "/example/allowed.gif", true},
		want{"foobot", "/example/other.gif", false},
		want{"FooBot/2.0", "/publications/", false},
		// barbot and bazbot share a group.
		want{"barbot", "/example/page.html", false},
		want{"barbot", "/example/other.html", true},
		want{"bazbot", "/example/page.html", false},
		want{"bazbot", "/image.gif", true},
		// quxbot has a group without rules: everything allowed.
		want{"quxbot", "/example/page.html", true},
		want{"quxbot", "/image.gif", true},
	)
}

func TestRFC9309Section5_2LongestMatch(t *testing.T) {
	r := Parse([]byte(`User-Agent: foobot
Allow: /example/page/
Disallow: /example/page/disallowed.gif
`))
	expect(t, r,
		want{"foobot", "/example/page/", true},
		want{"foobot", "/example/page/ok.gif", true},
		want{"foobot", "/example/page/disallowed.gif", false},
		want{"foobot", "/example/", true},
	)
}

func TestRFC9309LongestMatchCountsPatternOctets(t *testing.T) {
	r := Parse([]byte(`User-agent: *
Disallow: /*.php
Allow: /pages/
Disallow: /
Allow: /$
`))
	expect(t, r,
		want{"a", "/pages/x.html", true}, // Allow /pages/ (7) > Disallow / (1)
		want{"a", "/pages/x.php", true},  // Allow /pages/ (7) > Disallow /*.php (6)
		want{"a", "/x.php", false},       // only /*.php and / match
		want{"a", "/", true},             // Allow /$ (2) > Disallow / (1)
		want{"a", "/other", false},       // /$ does not match
		want{"a", "/pages", false},       // /pages/ does not match /pages
		want{"a", "/pages/a.phpx", true}, // unanchored /*.php matches, but /pages/ is longer
		want{"a", "/a/b/c.php?q=1", false},
	)
}

// RFC 9309 2.2.2: a rule matches the path and query from their start, as
// one string: the query's parameters in the order the URL holds them, so
// the crawler must give it the URL as the site wrote it, never one whose
// parameters it sorted.
func TestRFC9309MatchesThePathAndQueryAsGivenTheirParametersInOrder(t *testing.T) {
	r := Parse([]byte("User-agent: *\nDisallow: /list?sort=\nAllow: /list?sort=asc&page=1$\nDisallow: /*&debug\n"))
	expect(t, r,
		want{"a", "/list?sort=asc&page=2", false},
		want{"a", "/list?page=2&sort=asc", true},
		want{"a", "/list?sort=asc&page=1", true},
		want{"a", "/list?page=1&sort=asc", true},
		want{"a", "/list?a=1&debug=1", false},
		want{"a", "/list?debug=1&a=1", true},
	)
}

// RFC 9309 2.2.2 table: the pattern as written (Path), the URI's encoding,
// and what they are compared as.
func TestRFC9309PercentEncodingTable(t *testing.T) {
	for _, c := range []struct{ pattern, uri string }{
		{"/foo/bar?baz=quz", "/foo/bar?baz=quz"},
		{"/foo/bar?baz=https://foo.bar", "/foo/bar?baz=https%3A%2F%2Ffoo.bar"},
		{"/foo/bar?baz=https://foo.bar", "/foo/bar?baz=https://foo.bar"},
		{"/foo/bar/\u30c4", "/foo/bar/%E3%83%84"},
		{"/foo/bar/\u30c4", "/foo/bar/%e3%83%84"},
		{"/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84"},
		{"/foo/bar/%E3%83%84", "/foo/bar/\u30c4"},
		{"/foo/bar/%62%61%7A", "/foo/bar/baz"},
		{"/foo/bar/baz", "/foo/bar/%62%61%7A"},
		// The 1996 draft's table, which RFC 9309 keeps in spirit.
		{"/a%3cd.html", "/a%3Cd.html"},
		{"/a%3Cd.html", "/a%3cd.html"},
		{"/a<d.html", "/a%3Cd.html"},
		{"/%7ejoe/index.html", "/~joe/index.html"},
		{"/~joe/index.html", "/%7Ejoe/index.html"},
		{"/a%2fb.html", "/a%2Fb.html"},
	} {
		r := Parse([]byte("User-agent: *\nDisallow: " + c.pattern + "\n"))
		if r.Allowed("crawlspace", c.uri) {
			t.Errorf("Disallow: %s does not match %s", c.pattern, c.uri)
		}
	}
	// "/" delimits path segments: an escaped one is a different path.
	for _, c := range []struct{ pattern, uri string }{
		{"/a%2fb.html", "/a/b.html"},
		{"/a/b.html", "/a%2fb.html"},
		{"/a?b", "/a%3Fb"},
		{"/foo/bar/%62%61%7A", "/foo/bar/bay"},
	} {
		r := Parse([]byte("User-agent: *\nDisallow: " + c.pattern + "\n"))
		if !r.Allowed("crawlspace", c.uri) {
			t.Errorf("Disallow: %s matches %s", c.pattern, c.uri)
		}
	}
}

// RFC 9309 2.2.3: "#" starts a comment, "$" anchors the end, "*" matches any
// sequence, and their escapes match the characters literally.
func TestRFC9309SpecialCharacters(t *testing.T) {
	r := Parse([]byte(`User-agent: *
Disallow: / # comment in line
# comment on its own line
Allow: /this/path/exactly$
Allow: /this/*/exactly
Allow: /path/file-with-a-%2A.html
Allow: /path/foo-%24
`))
	expect(t, r,
		want{"a", "/other", false},
		want{"a", "/this/path/exactly", true},
		want{"a", "/this/path/exactlyx", true}, // through /this/*/exactly
		want{"a", "/this/a/b/exactly", true},
		want{"a", "/this/a/b/exact", false},
		want{"a", "/path/file-with-a-*.html", true},
		want{"a", "/path/file-with-a-%2A.html", true},
		want{"a", "/path/file-with-a-x.html", false}, // %2A is no wildcard
		want{"a", "/path/foo-$", true},
		want{"a", "/path/foo-", false}, // %24 is no anchor
	)
}

func TestTemotoDeviationUnanchoredWildcard(t *testing.T) {
	const body = "User-agent: *\nDisallow: /fish*.php\n"
	expect(t, Parse([]byte(body)),
		want{"crawlspace", "/fish.php", false},
		want{"crawlspace", "/fishheads/catfish.php", false},
		want{"crawlspace", "/x/fish.php", true}, // the pattern is anchored at the path's start
		want{"crawlspace", "/Fish.php", true},
	)
	if temotoAllows(t, body, "crawlspace", "/x/fish.php") {
		t.Error("temoto now anchors wildcard patterns; revisit docs/robots.md")
	}
}

func TestTemotoDeviationTieGoesToAllow(t *testing.T) {
	expect(t, Parse([]byte("User-agent: *\nDisallow: /page\nAllow: /page\n")), want{"crawlspace", "/page", true})
	expect(t, Parse([]byte("User-agent: *\nAllow: /page\nDisallow: /page\n")), want{"crawlspace", "/page", true})
	// Different patterns of equal length (6 octets) that both match.
	expect(t, Parse([]byte("User-agent: *\nDisallow: /*.htm\nAllow: /a/b.h\n")),
		want{"crawlspace", "/a/b.htm", true}, want{"crawlspace", "/c.htm", false})
	if temotoAllows(t, "User-agent: *\nDisallow: /page\nAllow: /page\n", "crawlspace", "/page") {
		t.Error("temoto now lets Allow win ties; revisit docs/robots.md")
	}
}

func TestTemotoDeviationBadLineKeepsTheRest(t *testing.T) {
	const body = `Disallow: /before-any-agent
User-agent: *
Crawl-delay: soon
Disallow /no-colon
Frobnicate: yes
Disallow: /private
Allow: /private/public$ $ $
`
	r := Parse([]byte(body))
	expect(t, r,
		want{"crawlspace", "/private/x", false},
		want{"crawlspace", "/before-any-agent", true},
		want{"crawlspace", "/no-colon", true},
		want{"crawlspace", "/public", true},
	)
	if _, err := robotstxt.FromString(body); err == nil {
		t.Error("temoto now keeps files with bad lines; revisit docs/robots.md")
	}
}

func TestTemotoDeviationDisallowStarDisallowsEverything(t *testing.T) {
	const body = "User-agent: *\nDisallow: *\n"
	expect(t, Parse([]byte(body)),
		want{"crawlspace", "/", false},
		want{"crawlspace", "/a/b?c", false},
		want{"crawlspace", "/robots.txt", true},
	)
	if !temotoAllows(t, body, "crawlspace", "/a") {
		t.Error("temoto now honours Disallow: *; revisit docs/robots.md")
	}
}

// RFC 9309 2.2.1: a matching group applies even with no rules in it, rather
// than the "*" group.
func TestTemotoDeviationGroupWithoutRulesIsSelected(t *testing.T) {
	const body = "User-agent: *\nDisallow: /\n\nUser-agent: quxbot\n"
	expect(t, Parse([]byte(body)), want{"quxbot", "/a", true}, want{"other", "/a", false})
	if temotoAllows(t, body, "quxbot", "/a") {
		t.Error("temoto now selects groups without rules; revisit docs/robots.md")
	}
}

// RFC 9309 2.2.1: groups are selected by the whole product token, not a
// prefix of it.
func TestTemotoDeviationAgentMatchedByWholeToken(t *testing.T) {
	const body = "User-agent: *\nDisallow: /\n\nUser-agent: crawl\nAllow: /\n"
	expect(t, Parse([]byte(body)), want{"crawlspace/0.1", "/a", false}, want{"crawl/2", "/a", true})
	if !temotoAllows(t, body, "crawlspace", "/a") {
		t.Error("temoto now matches whole product tokens; revisit docs/robots.md")
	}
}

// Where temoto is right (plain prefixes, no ties, no wildcards, a
// well-formed file), both parsers must agree on every path.
func TestAgreesWithTemotoOnPlainPrefixRules(t *testing.T) {
	body := realisticRobots(false)
	theirs, err := robotstxt.FromString(body)
	if err != nil {
		t.Fatal(err)
	}
	ours := Parse([]byte(body))
	n := 0
	for _, p := range realisticPaths() {
		for _, agent := range []string{"crawlspace", "googlebot", "funnelback"} {
			n++
			if got, want := ours.Allowed(agent, p), theirs.TestAgent(p, agent); got != want {
				t.Errorf("%s %s: ours %v, temoto %v", agent, p, got, want)
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d comparisons", n)
	}
}

func TestGroupSelection(t *testing.T) {
	r := Parse([]byte(`User-agent: *
Disallow: /all

User-agent: CrawlSpace
Disallow: /first

User-agent: other
Disallow: /other

user-agent: crawlspace
Disallow: /second
Crawl-delay: 2
`))
	expect(t, r,
		// The specific groups, merged, replace the "*" group entirely.
		want{"crawlspace", "/first", false},
		want{"crawlspace", "/second", false},
		want{"crawlspace", "/all", true},
		want{"crawlspace", "/other", true},
		// Case-insensitive, and from a full User-Agent value.
		want{"CRAWLSPACE", "/first", false},
		want{"crawlspace/0.1 (+https://example.com/bot)", "/second", false},
		// Others get "*".
		want{"someone", "/all", false},
		want{"someone", "/first", true},
		want{"", "/all", false},
	)
	if got := r.CrawlDelay("crawlspace/0.1"); got != 2*time.Second {
		t.Errorf("merged group crawl-delay = %v, want 2s", got)
	}
	noStar := Parse([]byte("User-agent: other\nDisallow: /\n"))
	expect(t, noStar, want{"crawlspace", "/x", true}, want{"other", "/x", false})
}

// A user-agent line after rules starts a new group; consecutive ones (with
// blank lines, comments or unknown lines between) share one.
func TestGroupBoundaries(t *testing.T) {
	r := Parse([]byte(`User-agent: a
# comment

Host: example.com
User-agent: b
Disallow: /ab
User-agent: c
Disallow: /c
Sitemap: https://example.com/s.xml
User-agent: d
Crawl-delay: 1
User-agent: e
Disallow: /e
`))
	expect(t, r,
		want{"a", "/ab", false}, want{"b", "/ab", false}, want{"a", "/c", true},
		want{"c", "/c", false}, want{"c", "/ab", true},
		want{"d", "/e", true}, want{"e", "/e", false},
	)
	if r.CrawlDelay("e") != 0 || r.CrawlDelay("d") != time.Second {
		t.Errorf("crawl-delay leaked across groups: d=%v e=%v", r.CrawlDelay("d"), r.CrawlDelay("e"))
	}
}

// Seed 000 (Funnelback): everyone kept out of /search and /login, one agent
// let in everywhere by an empty Disallow.
func TestFunnelbackSeedExample(t *testing.T) {
	r := Parse([]byte(`User-agent: *
Disallow: /search
Disallow: /login

User-agent: Funnelback
Disallow:

Sitemap: http://www.example.com/sitemap.xml
`))
	expect(t, r,
		want{"crawlspace/0.1", "/search", false},
		want{"crawlspace/0.1", "/search?q=x", false},
		want{"crawlspace/0.1", "/searching", false},
		want{"crawlspace/0.1", "/login/form", false},
		want{"crawlspace/0.1", "/about/search", true},
		want{"crawlspace/0.1", "/", true},
		want{"Funnelback", "/search", true},
		want{"funnelback/15.0", "/login", true},
	)
	if got := r.Sitemaps(); len(got) != 1 || got[0] != "http://www.example.com/sitemap.xml" {
		t.Errorf("Sitemaps() = %q", got)
	}
}

func TestEmptyDisallowAllowsEverything(t *testing.T) {
	expect(t, Parse([]byte("User-agent: *\nDisallow:\n")), want{"a", "/", true}, want{"a", "/x", true})
	expect(t, Parse([]byte("User-agent: *\nDisallow: \nDisallow: /x\n")), want{"a", "/", true}, want{"a", "/x", false})
}

func TestPatternWithoutLeadingSlashIsRootRelative(t *testing.T) {
	expect(t, Parse([]byte("User-agent: *\nDisallow: fish/\n")),
		want{"a", "/fish/", false}, want{"a", "/a/fish/", true})
}

func TestTolerantParsing(t *testing.T) {
	const lf = "\ufeffUSER-AGENT : *  \n" +
		"\tdisallow:/a   # trailing comment\n" +
		"DisAllow: /b\n" +
		"useragent: x\n" +
		"disalow: /c\n" +
		"user agent: y\n" +
		"dissallow: /d\n" +
		"this line has no colon\n" +
		"\x00\xff\xfe: binary\n" +
		"Allow: /d/ok\n"
	for name, body := range map[string]string{
		"LF":   lf,
		"CRLF": strings.ReplaceAll(lf, "\n", "\r\n"),
		"CR":   strings.ReplaceAll(lf, "\n", "\r"),
	} {
		t.Run(name, func(t *testing.T) {
			r := Parse([]byte(body))
			expect(t, r,
				want{"z", "/a", false}, want{"z", "/b", false}, want{"z", "/c", true},
				want{"x", "/c", false}, want{"y", "/c", true},
				want{"y", "/d", false}, want{"x", "/d", true},
				want{"y", "/d/ok", true}, want{"x", "/a", true},
			)
			// Line numbers count CRLF once, as editors do.
			if _, line := r.Test("y", "/d/x"); line != "robots.txt:7: Disallow: /d" {
				t.Errorf("line = %q", line)
			}
		})
	}
}

func TestRobotsTxtIsAlwaysAllowed(t *testing.T) {
	for _, r := range []*Rules{Parse([]byte("User-agent: *\nDisallow: /\n")), DisallowAll()} {
		expect(t, r,
			want{"crawlspace", "/robots.txt", true},
			want{"crawlspace", "/robots.txt?x=1", true},
			want{"crawlspace", "/robots.txt.bak", false},
			want{"crawlspace", "/a/robots.txt", false},
		)
	}
}

func TestAllowAllAndDisallowAll(t *testing.T) {
	expect(t, AllowAll(), want{"a", "/", true}, want{"a", "/x?y", true})
	expect(t, DisallowAll(), want{"a", "/", false}, want{"a", "/x?y", false})
	if _, line := DisallowAll().Test("a", "/x"); line == "" {
		t.Error("DisallowAll gives no reason for explain")
	}
	var zero Rules
	expect(t, &zero, want{"a", "/x", true})
	var nilRules *Rules
	expect(t, nilRules, want{"a", "/x", true})
	expect(t, Parse(nil), want{"a", "/x", true})
}

func TestExplainLineNamesTheDecidingRule(t *testing.T) {
	r := Parse([]byte("User-agent: *\nDisallow: /a\n\nallow:   /a/b*  # why\n"))
	for _, c := range []struct{ path, line string }{
		{"/a/x", "robots.txt:2: Disallow: /a"},
		{"/a/b/c", "robots.txt:4: Allow: /a/b*"},
		{"/z", ""},
	} {
		if _, line := r.Test("crawlspace", c.path); line != c.line {
			t.Errorf("Test(%q) line = %q, want %q", c.path, line, c.line)
		}
	}
}

func TestCrawlDelay(t *testing.T) {
	r := Parse([]byte(`User-agent: *
Crawl-delay: 0.5

User-agent: slow
Crawl-delay: 10
User-agent: slow
Crawl-delay: 30

User-agent: bad
Crawl-delay: -1
Crawl-delay: NaN
Crawl-delay: 5s
Disallow: /x

User-agent: huge
Crawl-delay: 1e300

User-agent: none
Disallow: /
`))
	for agent, want := range map[string]time.Duration{
		"crawlspace": 500 * time.Millisecond,
		"slow":       30 * time.Second, // merged groups: the longest delay
		"bad":        0,
		"huge":       24 * time.Hour,
		"none":       0, // its own group sets none; "*" does not apply
	} {
		if got := r.CrawlDelay(agent); got != want {
			t.Errorf("CrawlDelay(%q) = %v, want %v", agent, got, want)
		}
	}
	if AllowAll().CrawlDelay("a") != 0 || DisallowAll().CrawlDelay("a") != 0 {
		t.Error("AllowAll/DisallowAll set a crawl-delay")
	}
}

func TestSitemapsAreGlobalInAnyPosition(t *testing.T) {
	r := Parse([]byte(`Sitemap: https://example.com/a.xml
User-agent: a
Disallow: /c
SITEMAP: https://example.com/b.xml
User-agent: b
sitemap:https://example.com/c.xml#frag
User-agent: d
Disallow: /d
site-map: https://example.com/a.xml
`))
	got := r.Sitemaps()
	wantMaps := []string{"https://example.com/a.xml", "https://example.com/b.xml", "https://example.com/c.xml"}
	if strings.Join(got, " ") != strings.Join(wantMaps, " ") {
		t.Errorf("Sitemaps() = %q, want %q", got, wantMaps)
	}
	// A sitemap line neither belongs to a group nor ends a user-agent list.
	expect(t, r, want{"a", "/c", false}, want{"b", "/c", true}, want{"b", "/d", false})
}

func TestSizeCapIgnoresRulesPastIt(t *testing.T) {
	var b strings.Builder
	b.WriteString("User-agent: *\nDisallow: /early\n")
	for b.Len() < MaxSize-100 {
		b.WriteString("# padding padding padding padding padding padding padding\n")
	}
	b.WriteString("Disallow: /inside\n")
	for b.Len() < MaxSize+10 {
		b.WriteString("#")
	}
	b.WriteString("\nDisallow: /late\nSitemap: https://example.com/late.xml\n")
	r := Parse([]byte(b.String()))
	expect(t, r,
		want{"a", "/early", false},
		want{"a", "/inside", false},
		want{"a", "/late", true},
	)
	if len(r.Sitemaps()) != 0 {
		t.Errorf("sitemap past the cap kept: %q", r.Sitemaps())
	}
}

// A line the cap cuts in two is dropped, not read as a shorter pattern.
func TestSizeCapDropsTheLineItCuts(t *testing.T) {
	const head = "User-agent: *\nDisallow: /\n"
	const cut = "Allow: /pri"
	pad := strings.Repeat("#", MaxSize-len(head)-len(cut)-1) + "\n"
	body := head + pad + cut + "vate-area-is-not-public\n"
	if len(head+pad+cut) != MaxSize {
		t.Fatal("the cap does not fall inside the Allow line")
	}
	expect(t, Parse([]byte(body)), want{"a", "/pri", false}, want{"a", "/private-area-is-not-public", false})
}

func TestProductToken(t *testing.T) {
	for in, want := range map[string]string{
		"crawlspace/0.1 (+https://example.com)": "crawlspace",
		"  crawlspace ":                         "crawlspace",
		"crawlspace":                            "crawlspace",
		"Mozilla/5.0 (compatible; x)":           "Mozilla",
		"":                                      "",
	} {
		if got := ProductToken(in); got != want {
			t.Errorf("ProductToken(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTestDoesNotAllocateOnCanonicalPaths(t *testing.T) {
	r := Parse([]byte(realisticRobots(true)))
	r.Test("crawlspace/0.1", "/") // compile the group
	allocs := testing.AllocsPerRun(100, func() {
		for _, p := range []string{"/docs/a/b.html", "/search?q=x&page=2", "/private/x.pdf", "/a*b$c"} {
			r.Test("crawlspace/0.1", p)
		}
	})
	if allocs != 0 {
		t.Errorf("Test allocates %.1f times per 4 calls", allocs)
	}
}

func TestConcurrentTestsShareOneCompiledGroup(t *testing.T) {
	r := Parse([]byte(realisticRobots(true)))
	done := make(chan bool)
	for i := 0; i < 8; i++ {
		go func() {
			ok := true
			for _, p := range realisticPaths() {
				first, second := r.Allowed("crawlspace", p), r.Allowed("crawlspace", p)
				ok = ok && first == second
				r.CrawlDelay("other")
			}
			done <- ok
		}()
	}
	for i := 0; i < 8; i++ {
		if !<-done {
			t.Error("answers changed under concurrency")
		}
	}
	if len(r.compiled) != 2 {
		t.Errorf("%d compiled groups, want 2", len(r.compiled))
	}
}
