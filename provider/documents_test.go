package provider_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/document"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/hostile"
	"github.com/crawlspace/crawlspace/provider"
)

// testDocType is a document format only these tests read: its files start
// with "TESTDOC", then a title line, then text. Its reader misbehaves as a
// file asks, so the crawler's guards around every reader can be seen at
// work: "PANIC" panics, "HANG" ignores its context until the test ends,
// "DOWN" answers as an extractor out of reach does while down is set.
const testDocType = "application/x-crawlspace-test"

type testReader struct {
	hang chan struct{}
	down *atomic.Bool
}

func (r testReader) Read(ctx context.Context, data []byte, lim document.Limits) (*document.Content, error) {
	title, body, _ := strings.Cut(strings.TrimPrefix(string(data), "TESTDOC\n"), "\n")
	switch {
	case strings.Contains(body, "PANIC"):
		var m map[string]int
		//lint:ignore SA5000 the panic is the parser's bug this reader stands for
		m["boom"]++ // a parser's bug
	case strings.Contains(body, "HANG"):
		<-r.hang // a parser in a loop that never looks at ctx
	case strings.Contains(body, "DOWN") && r.down.Load():
		return nil, &document.Error{Reason: document.ReasonUnavailable, Err: errors.New("connection refused")}
	}
	t := document.NewText(lim.WithDefaults().MaxText)
	t.WriteString(body)
	return &document.Content{Title: title, Body: t.String(), Pages: 1}, nil
}

func addTestFormat(t *testing.T) *atomic.Bool {
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	down := new(atomic.Bool)
	provider.AddFormat(t, provider.Format{Types: []string{testDocType},
		Magic:  func(b []byte) bool { return strings.HasPrefix(string(b), "TESTDOC\n") },
		Reader: func(*config.Config) (document.Reader, error) { return testReader{hang, down}, nil }})
	return down
}

// A parser that panics costs its own file, recorded as corrupt with the
// panic's message; the crawl goes on and indexes the other files.
func TestAReaderThatPanicsCostsItsFileOnlyRecordedAsCorrupt(t *testing.T) {
	addTestFormat(t)
	site := newSite(t)
	site.html("/", "home", links("/good.tdoc", "/bad.tdoc"))
	site.text("/good.tdoc", testDocType, "TESTDOC\nGood file\nplain words")
	site.text("/bad.tdoc", testDocType, "TESTDOC\nBad file\nPANIC here")
	cfg, out := testConfig(t, "", "mime_types: [text/html, "+testDocType+"]", site.URL+"/")

	c, report := crawlKeep(t, cfg)

	if got, want := indexedURLs(t, out), sortedURLs(site.URL, "/", "/good.tdoc"); !slicesEqual(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
	wantState(t, c, site.URL+"/bad.tdoc", frontier.Excluded, document.ReasonCorrupt)
	if d := exampleAt(report, document.ReasonCorrupt, site.URL+"/bad.tdoc"); !strings.Contains(d, "nil map") {
		t.Errorf("detail %q does not carry the panic's message", d)
	}
	if report.Total.Reasons[document.ReasonCorrupt] != 1 {
		t.Errorf("report reasons %v, want one corrupt", report.Total.Reasons)
	}
}

// A parser that never returns is left behind once documents.timeout and a
// grace are over: the file is an error of reason extract_timeout, and the
// crawl finishes instead of waiting on it.
func TestAReaderThatIgnoresItsTimeLimitIsLeftBehindAndTheFileTimesOut(t *testing.T) {
	addTestFormat(t)
	site := newSite(t)
	site.html("/", "home", links("/good.tdoc", "/slow.tdoc"))
	site.text("/good.tdoc", testDocType, "TESTDOC\nGood file\nplain words")
	site.text("/slow.tdoc", testDocType, "TESTDOC\nSlow file\nHANG forever")
	cfg, out := testConfig(t, "documents: {timeout: 1s}", "mime_types: [text/html, "+testDocType+"]", site.URL+"/")

	// The reader never returns: the grace is waited out whole.
	c, report := crawlTimed(t, cfg, provider.Timing{ReadGrace: 50 * time.Millisecond})

	if got, want := indexedURLs(t, out), sortedURLs(site.URL, "/", "/good.tdoc"); !slicesEqual(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
	wantState(t, c, site.URL+"/slow.tdoc", frontier.Error, document.ReasonTimeout)
	if d := exampleAt(report, document.ReasonTimeout, site.URL+"/slow.tdoc"); !strings.Contains(d, "documents.timeout 1s") || !strings.Contains(d, "left running") {
		t.Errorf("detail %q does not say the time limit and that the reader was left running", d)
	}
}

// Documents have their own size limit: a file over max_body_bytes but
// within max_document_bytes is read, one over max_document_bytes is left
// out too_large naming the key, and pages keep max_body_bytes.
func TestDocumentsHaveTheirOwnSizeLimitApartFromPages(t *testing.T) {
	addTestFormat(t)
	site := newSite(t)
	site.html("/", "home", links("/big-page.html", "/mid.tdoc", "/huge.tdoc"))
	site.html("/big-page.html", "big", strings.Repeat("word ", 600))
	site.text("/mid.tdoc", testDocType, "TESTDOC\nMid\n"+strings.Repeat("word ", 600))
	site.text("/huge.tdoc", testDocType, "TESTDOC\nHuge\n"+strings.Repeat("word ", 2000))
	cfg, out := testConfig(t, "fetch: {max_body_bytes: 2000, max_document_bytes: 5000}",
		"mime_types: [text/html, "+testDocType+"]", site.URL+"/")

	c, report := crawlKeep(t, cfg)

	if got, want := indexedURLs(t, out), sortedURLs(site.URL, "/", "/mid.tdoc"); !slicesEqual(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
	wantState(t, c, site.URL+"/huge.tdoc", frontier.Excluded, "too_large")
	if d := exampleAt(report, "too_large", site.URL+"/huge.tdoc"); !strings.Contains(d, "fetch.max_document_bytes") {
		t.Errorf("huge.tdoc: detail %q does not name fetch.max_document_bytes", d)
	}
	wantState(t, c, site.URL+"/big-page.html", frontier.Excluded, "too_large")
	if d := exampleAt(report, "too_large", site.URL+"/big-page.html"); !strings.Contains(d, "fetch.max_body_bytes") {
		t.Errorf("big-page.html: detail %q does not name fetch.max_body_bytes", d)
	}
}

// An Office file whose one text run is past documents.max_xml_token_bytes,
// as set in the config, is recorded too_large for its URL, with the part
// and the key in the report; a run within it is indexed. (What such files
// cost, and the reader's other bounds: document/office's tests.)
func TestAnOfficeFilePastTheTokenBoundIsTooLargeForItsURL(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	// 2 MiB would be within the default bound of 8 MiB.
	site.serveFile("/long.docx", mimeDOCX, hostile.DocxTextRun(2<<20), nil)
	site.serveFile("/short.docx", mimeDOCX, hostile.DocxTextRun(512<<10), nil)
	site.html("/", "home", links("/long.docx", "/short.docx"))
	cfg, out := testConfig(t, "documents: {max_xml_token_bytes: 1MiB}", "", site.URL+"/")

	c, report := crawlKeep(t, cfg)

	wantState(t, c, site.URL+"/long.docx", frontier.Excluded, document.ReasonTooLarge)
	want := "word/document.xml: an XML token (a text run, or a tag with its attributes) longer than 1048576 bytes (documents.max_xml_token_bytes)"
	if d := exampleAt(report, document.ReasonTooLarge, site.URL+"/long.docx"); !strings.Contains(d, want) {
		t.Errorf("long.docx: detail %q, want it to say %q", d, want)
	}
	if got, want := indexedURLs(t, out), sortedURLs(site.URL, "/", "/short.docx"); !slicesEqual(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
}

// The bytes decide what a file is when its Content-Type says nothing or
// names another format: a file served as application/octet-stream is read
// by the format whose signature it bears, and so is one served as
// text/html, which is reported as a mismatch; a body of no known kind
// served as application/octet-stream is refused by mime_types.
func TestTheBytesDecideAFileTypeWhenTheContentTypeSaysNothingOrContradictsThem(t *testing.T) {
	addTestFormat(t)
	site := newSite(t)
	site.html("/", "home", links("/download?id=1", "/mislabelled.html", "/blob.bin"))
	site.text("/download", "application/octet-stream", "TESTDOC\nDownloaded file\nserved as a download")
	site.text("/mislabelled.html", "text/html; charset=utf-8", "TESTDOC\nMislabelled file\nserved as HTML")
	site.text("/blob.bin", "application/octet-stream", "\x00\x01\x02 no signature at all")
	cfg, out := testConfig(t, "", "mime_types: [text/html, "+testDocType+"]\nhonored_query_params: ['*']", site.URL+"/")

	c, report := crawlKeep(t, cfg)

	got := map[string]string{}
	for _, a := range readBulk(t, out) {
		if a.op == "index" {
			got[a.doc.URL] = a.doc.Title + " | " + a.doc.ContentType
		}
	}
	for path, want := range map[string]string{
		"/download?id=1":    "Downloaded file | " + testDocType,
		"/mislabelled.html": "Mislabelled file | " + testDocType,
	} {
		if got[site.URL+path] != want {
			t.Errorf("%s indexed as %q, want %q", path, got[site.URL+path], want)
		}
	}
	if d := exampleFor(report, "content_type_mismatch"); d != "served as text/html, read as "+testDocType {
		t.Errorf("content_type_mismatch example %q", d)
	}
	if _, ok := got[site.URL+"/download?id=1"]; ok && report.Total.Reasons["content_type_mismatch"] != 1 {
		t.Errorf("a download served as octet-stream is no mismatch: reasons %v", report.Total.Reasons)
	}
	wantState(t, c, site.URL+"/blob.bin", frontier.Excluded, "mime_type")
}

// An extractor out of reach (a Tika server down) is not the file's fault:
// the file waits and is tried again, its indexed document is never
// deleted for it, and once the extractor answers it is read.
func TestAnExtractorOutOfReachDelaysTheFileAndNeverDeletesItsDocument(t *testing.T) {
	down := addTestFormat(t)
	site := newSite(t)
	site.html("/", "home", links("/report.tdoc"))
	site.text("/report.tdoc", testDocType, "TESTDOC\nReport\nDOWN sometimes")
	cfg, out := testConfig(t, "", "mime_types: [text/html, "+testDocType+"]\nmax_age: 1ns", site.URL+"/")

	c, _ := crawlTimed(t, cfg, provider.Timing{RetryBase: 10 * time.Millisecond})
	if got := indexedURLs(t, out); len(got) != 2 {
		t.Fatalf("first crawl indexed %v, want the home page and the report", got)
	}
	down.Store(true)
	report := again(t, c)
	if ids := deletedIDs(t, out); len(ids) != 0 {
		t.Errorf("deleted %v while the extractor was down", ids)
	}
	wantState(t, c, site.URL+"/report.tdoc", frontier.Error, document.ReasonUnavailable)
	if n := site.hit("/report.tdoc"); n != 1+cfg.Sources[0].MaxTemporaryErrors {
		t.Errorf("report.tdoc fetched %d times, want once and then once per wait (%d)", n, cfg.Sources[0].MaxTemporaryErrors)
	}
	if n := report.Total.Reasons[document.ReasonUnavailable]; n != cfg.Sources[0].MaxTemporaryErrors || report.Total.Errors != 1 {
		t.Errorf("report counts %s %d times and %d errors, want once per attempt and one error", document.ReasonUnavailable, n, report.Total.Errors)
	}
	down.Store(false)
	again(t, c)
	wantState(t, c, site.URL+"/report.tdoc", frontier.Fetched, "")
	if ids := deletedIDs(t, out); len(ids) != 0 {
		t.Errorf("deleted %v", ids)
	}
}

func slicesEqual(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// exampleAt is the detail the report keeps for url under reason.
func exampleAt(r *provider.Report, reason, url string) string {
	for _, e := range r.Examples {
		if e.Reason == reason && e.URL == url {
			return e.Detail
		}
	}
	return ""
}
