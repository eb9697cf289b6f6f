package provider_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/internal/crawltest"
)

// A re-crawl's unchanged pages settle their group of duplicates: here a
// copy leaves the crawl space by a config change, which regroups nothing,
// and the primary's 304 finds its document listing a member the group no
// longer has, so its document's list is rewritten from the store, with no
// second request for the page.
func TestAnUnchangedPrimarySettlesAGroupACopyLeftWithoutAnOutcome(t *testing.T) {
	t.Parallel()
	site, state := newMutableSite(t), t.TempDir()
	out := filepath.Join(t.TempDir(), "docs.ndjson")
	site.set("/", "Home", "Welcome.", "/a.html", "/copy/a.html")
	for _, p := range []string{"/a.html", "/copy/a.html"} {
		site.set(p, "Policy", "The same text.")
	}
	config := func(exclude string) string {
		return fmt.Sprintf(`
output: {file: %q}
state_dir: %s
allow_private_networks: true
sources:
  - name: site
    start_urls: [%q]
    max_age: 1ms
    exclude: [%q]
`, out, state, site.URL+"/", exclude)
	}
	// primary replays the file sink's actions and returns /a.html's
	// document as the index would hold it.
	primary := func() *docfields.Document {
		t.Helper()
		var doc *docfields.Document
		for _, a := range readBulk(t, out) {
			if a.id == docfields.ID(site.URL+"/a.html") {
				doc = a.apply(t, doc)
			}
		}
		return doc
	}
	crawl(t, crawltest.Config(t, config("/nothing/")))
	if d := primary(); d == nil || !slices.Equal(d.Duplicates, []string{site.URL + "/copy/a.html"}) {
		t.Fatalf("first crawl: /a.html's document %+v, want it listing the copy", d)
	}

	letMaxAgePass(t)
	notModified, fetches := site.notMod.Load(), site.fetchCount("/a.html")
	crawl(t, crawltest.Config(t, config(`regexp:/copy/a\.html$`)))
	if d := primary(); d == nil || len(d.Duplicates) != 0 {
		t.Errorf("after the copy left: /a.html's document %+v, want it listing no duplicates", d)
	}
	// / and /a.html answered 304, and /a.html was not requested again.
	if n := site.notMod.Load() - notModified; n != 2 {
		t.Errorf("%d answers 304 in the re-crawl, want 2 (/ and /a.html)", n)
	}
	if n := site.fetchCount("/a.html") - fetches; n != 0 {
		t.Errorf("the re-crawl fetched /a.html whole %d times after its 304, want none", n)
	}
}
