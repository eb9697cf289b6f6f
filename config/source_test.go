package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func fingerprint(t *testing.T, cfg string) string {
	t.Helper()
	return Fingerprint(&mustParse(t, "c.yaml", cfg).Sources[0])
}

func TestFingerprintIsStableAndIgnoresHowTheFileIsWritten(t *testing.T) {
	base := fingerprint(t, minimal)
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(base) {
		t.Fatalf("fingerprint %q is not 32 hex digits", base)
	}
	for name, cfg := range map[string]string{
		"same config again":     minimal,
		"defaults written out":  src("max_link_depth: 10", "honored_query_params: [id]", "discovery: true", "mime_types: ["+strings.Join(BuiltinTypes, ", ")+"]"),
		"keys in another order": "sources:\n  - start_urls: [http://example.com/]\n    name: a\n",
		"flow style":            "sources: [{name: a, start_urls: [\"http://example.com/\"]}]\n",
		"a second source added": minimal + "  - name: b\n    start_urls: [http://example.org/]\n",
	} {
		if got := fingerprint(t, cfg); got != base {
			t.Errorf("%s: fingerprint changed", name)
		}
	}
	// This value is stored in crawl state: if it changes, every deployment
	// re-judges every URL once. Change it only on purpose.
	if base != "ffe9cc65c109f51f22bf7eab2520bb23" {
		t.Errorf("fingerprint of the minimal config changed to %s; if that is intended, pin the new value", base)
	}
}

func TestFingerprintChangesWithTheCrawlSpaceOnly(t *testing.T) {
	base := fingerprint(t, minimal)
	same := map[string]string{
		"politeness":           src("politeness: {delay: 2s, max_parallel_per_host: 1}"),
		"discovery interval":   src("discovery_interval: 5m"),
		"max age":              src("max_age: 1h"),
		"sitemap limits":       src("sitemap_limits: {max_urls: 10}"),
		"orphans":              src("orphans: delete"),
		"max temporary errors": src("max_temporary_errors: 9"),
		"budget":               src("budget: {max_urls: 10, max_pages_per_cycle: 5}"),
		"hold deletes":         src("hold_deletes: {percent: 50, min_count: 0}"),
		"credentials":          src("auth: {username: u, password: p}", "headers: {X-Token: abc}"),
		"user agent version":   "user_agent: crawlspace/9.9\n" + minimal,
		"fetch timeouts":       "fetch: {timeout: 5s, concurrency: 2}\n" + minimal,
		"sink":                 "elasticsearch: {index: other}\nstate_dir: elsewhere\n" + minimal,
	}
	for name, cfg := range same {
		if fingerprint(t, cfg) != base {
			t.Errorf("%s changed the fingerprint; it does not change which URLs belong or what documents hold", name)
		}
	}
	changed := map[string]string{
		"an exclude":                  src("exclude: [/private/]"),
		"a smaller link depth":        src("max_link_depth: 3"),
		"a kill pattern":              src("kill_patterns: [/print/]"),
		"no query parameters":         src("honored_query_params: []"),
		"a start URL":                 "sources:\n  - name: a\n    start_urls: [http://example.com/, http://example.com/b/]\n",
		"a crawl rule":                src("crawl_rules: [{match: {path: /x}, index: false}]"),
		"a crawl rule's explicit nil": src("crawl_rules: [{match: {path: /x}, priority: 1}]"),
		"robots obedience":            src("robots: {obey: false}"),
		"extraction":                  src("extraction: {remove_classes: []}"),
		"the product token":           "user_agent: intranetbot/0.1\n" + minimal,
		"private networks":            "allow_private_networks: true\n" + minimal,
		"a proxy":                     "fetch: {proxy: \"http://proxy.example:3128\"}\n" + minimal,
		"always ignored extensions":   "always_ignored_extensions: [pdf]\n" + minimal,
		"the body cap":                "fetch: {max_body_bytes: 1MiB}\n" + minimal,
		"the source name":             "sources:\n  - name: b\n    start_urls: [http://example.com/]\n",
	}
	seen := map[string]string{base: "the minimal config"}
	for name, cfg := range changed {
		fp := fingerprint(t, cfg)
		if other, dup := seen[fp]; dup {
			t.Errorf("%s gives the same fingerprint as %s", name, other)
		}
		seen[fp] = name
	}
	// Which proxy does not matter, only whether there is one.
	if fingerprint(t, "fetch: {proxy: \"http://proxy.example:3128\"}\n"+minimal) !=
		fingerprint(t, "fetch: {proxy: \"http://u:p@other.example:8080\"}\n"+minimal) {
		t.Error("another proxy changed the fingerprint")
	}
	// index: false and an unset index are different rules.
	if fingerprint(t, src("crawl_rules: [{match: {path: /x}, index: false, priority: 1}]")) ==
		fingerprint(t, src("crawl_rules: [{match: {path: /x}, priority: 1}]")) {
		t.Error("index: false and an unset index share a fingerprint")
	}
}

func TestFingerprintDoesNotDependOnTheConfigFileName(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte(minimal), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ca, err := Load(a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := Load(b)
	if err != nil {
		t.Fatal(err)
	}
	if Fingerprint(&ca.Sources[0]) != Fingerprint(&cb.Sources[0]) {
		t.Error("the file name changed the fingerprint")
	}
}

func BenchmarkParseEveryKey(b *testing.B) {
	data, err := os.ReadFile("../testdata/config/every-key.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("every-key.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

// The render fingerprint is empty while nothing renders (so upgrading or
// adding a render block left off reads nothing again), and changes with any
// rendering setting and with the match of a crawl rule that renders.
func TestRenderFingerprintIsEmptyUntilSomethingRendersAndChangesWithHowAndWhere(t *testing.T) {
	render := func(cfg string) string {
		t.Helper()
		return RenderFingerprint(&mustParse(t, "c.yaml", cfg).Sources[0])
	}
	for name, cfg := range map[string]string{
		"no render block":         minimal,
		"rendering left off":      src("render: {enabled: false, wait: load}"),
		"a rule that renders off": src("crawl_rules: [{match: {path: /app/}, render: {enabled: false}}]"),
	} {
		if got := render(cfg); got != "" {
			t.Errorf("%s: render fingerprint %q, want empty", name, got)
		}
	}
	seen := map[string]string{}
	for name, cfg := range map[string]string{
		"on":                    src("render: {enabled: true}"),
		"on, waiting for load":  src("render: {enabled: true, wait: load}"),
		"on, longer timeout":    src("render: {enabled: true, timeout: 40s}"),
		"a rule for /app/":      src("crawl_rules: [{match: {path: /app/}, render: {}}]"),
		"a rule for /shop/":     src("crawl_rules: [{match: {path: /shop/}, render: {}}]"),
		"the rule and the rest": src("render: {enabled: true}", "crawl_rules: [{match: {path: /app/}, render: {}}]"),
	} {
		got := render(cfg)
		if got == "" {
			t.Errorf("%s: render fingerprint empty", name)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("%s and %s have the same render fingerprint", name, other)
		}
		seen[got] = name
		if render(cfg) != got {
			t.Errorf("%s: render fingerprint not stable", name)
		}
	}
}
