package mapping

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/docfields"
)

// Each heading of the indexed text starts a section at its place in the
// body, with its level and the anchor that leads to it: its own id, the id
// of an element opened right before it, or an <a name> inside it. Headings
// in removed parts start none.
func TestHeadingsStartSectionsWithTheirAnchors(t *testing.T) {
	x := newExtractor(t, nil)
	res := extract(t, x, "http://h.test/a.html", `<html><body>
<header><h1 id="site">Site name</h1></header>
<p>Intro text.</p>
<section id="install"><span id="s1"></span><h2>Installing <em>it</em></h2><p>Run the installer.</p>
<h3 id="own">Own id</h3><p>Text three.</p>
<h3><a name="named"></a>Named anchor</h3><p>Text four.</p>
</section>
<div id="loose"><p>Some text first.</p><h2>No anchor</h2><p>Five.</p></div>
<div class="noindex"><h2 id="hidden">Hidden</h2><p>gone</p></div>
<!--noindex--><h2 id="hidden2">Also hidden</h2><!--endnoindex-->
<h4 id=" spaced ">Last</h4>
</body></html>`)
	d := res.Doc
	want := []docfields.Section{
		{Level: 2, Title: "Installing it", Anchor: "install"},
		{Level: 3, Title: "Own id", Anchor: "own"},
		{Level: 3, Title: "Named anchor", Anchor: "named"},
		{Level: 2, Title: "No anchor"},
		{Level: 4, Title: "Last", Anchor: "spaced"},
	}
	if len(d.Sections) != len(want) {
		t.Fatalf("sections %+v, want %d", d.Sections, len(want))
	}
	for i, w := range want {
		got := d.Sections[i]
		if got.Level != w.Level || got.Title != w.Title || got.Anchor != w.Anchor {
			t.Errorf("section %d = %+v, want %+v", i, got, w)
		}
		if !strings.HasPrefix(strings.TrimSpace(d.Body[got.Offset:]), w.Title) {
			t.Errorf("section %d starts at %q, not at its heading %q", i, d.Body[got.Offset:], w.Title)
		}
	}
}

// A real Sphinx site: every section heading of a debian-policy chapter is
// found with the id of its <section>, which its permalink names too.
func TestRealDocumentationSectionsCarryTheirPermalinkAnchors(t *testing.T) {
	path := filepath.Join(realDocsDir(), "ch-binary.html")
	body, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("no documentation site at %s (install debian-policy or set CRAWLSPACE_REAL_DOCS)", realDocsDir())
	}
	x := newExtractor(t, nil)
	res := extract(t, x, "http://policy.test/ch-binary.html", string(body))
	byTitle := map[string]docfields.Section{}
	for _, s := range res.Doc.Sections {
		byTitle[s.Title] = s
	}
	for title, anchor := range map[string]string{
		"3. Binary packages ¶":                                 "binary-packages",
		"3.1. The package name ¶":                              "the-package-name",
		"3.2.1. Version numbers based on dates ¶":              "version-numbers-based-on-dates",
		"3.1.1. Packages with potentially offensive content ¶": "packages-with-potentially-offensive-content",
	} {
		s, ok := byTitle[title]
		switch {
		case !ok:
			t.Errorf("no section %q among %d", title, len(res.Doc.Sections))
		case s.Anchor != anchor:
			t.Errorf("section %q anchored at %q, want %q", title, s.Anchor, anchor)
		}
	}
	if len(res.Doc.Sections) != len(res.Doc.Headings) {
		t.Errorf("%d sections for %d headings", len(res.Doc.Sections), len(res.Doc.Headings))
	}
}
