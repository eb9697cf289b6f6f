package pdf

import (
	"testing"

	"github.com/crawlspace/crawlspace/document"
)

// Each page with text starts a part of the body, and each bookmark that
// leads to a page heads that page's text at its level: passages are cut
// along them and link to their page.
func TestPagesAndBookmarksArePartsOfTheBody(t *testing.T) {
	c := mustRead(t, "users-and-groups.pdf", document.Limits{})
	if len(c.Parts) != c.Pages {
		t.Fatalf("%d parts for %d pages", len(c.Parts), c.Pages)
	}
	for i, p := range c.Parts {
		if p.Page != i+1 || p.Level != 0 || (i > 0 && p.Offset <= c.Parts[i-1].Offset) || p.Offset >= len(c.Body) {
			t.Errorf("part %d %+v", i, p)
		}
	}
	c = mustRead(t, "live-manual.de.pdf", document.Limits{})
	marks, last := 0, -1
	for _, p := range c.Parts {
		if p.Offset < last {
			t.Fatalf("parts out of body order: %+v", c.Parts)
		}
		last = p.Offset
		if p.Title != "" {
			marks++
			if p.Level < 1 {
				t.Errorf("bookmark %+v has no level", p)
			}
		}
	}
	if marks < 10 || c.Parts[9].Title != "Über Live Systeme" || c.Parts[9].Page != 9 || c.Parts[8].Page != 9 || c.Parts[8].Title != "" {
		t.Errorf("%d bookmarks; parts 8 and 9: %+v %+v, want page 9 then its bookmark", marks, c.Parts[8], c.Parts[9])
	}
}
