package config

import (
	"strings"
	"testing"
	"time"
)

func TestRenderSettingsAreCheckedWhereTheyAreWritten(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown wait", src("render: {enabled: true, wait: idle}"),
			`c.yaml:4:35: sources[0].render.wait: "idle" is not one of load, network_idle, element`},
		{"element without selector", src("render: {enabled: true, wait: element}"),
			`c.yaml:4:35: sources[0].render.wait: wait: element needs a selector, the CSS selector of the element to wait for`},
		{"selector that is not CSS", src(`render: {enabled: true, wait: element, selector: "div[["}`),
			`c.yaml:4:54: sources[0].render.selector: "div[[" is not a CSS selector`},
		{"selector without wait element", src(`render: {enabled: true, wait: load, selector: "main"}`),
			`c.yaml:4:51: sources[0].render.selector: is read only with wait: element (wait is load)`},
		{"a rule's wait", src("crawl_rules: [{match: {path: /app/}, render: {wait: soon}}]"),
			`c.yaml:4:57: sources[0].crawl_rules[0].render.wait: "soon" is not one of load, network_idle, element`},
		{"no browser where a rule renders", "browser: {path: /nonexistent/chromium}\n" + src("crawl_rules: [{match: {path: /app/}, render: {}}]"),
			`c.yaml:1:17: browser.path: cannot run /nonexistent/chromium:`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := errs(t, tc.yaml)
			if len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
				t.Errorf("errors %q\nwant one starting %q", got, tc.want)
			}
		})
	}
	// Where nothing renders, the browser is not needed.
	if got := errs(t, "browser: {path: /nonexistent/chromium}\n"+src("render: {wait: load}")); got != nil {
		t.Errorf("a config that renders nothing needs no browser: %q", got)
	}
}

func TestACrawlRulesRenderBlockRendersAndTakesTheSourcesSettingsItLeavesOut(t *testing.T) {
	c, err := Parse("c.yaml", []byte("browser: {path: /bin/sh}\n"+src(
		`render: {wait: element, selector: "#app", timeout: 7s}`,
		`crawl_rules: [{match: {path: /a/}, render: {timeout: 9s}}, {match: {path: /b/}, render: {wait: load}}, {match: {path: /c/}, render: {enabled: false}}]`)))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Sources[0]
	if *s.Render.Enabled {
		t.Error("a source renders by default")
	}
	a, b, cr := s.CrawlRules[0].Render, s.CrawlRules[1].Render, s.CrawlRules[2].Render
	if !*a.Enabled || a.Wait != "element" || a.Selector != "#app" || a.Timeout.D() != 9*time.Second {
		t.Errorf("rule a: %+v enabled %v", *a, *a.Enabled)
	}
	if !*b.Enabled || b.Wait != "load" || b.Selector != "" || b.Timeout.D() != 7*time.Second {
		t.Errorf("rule b: %+v enabled %v: a rule's own wait takes no selector of the source's", *b, *b.Enabled)
	}
	if *cr.Enabled {
		t.Error("enabled: false in a rule renders")
	}
	if !c.Renders() {
		t.Error("Renders is false with a rule that renders")
	}
}
