package rules

import (
	"errors"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// compileYAML loads a config the way crawlspace does (positions, defaults,
// validation) and compiles its crawl space.
func compileYAML(t testing.TB, yaml string) *Set {
	t.Helper()
	cfg, err := config.Parse("crawl.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	set, err := Compile(cfg)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return set
}

// compileErrors returns the errors of loading and compiling a config: the
// config package checks the shape of some rules, Compile the rest.
func compileErrors(t testing.TB, yaml string) config.Errors {
	t.Helper()
	cfg, err := config.Parse("crawl.yaml", []byte(yaml))
	if err == nil {
		_, err = Compile(cfg)
	}
	var errs config.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Compile = %v, want config.Errors", err)
	}
	return errs
}

// source builds a one-source config: the YAML lines given are indented
// under the source, after its name.
func source(lines ...string) string {
	var b strings.Builder
	b.WriteString("allow_private_networks: true\nsources:\n  - name: site\n")
	for _, l := range lines {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

// decide judges raw as a link found on a page would be: as found, then
// its key.
func decide(t testing.TB, s *Source, raw string, depth int) Decision {
	t.Helper()
	found, err := urlnorm.Found(raw)
	if err != nil {
		t.Fatalf("Found(%q): %v", raw, err)
	}
	_, d := s.DecideFound(found, depth)
	return d
}

type want struct {
	url    string
	crawl  bool
	reason Reason
}

func checkTable(t *testing.T, s *Source, table []want) {
	t.Helper()
	for _, w := range table {
		d := decide(t, s, w.url, 1)
		if d.Crawl != w.crawl || d.Reason != w.reason {
			t.Errorf("%s: crawl=%v reason=%q rule=%q; want crawl=%v reason=%q", w.url, d.Crawl, d.Reason, d.Rule, w.crawl, w.reason)
		}
		if !d.Crawl && (d.Index || d.Follow) {
			t.Errorf("%s: refused but index=%v follow=%v", w.url, d.Index, d.Follow)
		}
	}
}

func errorsMention(errs config.Errors, path string, words ...string) bool {
	for _, e := range errs {
		if e.Path != path {
			continue
		}
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(e.Msg, w)
		}
		if ok {
			return true
		}
	}
	return false
}
