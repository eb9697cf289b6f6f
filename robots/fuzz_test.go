package robots

import (
	"strings"
	"testing"
)

// FuzzParse: Parse never panics, Test never panics, and the answers keep
// their invariants on arbitrary files and paths.
func FuzzParse(f *testing.F) {
	f.Add([]byte(realisticRobots(true)), "/docs/archive/2015/x.pdf")
	f.Add([]byte("User-agent: *\nDisallow: *\n"), "/")
	f.Add([]byte("User-agent: crawlspace\nAllow: /a*b*c$\nDisallow: /%E3%83%84\n"), "/a%2Fb?c=%zz")
	f.Add([]byte("\xef\xbb\xbfuser agent: *\r\ndisalow: /%\r\nCrawl-delay: 1e400\rSitemap:"), "%")
	f.Add([]byte("User-agent:*\nAllow:$\nDisallow:***$$\n"), "")
	f.Fuzz(func(t *testing.T, data []byte, path string) {
		r := Parse(data)
		for _, agent := range []string{"crawlspace/0.1", "*", ""} {
			ok, line := r.Test(agent, path)
			if !ok && line == "" {
				t.Fatalf("disallowed %q without a rule", path)
			}
			if line != "" && !strings.HasPrefix(line, "robots.txt:") {
				t.Fatalf("malformed explanation %q", line)
			}
			if r.CrawlDelay(agent) < 0 {
				t.Fatal("negative crawl-delay")
			}
		}
		if a := r.forAgent("crawlspace/0.1"); linearDecide(a, canonicalPath(path)) != decided(a, canonicalPath(path)) {
			t.Fatalf("indexed and linear matching disagree on %q", path)
		}
		if ok, _ := r.Test("crawlspace", "/robots.txt"); !ok {
			t.Fatal("/robots.txt disallowed")
		}
		// Canonicalisation is idempotent, so a canonical path decides alike.
		c := canonicalPath(path)
		if canonicalPath(c) != c {
			t.Fatalf("canonicalPath(%q) = %q is not a fixed point", path, c)
		}
	})
}

// linearDecide is the reference for agentRules.decide: the first match in
// the fully sorted list.
func linearDecide(a *agentRules, p string) string {
	for i := range a.rules {
		if a.rules[i].match(p) {
			return a.rules[i].line
		}
	}
	return ""
}

func decided(a *agentRules, p string) string {
	if ru := a.decide(p); ru != nil {
		return ru.line
	}
	return ""
}
