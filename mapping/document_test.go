package mapping

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/document"
)

func fromDocument(t *testing.T, x *Extractor, rawURL string, c *document.Content, header ...string) *Result {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Add(header[i], header[i+1])
	}
	res, err := x.FromDocument(Page{URL: u, Header: h, Source: "site", Fetched: time.Unix(0, 0),
		AddMeta: map[string]string{"category": "Reports"}}, "application/pdf", c)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A document's title is its own, then its first heading, then the file
// name made readable.
func TestADocumentTitleIsItsOwnThenItsFirstHeadingThenTheFileName(t *testing.T) {
	x := newExtractor(t, nil)
	for _, tc := range []struct {
		c    document.Content
		want string
	}{
		{document.Content{Title: "  Annual  report ", Heading: "Introduction"}, "Annual report"},
		{document.Content{Heading: "Introduction"}, "Introduction"},
		{document.Content{}, "annual report 2024"},
	} {
		if got := fromDocument(t, x, "http://h.test/files/annual_report-2024.pdf", &tc.c).Doc.Title; got != tc.want {
			t.Errorf("title %q, want %q", got, tc.want)
		}
	}
}

// What a file says about itself wins over the headers; the headers fill
// what it leaves out. Links are resolved against the file's URL and
// deduplicated, and crawl rule add_meta fills extra fields as for pages.
func TestADocumentsOwnMetadataWinsAndHeadersFillTheRest(t *testing.T) {
	x := newExtractor(t, func(c *config.Config) {})
	own := time.Date(2024, 3, 1, 9, 30, 0, 0, time.FixedZone("CET", 3600))
	res := fromDocument(t, x, "http://h.test/docs/a.pdf", &document.Content{
		Authors: []string{"Ann Example", "Ann Example", "Bo Sample"}, Subject: "What it is about",
		Keywords: []string{"budget", " plans "}, Language: "en-GB", Modified: own, Body: "Text of the file.",
		Pages: 12, Links: []string{"b.pdf", "http://other.test/x", "b.pdf#page=2", "mailto:a@h.test"},
	}, "Last-Modified", "Mon, 02 Jan 2006 15:04:05 GMT", "Content-Language", "de")
	d := res.Doc
	if !d.Modified.Equal(own) || d.Language != "en-gb" || d.Pages != 12 || d.Description != "What it is about" {
		t.Errorf("modified %v language %q pages %d description %q", d.Modified, d.Language, d.Pages, d.Description)
	}
	if !slices.Equal(d.Author, []string{"Ann Example", "Bo Sample"}) || !slices.Equal(d.Keywords, []string{"budget", "plans"}) {
		t.Errorf("authors %q keywords %q", d.Author, d.Keywords)
	}
	var links []string
	for _, l := range res.Links {
		links = append(links, l.URL)
	}
	if want := []string{"http://h.test/docs/b.pdf", "http://other.test/x"}; !slices.Equal(links, want) {
		t.Errorf("links %q, want %q", links, want)
	}
	if got := d.Extra["extra_category"]; !slices.Equal(got, []string{"Reports"}) {
		t.Errorf("extra_category %q", got)
	}

	bare := fromDocument(t, x, "http://h.test/docs/a.pdf", &document.Content{Body: "x"},
		"Last-Modified", "Mon, 02 Jan 2006 15:04:05 GMT", "Content-Language", "de")
	if want := time.Date(2006, 1, 2, 15, 4, 5, 0, time.UTC); !bare.Doc.Modified.Equal(want) || bare.Doc.Language != "de" {
		t.Errorf("without its own: modified %v language %q, want the headers'", bare.Doc.Modified, bare.Doc.Language)
	}
}

// The content hash covers what a search sees: the same file served with a
// new Last-Modified hashes the same, a changed text does not.
func TestADocumentServedWithANewLastModifiedHashesTheSame(t *testing.T) {
	x := newExtractor(t, nil)
	c := &document.Content{Title: "T", Body: "same words"}
	a := fromDocument(t, x, "http://h.test/a.pdf", c, "Last-Modified", "Mon, 02 Jan 2006 15:04:05 GMT")
	b := fromDocument(t, x, "http://h.test/a.pdf", c, "Last-Modified", "Tue, 03 Jan 2006 15:04:05 GMT")
	if a.Doc.ContentHash != b.Doc.ContentHash {
		t.Error("a new Last-Modified changed the content hash")
	}
	c2 := &document.Content{Title: "T", Body: "other words"}
	if fromDocument(t, x, "http://h.test/a.pdf", c2).Doc.ContentHash == a.Doc.ContentHash {
		t.Error("a changed body kept the content hash")
	}
}

// X-Robots-Tag governs a document as it does a page, and the body is cut
// at max_body_bytes even when the reader gave more.
func TestADocumentObeysXRobotsTagAndTheBodyLimit(t *testing.T) {
	x := newExtractor(t, func(c *config.Config) { c.Sources[0].Extraction.MaxBodyBytes = 8 })
	res := fromDocument(t, x, "http://h.test/a.pdf", &document.Content{Body: "ééééé"}, "X-Robots-Tag", "noindex, nosnippet")
	if !res.Robots.NoIndex || !res.Doc.NoSnippet {
		t.Errorf("robots %+v nosnippet %v", res.Robots, res.Doc.NoSnippet)
	}
	if res.Doc.Body != "éééé" || !res.BodyTruncated {
		t.Errorf("body %q truncated %v, want four é and truncated", res.Doc.Body, res.BodyTruncated)
	}
}
