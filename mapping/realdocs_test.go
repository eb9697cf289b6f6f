package mapping

import (
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// realDocsDir is a Sphinx documentation site from a Debian package:
// apt-get install --no-install-recommends debian-policy. CRAWLSPACE_REAL_DOCS
// points elsewhere (for example at a dpkg -x tree).
func realDocsDir() string {
	if d := os.Getenv("CRAWLSPACE_REAL_DOCS"); d != "" {
		return d
	}
	return "/usr/share/doc/debian-policy/policy.html"
}

// TestRealDocumentationSiteGivesTitledDocuments maps every page of a real
// documentation site: each must get its own <title>, a body, and links that
// stay on the site's pages.
func TestRealDocumentationSiteGivesTitledDocuments(t *testing.T) {
	root := realDocsDir()
	if _, err := os.Stat(filepath.Join(root, "index.html")); err != nil {
		t.Skipf("no documentation site at %s (install debian-policy or set CRAWLSPACE_REAL_DOCS)", root)
	}
	cfg := loadConfig(t, "sources:\n  - name: policy\n    start_urls: [\"http://policy.test/\"]\n")
	x := New(cfg, &cfg.Sources[0])
	titles := map[string]string{}
	pages := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".html") {
			return err
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		u, _ := url.Parse("http://docs.example.test/policy/" + filepath.ToSlash(rel))
		res, err := x.Extract(Page{URL: u, Header: http.Header{"Content-Type": {"text/html"}}, Body: body})
		if err != nil {
			return err
		}
		pages++
		d2 := res.Doc
		if prev, dup := titles[d2.Title]; dup {
			t.Errorf("%s and %s share the title %q", rel, prev, d2.Title)
		}
		titles[d2.Title] = rel
		if d2.Title == urlTitle(u) {
			t.Errorf("%s: title %q came from the URL, not the page", rel, d2.Title)
		}
		if len(d2.Body) < 100 && !strings.Contains(rel, "search") {
			t.Errorf("%s: body of %d bytes: %q", rel, len(d2.Body), d2.Body)
		}
		if !utf8.ValidString(d2.Body) || res.Charset != "utf-8" {
			t.Errorf("%s: charset %s", rel, res.Charset)
		}
		if strings.Contains(d2.Body, "function(") || strings.Contains(d2.Body, "{\"") {
			t.Errorf("%s: script text in the body", rel)
		}
		for _, l := range res.Links {
			if strings.HasPrefix(l.URL, "http://docs.example.test/") && !strings.HasPrefix(l.URL, "http://docs.example.test/policy/") {
				t.Errorf("%s: link %s escapes the site", rel, l.URL)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d pages, titles such as %q", pages, titles)
	if pages < 10 {
		t.Errorf("only %d pages", pages)
	}
}
