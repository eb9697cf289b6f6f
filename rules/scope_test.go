package rules

import (
	"strings"
	"testing"
)

func TestScopeSelectsByIncludeAndExcludeInTheSourcesForms(t *testing.T) {
	s, err := NewScope([]string{"/news/", `regexp:/blog/\d{4}/`}, []string{"/news/archive/", "regexp:[?&]print="})
	if err != nil {
		t.Fatal(err)
	}
	for u, want := range map[string]bool{
		"http://a.test/news/x.html":            true,
		"http://a.test/blog/2024/post":         true,
		"http://a.test/blog/draft/post":        false, // no include entry
		"http://a.test/news/archive/old.html":  false, // excluded
		"http://a.test/news/x.html?print=1":    false, // excluded by a regexp
		"http://a.test/about/my%20news/x.html": false,
	} {
		if got := s.Contains(u); got != want {
			t.Errorf("Contains(%s) = %v, want %v", u, got, want)
		}
	}
	all, err := NewScope(nil, []string{"/private/"})
	if err != nil {
		t.Fatal(err)
	}
	if !all.Contains("http://a.test/x") || all.Contains("http://a.test/private/x") {
		t.Error("an empty include must select every page not excluded")
	}
}

func TestAnExtractionRulePatternThatDoesNotCompileIsAnErrorAtItsEntry(t *testing.T) {
	errs := compileErrors(t, "extra_fields: {extra_tag: keyword}\n"+source(
		"start_urls: [http://a.test/]",
		"extraction:",
		"  rules:",
		"    - include: [/ok/]",
		"      exclude: [/fine/, \"regexp:(?<=x)y\"]",
		"      fields: [{field: extra_tag, value: x}]",
	))
	if !errorsMention(errs, "sources[0].extraction.rules[0].exclude[1]", "lookbehind") {
		t.Fatalf("errors = %v, want one at exclude[1] naming the lookbehind", errs)
	}
	if e := errs[0].Error(); !strings.HasPrefix(e, "crawl.yaml:9:") {
		t.Errorf("error %q is not positioned at the entry's line", e)
	}
}
