package provider_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/document"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/tikatest"
	"github.com/crawlspace/crawlspace/internal/wordmatch"
)

// fixture reads a file of the repository, relative to its root.
func fixture(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// serveFile answers path with body under contentType, and a Last-Modified
// that lastModified can change between crawls.
func (s *testSite) serveFile(path, contentType string, body []byte, lastModified *time.Time) {
	s.handle(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		if lastModified != nil {
			w.Header().Set("Last-Modified", lastModified.UTC().Format(http.TimeFormat))
		}
		w.Write(body)
	})
}

const (
	mimeDOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	mimeXLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	mimePPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
	mimeODT  = "application/vnd.oasis.opendocument.text"
	mimeODS  = "application/vnd.oasis.opendocument.spreadsheet"
	mimeODP  = "application/vnd.oasis.opendocument.presentation"
)

// Real documents (PDFs from Debian packages, Office and OpenDocument files
// LibreOffice made, RTF, legacy-encoded text) are crawled into the real
// node beside HTML with the default mime_types: each is indexed with its
// own title, authors, dates and page count and a body whose words are the
// reference tool's; links inside a PDF and a Word file are followed;
// encrypted, truncated and text-less files are recorded with their
// reasons; a PDF served as a download and an HTML page served as a PDF are
// read as what their bytes are; and a second crawl, with every
// Last-Modified moved on, writes nothing.
func TestRealDocumentsAreIndexedWithTheirFieldsTextAndLinks(t *testing.T) {
	t.Parallel()
	esURL, index := estest.URL(t), estest.Index(t)
	site := newSite(t)
	lm := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	files := []struct{ path, typ, file string }{
		{"/files/price-list.docx", mimeDOCX, "testdata/site/docs/branch-price-list.docx"},
		{"/files/ordering-client-manual.pdf", "application/pdf", "testdata/site/docs/ordering-client-manual.pdf"},
		{"/files/users-and-groups.pdf", "application/pdf", "document/pdf/testdata/users-and-groups.pdf"},
		{"/files/live-manual.pdf", "application/pdf", "document/pdf/testdata/live-manual.de.pdf"},
		{"/files/text.docx", mimeDOCX, "document/office/testdata/text.docx"},
		{"/files/sheets.xlsx", mimeXLSX, "document/office/testdata/sheets.xlsx"},
		{"/files/slides.pptx", mimePPTX, "document/office/testdata/slides.pptx"},
		{"/files/text.odt", mimeODT, "document/office/testdata/text.odt"},
		{"/files/sheets.ods", mimeODS, "document/office/testdata/sheets.ods"},
		{"/files/slides.odp", mimeODP, "document/office/testdata/slides.odp"},
		{"/files/report.rtf", "application/rtf", "document/rtf/testdata/report.rtf"},
		{"/files/notes.txt", "text/plain", "document/text/testdata/copyright.windows-1252.txt"},
		{"/files/secret.pdf", "application/pdf", "document/pdf/testdata/encrypted-user.pdf"},
		{"/files/secret.docx", mimeDOCX, "document/office/testdata/encrypted.docx"},
		{"/files/scanned.pdf", "application/pdf", "document/pdf/testdata/scanned.pdf"},
		{"/download", "application/octet-stream", "document/pdf/testdata/users-and-groups.pdf"},
	}
	var home strings.Builder
	for _, f := range files {
		site.serveFile(f.path, f.typ, fixture(t, f.file), &lm)
		if f.path != "/files/ordering-client-manual.pdf" { // reached only through the Word file's link
			fmt.Fprintf(&home, `<a href="%s">%s</a> `, f.path, f.path)
		}
	}
	pdfBytes := fixture(t, "document/pdf/testdata/users-and-groups.pdf")
	site.serveFile("/files/truncated.pdf", "application/pdf", pdfBytes[:len(pdfBytes)/2], &lm)
	site.serveFile("/files/fake.pdf", "application/pdf", []byte("<!DOCTYPE html><html><head><title>Not a PDF</title></head><body><p>An error page.</p></body></html>"), &lm)
	site.html("/files/install.html", "Installing", "<p>Reached from the manual's link.</p>")
	site.html("/", "home", home.String()+`<a href="/files/truncated.pdf">t</a> <a href="/files/fake.pdf">f</a>`)
	cfg, _ := testConfig(t, fmt.Sprintf("elasticsearch: {addresses: [%q], index: %s, replicas: 0}", esURL, index),
		"honored_query_params: ['*']\nkeep_duplicates: true", site.URL+"/") // some files are served twice, each a document here

	c, report := crawlKeep(t, cfg)

	docs := searchAll(t, esURL, index)
	doc := func(path string) *docfields.Document {
		t.Helper()
		d := docs[docfields.ID(site.URL+path)]
		if d == nil {
			t.Fatalf("%s is not in the index; report reasons %v", path, report.Total.Reasons)
		}
		return d
	}
	recall := func(path, refFile string, min float64) {
		t.Helper()
		d := doc(path)
		if r := wordmatch.Recall(wordmatch.Words(string(fixture(t, refFile))), wordmatch.Words(d.Body)); r < min {
			t.Errorf("%s: word recall %.3f against %s, want at least %.2f", path, r, refFile, min)
		}
	}
	recall("/files/users-and-groups.pdf", "document/pdf/testdata/users-and-groups.txt", 0.98)
	recall("/files/live-manual.pdf", "document/pdf/testdata/live-manual.de.txt", 0.98)
	for _, p := range []string{"/files/text.docx", "/files/text.odt"} {
		recall(p, "document/office/testdata/text.ref.txt", 0.97)
	}
	for _, p := range []string{"/files/sheets.xlsx", "/files/sheets.ods"} {
		recall(p, "document/office/testdata/sheets.ref.txt", 0.97)
	}
	for _, p := range []string{"/files/slides.pptx", "/files/slides.odp"} {
		recall(p, "document/office/testdata/slides.ref.txt", 0.97)
	}
	recall("/files/report.rtf", "document/rtf/testdata/report.txt", 0.97)
	if got, want := doc("/files/notes.txt").Body, string(fixture(t, "document/text/testdata/copyright.utf-8.txt")); wordmatch.Recall(wordmatch.Words(want), wordmatch.Words(got)) != 1 {
		t.Errorf("windows-1252 text not read as its UTF-8 original:\n%.300s", got)
	}

	for path, want := range map[string]struct {
		title, author, typ string
		pages              int
	}{
		"/files/users-and-groups.pdf":       {"Users and Groups in the Debian System", "", "application/pdf", 0},
		"/files/ordering-client-manual.pdf": {"Ordering Client Manual", "Northwind IT Services", "application/pdf", 2},
		"/files/text.docx":                  {"Quarterly Report on Crawling", "Zoë Ångström", mimeDOCX, 0},
		"/files/sheets.xlsx":                {"Crawl Budget Workbook", "Zoë Ångström", mimeXLSX, 0},
		"/files/slides.pptx":                {"Crawler Roadmap Slides", "Zoë Ångström", mimePPTX, 3},
		"/files/text.odt":                   {"Quarterly Report on Crawling", "Zoë Ångström", mimeODT, 2},
		"/files/slides.odp":                 {"Crawler Roadmap Slides", "Zoë Ångström", mimeODP, 3},
		"/files/report.rtf":                 {"Multilingual search: a field report", "Ada Lovelace", "application/rtf", 0},
		"/files/notes.txt":                  {"notes", "", "text/plain", 0},
		"/files/fake.pdf":                   {"Not a PDF", "", "text/html", 0},
		"/download":                         {"Users and Groups in the Debian System", "", "application/pdf", 0},
	} {
		d := doc(path)
		if d.Title != want.title || (want.author != "" && (len(d.Author) != 1 || d.Author[0] != want.author)) ||
			d.ContentType != want.typ || (want.pages > 0 && d.Pages != want.pages) {
			t.Errorf("%s: title %q authors %q type %s pages %d; want %q, %q, %s, %d",
				path, d.Title, d.Author, d.ContentType, d.Pages, want.title, want.author, want.typ, want.pages)
		}
	}
	if d := doc("/files/text.docx"); !d.Modified.Equal(time.Date(2024, 5, 6, 17, 45, 10, 0, time.UTC)) || d.Language != "de-de" {
		t.Errorf("text.docx: modified %v language %q, want its own 2024-05-06T17:45:10Z and de-de", d.Modified, d.Language)
	}
	// A PDF with no date of its own (LibreOffice writes only its creation
	// date) is as old as its Last-Modified says.
	if d := doc("/files/users-and-groups.pdf"); d.Pages < 2 || !d.Modified.Equal(lm) {
		t.Errorf("users-and-groups.pdf: pages %d modified %v, want several pages and the Last-Modified %v", d.Pages, d.Modified, lm)
	}

	// Links inside documents are followed under the same rules.
	doc("/files/ordering-client-manual.pdf") // from the Word file
	doc("/files/install.html")               // from the PDF
	// Files that cannot be read are recorded with their reasons; a scan
	// is indexed with its metadata.
	wantState(t, c, site.URL+"/files/secret.pdf", frontier.Excluded, document.ReasonEncrypted)
	wantState(t, c, site.URL+"/files/secret.docx", frontier.Excluded, document.ReasonEncrypted)
	wantState(t, c, site.URL+"/files/truncated.pdf", frontier.Excluded, document.ReasonCorrupt)
	if d := exampleAt(report, document.ReasonCorrupt, site.URL+"/files/truncated.pdf"); !strings.Contains(d, "pdfium") {
		t.Errorf("truncated.pdf: detail %q does not carry the parser's message", d)
	}
	if d := doc("/files/scanned.pdf"); d.Body != "" || d.Pages != 1 || report.Total.Reasons["no_text"] != 1 {
		t.Errorf("scanned.pdf: body %q pages %d, no_text counted %d", d.Body, d.Pages, report.Total.Reasons["no_text"])
	}
	if d := exampleAt(report, "content_type_mismatch", site.URL+"/files/fake.pdf"); d != "served as application/pdf, read as text/html" {
		t.Errorf("fake.pdf: content_type_mismatch %q", d)
	}

	// The same files with a new Last-Modified: fetched again, nothing written.
	lm = lm.Add(24 * time.Hour)
	cfg.Sources[0].MaxAge = 1
	second := again(t, c)
	if second.Total.Created+second.Total.Updated != 0 || second.Total.Unchanged < len(files) {
		t.Errorf("second crawl: created %d updated %d unchanged %d; want nothing written",
			second.Total.Created, second.Total.Updated, second.Total.Unchanged)
	}
}

// A legacy Word file goes to the Tika server that documents.tika names
// and is indexed with what Tika read; while Tika cannot be reached the
// file waits and nothing is deleted.
func TestLegacyOfficeFilesAreReadByTikaAndWaitWhileItIsDown(t *testing.T) {
	t.Parallel()
	tikaURL := tikatest.URL(t)
	site := newSite(t)
	site.html("/", "home", links("/files/report.doc"))
	site.serveFile("/files/report.doc", "application/msword", fixture(t, "document/tika/testdata/report.doc"), nil)
	cfg, out := testConfig(t, fmt.Sprintf("documents: {tika: {url: %q, types: [application/msword]}}", tikaURL), "", site.URL+"/")

	c, _ := crawlKeep(t, cfg)

	var got *docfields.Document
	for _, a := range readBulk(t, out) {
		if a.op == "index" && a.doc.URL == site.URL+"/files/report.doc" {
			got = a.doc
		}
	}
	if got == nil {
		t.Fatal("report.doc was not indexed")
	}
	if r := wordmatch.Recall(wordmatch.Words(string(fixture(t, "document/tika/testdata/report.txt"))), wordmatch.Words(got.Body)); r < 0.95 || got.ContentType != "application/msword" {
		t.Errorf("report.doc through Tika: recall %.3f type %s", r, got.ContentType)
	}
	c.Close()

	down, downOut := testConfig(t, "documents: {tika: {url: \"http://127.0.0.1:1\", types: [application/msword]}}", "", site.URL+"/")
	dc, _ := crawlKeep(t, down)
	wantState(t, dc, site.URL+"/files/report.doc", frontier.Error, document.ReasonUnavailable)
	if ids := deletedIDs(t, downOut); len(ids) != 0 {
		t.Errorf("deleted %v while Tika was down", ids)
	}
}
