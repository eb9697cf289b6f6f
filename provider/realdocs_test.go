package provider_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
)

// policyDocs is the Debian Policy Manual as the debian-policy package
// installs it: a real Sphinx site that scripts/test installs.
const policyDocs = "/usr/share/doc/debian-policy/policy.html"

// TestCrawlOfARealDocumentationSiteIndexesEveryPageWithItsOwnTitle crawls a
// documentation site nobody wrote for crawlspace (Sphinx's templates, its
// genindex and search pages, _static assets) into the real node.
func TestCrawlOfARealDocumentationSiteIndexesEveryPageWithItsOwnTitle(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(filepath.Join(policyDocs, "index.html")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("debian-policy must be installed in CI (scripts/test installs it): %v", err)
		}
		t.Skipf("debian-policy is not installed (apt-get install --no-install-recommends debian-policy): %v", err)
	}
	esURL := estest.URL(t)
	index := estest.Index(t)
	site := httptest.NewServer(http.FileServer(http.Dir(policyDocs)))
	defer site.Close()
	cfg := crawltest.Config(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0}
allow_private_networks: true
sources:
  - name: policy
    start_urls: [%q]
`, esURL, index, site.URL+"/"))

	report := crawl(t, cfg)

	pages, err := filepath.Glob(filepath.Join(policyDocs, "*.html"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range pages {
		name := filepath.Base(p)
		if name == "search.html" {
			// Only a <link rel="search"> and a form's action name it: neither is a link to follow.
			continue
		}
		if name == "index.html" {
			name = "" // the file server answers /index.html with a redirect to /
		}
		want = append(want, docfields.ID(site.URL+"/"+name))
	}
	slices.Sort(want)
	docs := searchAll(t, esURL, index)
	got := make([]string, 0, len(docs))
	for id := range docs {
		got = append(got, id)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		var urls []string
		for _, d := range docs {
			urls = append(urls, d.URL)
		}
		slices.Sort(urls)
		t.Fatalf("indexed %d documents, want the %d pages of the manual:\n%s\nreport: %+v", len(got), len(want), strings.Join(urls, "\n"), report.Total)
	}
	titles := map[string]bool{}
	for _, d := range docs {
		if titles[d.Title] {
			t.Errorf("title %q appears twice", d.Title)
		}
		titles[d.Title] = true
	}
	for path, title := range map[string]string{
		"/":                  "Debian Policy Manual — Debian Policy Manual v4.6.2.0",
		"/ch-binary.html":    "3. Binary packages — Debian Policy Manual v4.6.2.0",
		"/ap-pkg-scope.html": "",
	} {
		d := docs[docfields.ID(site.URL+path)]
		if d == nil {
			t.Errorf("%s: not indexed", path)
			continue
		}
		if title != "" && d.Title != title {
			t.Errorf("%s: title %q, want %q", path, d.Title, title)
		}
		if !strings.HasSuffix(d.Title, "Debian Policy Manual v4.6.2.0") {
			t.Errorf("%s: title %q lacks the manual's suffix", path, d.Title)
		}
		if len(d.Body) < 200 {
			t.Errorf("%s: body of %d bytes", path, len(d.Body))
		}
	}
}
