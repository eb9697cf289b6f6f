package office

import (
	"archive/zip"
	"fmt"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/document"
	"github.com/crawlspace/crawlspace/internal/hostile"
)

// Every part a reader walks is held to the token bound: a comment longer
// than it, put after the XML declaration, is too_large naming the part,
// in the body parts and the metadata parts of each kind.
func TestATokenPastTheBoundIsTooLargeInEveryPartRead(t *testing.T) {
	lim := document.Limits{MaxToken: 64 << 10}
	long := "<!--" + strings.Repeat("a", 128<<10) + "-->"
	for _, c := range []struct {
		file, part string
		kind       Kind
	}{
		{"text.docx", "word/document.xml", DOCX},
		{"text.docx", "docProps/core.xml", DOCX},
		{"text.docx", "word/_rels/document.xml.rels", DOCX},
		{"sheets.xlsx", "xl/sharedStrings.xml", XLSX},
		{"sheets.xlsx", "xl/worksheets/sheet1.xml", XLSX},
		{"slides.pptx", "ppt/slides/slide1.xml", PPTX},
		{"text.odt", "content.xml", ODT},
		{"text.odt", "meta.xml", ODT},
		{"sheets.ods", "content.xml", ODS},
		{"slides.odp", "content.xml", ODP},
	} {
		data := rewrite(t, fixture(t, c.file), zip.Deflate, map[string]func(string) string{
			c.part: func(s string) string {
				i := strings.Index(s, "?>") + len("?>")
				return s[:i] + long + s[i:]
			},
		})
		err := readErr(t, c.kind, data, lim)
		reasonOf(t, err, document.ReasonTooLarge)
		if !strings.Contains(err.Error(), c.part+": an XML token") || !strings.Contains(err.Error(), "documents.max_xml_token_bytes") {
			t.Errorf("%s %s: %q does not name the part and the bound", c.file, c.part, err)
		}
	}
}

// A text run within Limits.MaxToken is read, as far as the body goes;
// one past it is too_large.
func TestATextRunWithinTheBoundIsRead(t *testing.T) {
	lim := document.Limits{MaxToken: 256 << 10, MaxText: 64 << 10}
	c := read(t, DOCX, hostile.DocxTextRun(192<<10), lim)
	if !c.Truncated || !strings.HasPrefix(c.Body, "before\naaaa") || len(c.Body) != lim.MaxText {
		t.Errorf("truncated %v, %d bytes %.20q; want the run up to the body's limit", c.Truncated, len(c.Body), c.Body)
	}
	reasonOf(t, readErr(t, DOCX, hostile.DocxTextRun(320<<10), lim), document.ReasonTooLarge)
}

// A file of nothing but links gives document.MaxLinks of them, the first
// ones, in order.
func TestTheLinksOfAFileStopAtMaxLinks(t *testing.T) {
	c := read(t, DOCX, hostile.DocxFieldLinks(document.MaxLinks+5000), document.Limits{})
	if len(c.Links) != document.MaxLinks || c.Links[0] != "https://example.org/0" ||
		c.Links[len(c.Links)-1] != fmt.Sprintf("https://example.org/%d", document.MaxLinks-1) {
		t.Errorf("%d links, from %q to %q; want the first %d", len(c.Links), c.Links[0], c.Links[len(c.Links)-1], document.MaxLinks)
	}
}
