package rules

import (
	"strings"
	"testing"
	"time"
)

func TestRenderingIsTheFirstMatchingCrawlRulesElseTheSources(t *testing.T) {
	set := compileYAML(t, `browser: {path: /bin/sh}
sources:
  - name: s
    start_urls: [http://example.com/]
    render: {enabled: true, wait: network_idle, timeout: 5s}
    crawl_rules:
      - {match: {path: /static/}, render: {enabled: false}}
      - {match: {path: /app/}, render: {wait: element, selector: "#main"}}
      - {match: {path: /app/old/}, render: {enabled: false}}
      - {match: {path: /docs/}, priority: 1}
`)
	s := set.Source("s")
	for _, tc := range []struct {
		url, wait, selector, rule string
		timeout                   time.Duration
		rendered                  bool
	}{
		{"http://example.com/", "network_idle", "", "sources[0].render", 5 * time.Second, true},
		{"http://example.com/static/a.html", "", "", "", 0, false},
		{"http://example.com/app/x", "element", "#main", "sources[0].crawl_rules[1]", 5 * time.Second, true},
		// The first matching rule decides: /app/ comes before /app/old/.
		{"http://example.com/app/old/y", "element", "#main", "sources[0].crawl_rules[1]", 5 * time.Second, true},
		// A first matching rule without a render block leaves it to the source.
		{"http://example.com/docs/z", "network_idle", "", "sources[0].render", 5 * time.Second, true},
	} {
		r := s.Render(tc.url)
		if (r != nil) != tc.rendered {
			t.Errorf("%s: rendered %v, want %v", tc.url, r != nil, tc.rendered)
			continue
		}
		if r == nil {
			continue
		}
		if r.Wait != tc.wait || r.Selector != tc.selector || r.Timeout != tc.timeout || !strings.HasSuffix(r.Rule, tc.rule) {
			t.Errorf("%s: %+v, want wait %s selector %q timeout %s rule ...%s", tc.url, *r, tc.wait, tc.selector, tc.timeout, tc.rule)
		}
	}
}

func TestASourceThatRendersNothingAnswersWithoutMatchingRules(t *testing.T) {
	set := compileYAML(t, `sources:
  - name: s
    start_urls: [http://example.com/]
    crawl_rules: [{match: {path: /x/}, priority: 1}]
`)
	if r := set.Source("s").Render("http://example.com/x/"); r != nil {
		t.Errorf("rendered %+v with rendering off everywhere", *r)
	}
}
