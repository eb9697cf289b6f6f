package rules

import "testing"

// TestARenderedPagesRequestsAreJudgedByTheRulesThatKeepAHostOut: a page's
// script, stylesheet or API call is refused by the rules that keep its
// whole host out, and by no rule about which pages to crawl.
func TestARenderedPagesRequestsAreJudgedByTheRulesThatKeepAHostOut(t *testing.T) {
	set := compileYAML(t, `
sources:
  - name: site
    start_urls: [https://www.example.com/docs/]
    include: [/docs/]
    stay_in_start_dir: true
    exclude: [tracker.example.net, /private/, 'regexp:^https://home\.example\.org/$']
    rules:
      - forbid domain *.ads.example
      - allow prefix https://cdn.example.net/js/*
      - forbid prefix https://cdn.example.net/*
      - allow prefix https://www.example.com/docs/*
      - forbid prefix https://www.example.com/*
    crawl_rules:
      - {match: {host: beacon.example.org}, ignore: true}
      - {match: {path: /old/}, ignore: true}
    auth:
      method: form
      username: u
      password: p
      form: {login_url: https://www.example.com/login, logout_patterns: [signout]}
`)
	s := set.Source("site")
	const page = "https://www.example.com/docs/a.html"
	for _, tc := range []struct {
		url    string
		reason Reason
	}{
		// Pages' rules do not apply: another host, outside the start
		// directory and the include list, an extension never crawled.
		{"https://api.example.org/items.json", ""},
		{"https://www.example.com/static/app.js", ""},
		// The page's own host, though a prefix rule forbids its root.
		{"https://www.example.com/other/data.json", ""},
		// Path-level rules are about pages.
		{"https://api.example.org/private/x.json", ""},
		{"https://api.example.org/old/x.json", ""},
		// A rule keeping a whole host out.
		{"https://x.ads.example/ad.js", ReasonForbiddenDomain},
		{"https://tracker.example.net/t.js", ReasonExcluded},
		{"https://beacon.example.org/b.js", ReasonRuleIgnore},
		{"https://cdn.example.net/css/site.css", ReasonForbiddenPrefix},
		// ... but not where a rule lets part of it in.
		{"https://cdn.example.net/js/app.js", ""},
		// A pattern matching the root alone keeps only the root out.
		{"https://home.example.org/app.js", ""},
		{"https://home.example.org/", ReasonExcluded},
		// An address.
		{"http://127.0.0.1/x.js", ReasonForbiddenAddress},
		// Ending the session, on any host.
		{"https://www.example.com/signout", ReasonLogout},
	} {
		d := s.DecideRequest(tc.url, page)
		if d.Reason != tc.reason || d.Crawl != (tc.reason == "") {
			t.Errorf("%s: crawl %v reason %q (%s), want reason %q", tc.url, d.Crawl, d.Reason, d.Rule, tc.reason)
		}
		if tc.reason != "" && d.Rule == "" {
			t.Errorf("%s: refused without the rule that decided", tc.url)
		}
	}
}
