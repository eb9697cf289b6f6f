package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// status says which index searches see, and when the configuration asks
// for another (a new mapping, other embeddings, another file) that the
// next crawl rebuilds.
func TestStatusSaysWhatSearchesSeeAndWhatTheNextCrawlRebuilds(t *testing.T) {
	config, _ := crawledStore(t)
	r := runCommand(t, "status", "-config", config)
	m := regexp.MustCompile(`(?m)^index: file (\S+)$`).FindStringSubmatch(r.stdout)
	if r.code != exitOK || m == nil || strings.Contains(r.stdout, "rebuilds") {
		t.Fatalf("status after a crawl: %s; want the file published and nothing to rebuild", r)
	}
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte(strings.Replace(string(b), m[1], m[1]+".new", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCommand(t, "status", "-config", config)
	if r.code != exitOK || !strings.Contains(r.stdout, "index: file "+m[1]+"\n") ||
		!strings.Contains(r.stdout, "  next crawl rebuilds: file "+m[1]+".new, as the configuration now asks") {
		t.Errorf("status with another target configured: %s", r)
	}
}

func TestAskNeedsAnIndexWithEmbeddingsAndAQuestion(t *testing.T) {
	config, _ := crawledStore(t)
	for _, c := range []struct {
		args []string
		say  string
	}{
		{[]string{"-config", config}, "give the question after the flags"},
		{[]string{"-config", config, "-mode", "fuzzy", "why?"}, `-mode "fuzzy" is not lexical, knn, hybrid or all`},
		{[]string{"-config", config, "why?"}, "has no elasticsearch.embeddings: its index holds no passages to ask"},
	} {
		r := runCommand(t, append([]string{"ask"}, c.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.say) {
			t.Errorf("ask %q: %s; want exit 2 saying %q", c.args, r, c.say)
		}
	}
}
