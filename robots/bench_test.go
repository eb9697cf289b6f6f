package robots

import (
	"fmt"
	"strings"
	"testing"
)

var sections = []string{"docs", "news", "blog", "shop", "forum", "wiki", "api", "media", "events", "people", "jobs", "help"}

// realisticRobots is a large site's robots.txt: per-section archives, admin
// and edit pages, a few agent-specific groups and, when wild is set, the
// wildcard rules real files carry (session ids, print views, file types).
// Without wild it holds only plain prefixes where no Allow and Disallow of
// equal length can both match, the cases temoto gets right.
func realisticRobots(wild bool) string {
	var b strings.Builder
	b.WriteString("# robots.txt for www.example.org\n\nUser-agent: *\nCrawl-delay: 1\n")
	for _, p := range []string{"/cgi-bin/", "/search", "/private/", "/tmp/", "/login", "/logout", "/cart", "/checkout/",
		"/wp-admin/", "/includes/", "/xmlrpc.php", "/trackback/", "/comments/feed/", "/print/", "/calendar/", "/user/"} {
		fmt.Fprintf(&b, "Disallow: %s\n", p)
	}
	b.WriteString("Allow: /search/help\nAllow: /private/press/\n")
	if wild {
		for _, p := range []string{"/*?sessionid=", "/*&sessionid=", "/*/print/", "/*.pdf$", "/*.doc$", "/*?replytocom=", "/*/feed/$", "/*?sort=*&page="} {
			fmt.Fprintf(&b, "Disallow: %s\n", p)
		}
		b.WriteString("Allow: /docs/*.pdf$\nAllow: /*/public-feed/$\n")
	}
	for _, s := range sections {
		fmt.Fprintf(&b, "\n# %s\nDisallow: /%s/drafts/\nDisallow: /%s/admin\nDisallow: /%s/edit?\n", s, s, s, s)
		for y := 2012; y < 2020; y++ {
			fmt.Fprintf(&b, "Disallow: /%s/archive/%d/\n", s, y)
		}
		fmt.Fprintf(&b, "Allow: /%s/archive/2018/best-of/\nAllow: /%s/admin/public-stats\nDisallow: /%s/tmp/\n", s, s, s)
	}
	b.WriteString("\nUser-agent: googlebot\nDisallow: /tmp/\nDisallow: /private/\nAllow: /private/press/\n")
	b.WriteString("\nUser-agent: Funnelback\nDisallow: /internal/\nDisallow: /cart\n")
	b.WriteString("\nSitemap: https://www.example.org/sitemap.xml\n")
	return b.String()
}

func realisticPaths() []string {
	paths := []string{"/", "/search?q=robots", "/search/help", "/cgi-bin/x.cgi", "/private/press/2019.html",
		"/private/hr/", "/tmp/a", "/login?next=/docs/", "/checkout/step1", "/about/"}
	for _, s := range sections {
		paths = append(paths,
			"/"+s+"/",
			"/"+s+"/article-1234.html",
			"/"+s+"/archive/2015/06/some-long-article-title.html",
			"/"+s+"/archive/2018/best-of/top-ten.html",
			"/"+s+"/archive/2021/latest.html",
			"/"+s+"/admin/users",
			"/"+s+"/admin/public-stats",
			"/"+s+"/edit?id=42",
			"/"+s+"/tag/robots/page/3?sort=date&page=3",
			"/"+s+"/2020/a-post/print/",
			"/"+s+"/files/report.pdf",
		)
	}
	return paths
}

func TestRealisticRobotsHas200Rules(t *testing.T) {
	n := strings.Count(realisticRobots(true), "\nAllow:") + strings.Count(realisticRobots(true), "\nDisallow:")
	if n < 200 {
		t.Fatalf("benchmark file has %d rules, want at least 200", n)
	}
	r := Parse([]byte(realisticRobots(true)))
	expect(t, r,
		want{"crawlspace", "/docs/archive/2015/x.html", false},
		want{"crawlspace", "/docs/archive/2018/best-of/x", true},
		want{"crawlspace", "/shop/x?sessionid=1", false},
		want{"crawlspace", "/docs/files/a.pdf", true},
		want{"crawlspace", "/news/files/a.pdf", false},
		want{"crawlspace", "/news/", true},
	)
}

func TestIndexedMatchingAgreesWithLinearScan(t *testing.T) {
	r := Parse([]byte(realisticRobots(true) + "User-agent: *\nAllow: /\nDisallow: *\nAllow: /*.html\nDisallow: /d*\n"))
	a := r.forAgent("crawlspace")
	if a.bounds == nil {
		t.Fatal("the group is not indexed")
	}
	n := 0
	for _, p := range realisticPaths() {
		for _, q := range []string{p, p + "x", p[:len(p)/2], p + ".html", p + "?sessionid=1"} {
			n++
			if got, want := decided(a, canonicalPath(q)), linearDecide(a, canonicalPath(q)); got != want {
				t.Errorf("%s: indexed %q, linear %q", q, got, want)
			}
		}
	}
	t.Logf("%d paths compared", n)
}

// BenchmarkTest measures one Test call against the "*" group of a 200-rule
// file, over a mix of allowed and disallowed paths.
func BenchmarkTest(b *testing.B) {
	r := Parse([]byte(realisticRobots(true)))
	paths := realisticPaths()
	const agent = "crawlspace/0.1 (+https://example.com/bot)"
	r.Test(agent, "/")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		r.Test(agent, paths[i%len(paths)])
	}
}

func BenchmarkParse(b *testing.B) {
	data := []byte(realisticRobots(true))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		Parse(data).Test("crawlspace", "/")
	}
}
