package provider

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/document"
	"github.com/crawlspace/crawlspace/document/office"
	"github.com/crawlspace/crawlspace/document/pdf"
	"github.com/crawlspace/crawlspace/document/rtf"
	"github.com/crawlspace/crawlspace/document/text"
	"github.com/crawlspace/crawlspace/document/tika"
	"github.com/crawlspace/crawlspace/mapping"
)

// Extractor turns a fetched page (its URL, headers and body as sent, the
// declared charset among the headers) into a document, the page's links
// and what the crawl needs from it: robots directives and rel=canonical.
// One is built per source and format; it is safe for concurrent use.
type Extractor interface {
	Extract(mapping.Page) (*mapping.Result, error)
}

// Format is a document format the crawler reads. A web format gives New,
// which builds its extractor for each source; a document file format gives
// Reader, opened once per crawler and shared by its sources, and its
// documents are mapped by mapping.FromDocument.
type Format struct {
	// Types are the media types it reads, the preferred first.
	Types []string
	// Magic reports whether a body is of this format by its bytes (a
	// signature such as %PDF-), nil for a format that has none. It
	// overrules a Content-Type that says nothing or names another format.
	Magic func(body []byte) bool
	New   func(cfg *config.Config, src *config.Source) (Extractor, error)
	// Reader opens the format's reader; one that is an io.Closer is closed
	// with the crawler.
	Reader func(cfg *config.Config) (document.Reader, error)
}

// formats are the document formats the crawler reads, the preferred
// first. They give page requests their Accept header, and a page's media
// type picks its extractor; a page of a type mime_types allows that no
// format names is read by the first. The default mime_types
// (config.BuiltinTypes) are the types listed here. To read another format,
// add it here.
var formats = []Format{
	{Types: []string{"text/html", "application/xhtml+xml"}, New: newHTML},
	{Types: []string{"application/pdf"}, Magic: isPDF, Reader: newPDF},
	officeFormat(office.DOCX), officeFormat(office.XLSX), officeFormat(office.PPTX),
	officeFormat(office.ODT), officeFormat(office.ODS), officeFormat(office.ODP),
	{Types: []string{"application/rtf", "text/rtf"}, Magic: isRTF, Reader: reader(rtf.Reader{})},
	{Types: []string{"text/plain"}, Reader: reader(text.Reader{})},
}

// reader is the Reader of a format whose reader needs no configuration.
func reader(r document.Reader) func(*config.Config) (document.Reader, error) {
	return func(*config.Config) (document.Reader, error) { return r, nil }
}

// tikaFormat is the format of the types documents.tika names: read by
// the Tika server, never recognised by their bytes here (Tika's own
// detection is told the Content-Type).
func tikaFormat(t config.Tika) Format {
	return Format{Types: t.Types, Reader: reader(tika.Reader{URL: t.URL})}
}

// officeFormat is one of the zip-based Office and OpenDocument formats,
// recognised by its package's parts: a whole file by its content types or
// mimetype entry, a download's first bytes by the names of its first parts.
func officeFormat(k office.Kind) Format {
	return Format{Types: []string{k.MIMEType()}, Reader: reader(office.NewReader(k)),
		Magic: func(b []byte) bool {
			if !bytes.HasPrefix(b, []byte("PK\x03\x04")) {
				return false
			}
			got, ok := office.Detect(b)
			if !ok {
				got, ok = office.DetectPrefix(b)
			}
			return ok && got == k
		}}
}

// newPDF opens the PDF reader, which compiles PDFium at the first PDF; its
// compiled code is kept in the user's cache directory, so a later process
// starts reading PDFs in a tenth of a second instead of seconds.
func newPDF(*config.Config) (document.Reader, error) {
	return pdf.NewReader(pdf.Config{CacheDir: pdf.DefaultCacheDir()}), nil
}

// isPDF finds the %PDF- header where readers look for it: within the first
// KB, since servers and producers put junk before it.
func isPDF(b []byte) bool {
	const sig = "%PDF-"
	return bytes.Contains(b[:min(len(b), 1024+len(sig))], []byte(sig))
}

func isRTF(b []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeft(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")), " \t\r\n"), []byte(`{\rtf`))
}

func newHTML(cfg *config.Config, src *config.Source) (Extractor, error) {
	return mapping.New(cfg, src), nil
}

// accept is the Accept header of page requests: the formats' types in
// order of preference, then anything else, which mime_types may allow.
func accept(fs []Format) string {
	var b strings.Builder
	for _, f := range fs {
		for _, t := range f.Types {
			if b.Len() == 0 {
				b.WriteString(t)
				continue
			}
			b.WriteString("," + t + ";q=0.9")
		}
	}
	b.WriteString(",*/*;q=0.1")
	return b.String()
}

// readers are the document readers of one crawler, by format.
type readers map[int]document.Reader

// openReaders opens the reader of every document format, and Tika's when
// documents.tika is configured (its format added to fs).
func openReaders(cfg *config.Config, fs []Format) ([]Format, readers, error) {
	if t := cfg.Documents.Tika; t.URL != "" {
		fs = append(fs[:len(fs):len(fs)], tikaFormat(t))
	}
	rs := readers{}
	for i, f := range fs {
		if f.Reader == nil {
			continue
		}
		r, err := f.Reader(cfg)
		if err != nil {
			rs.close()
			return nil, nil, err
		}
		rs[i] = r
	}
	return fs, rs, nil
}

func (rs readers) close() {
	for _, r := range rs {
		if c, ok := r.(io.Closer); ok {
			c.Close()
		}
	}
}

// extractors are one source's extractors by media type.
type extractors struct {
	formats []Format
	byType  map[string]Extractor
	first   Extractor
}

func newExtractors(cfg *config.Config, src *config.Source, fs []Format, rs readers, readGrace time.Duration) (extractors, error) {
	ex := extractors{formats: fs, byType: map[string]Extractor{}}
	var mapper *mapping.Extractor
	for i, f := range fs {
		var x Extractor
		if r := rs[i]; r != nil {
			if mapper == nil {
				mapper = mapping.New(cfg, src)
			}
			x = newDocExtractor(r, mapper, cfg.Documents, src.Extraction.MaxBodyBytes, readGrace)
		} else {
			var err error
			if x, err = f.New(cfg, src); err != nil {
				return extractors{}, err
			}
		}
		if ex.first == nil {
			ex.first = x
		}
		for _, t := range f.Types {
			ex.byType[t] = x
		}
	}
	return ex, nil
}

// forType is the extractor of a media type (docfields.MediaType).
func (ex extractors) forType(mediaType string) Extractor {
	if x, ok := ex.byType[mediaType]; ok {
		return x
	}
	return ex.first
}

// readAs is the media type a body is read as, and whether that
// contradicts a type its Content-Type named. The bytes decide when the
// declared type says nothing (docfields.Generic) or when a format's
// signature says the body is of another format than declared: a PDF
// served as application/octet-stream or as text/html is a PDF, and an HTML
// page served as application/pdf is HTML. Otherwise the declared type
// stands, and a body its reader cannot read is reported corrupt.
func (ex extractors) readAs(declared string, body []byte) (mediaType string, mismatch bool) {
	for _, f := range ex.formats {
		if f.Magic == nil || !f.Magic(body) {
			continue
		}
		for _, t := range f.Types {
			if t == declared {
				return declared, false
			}
		}
		return f.Types[0], !docfields.Generic(declared)
	}
	generic := docfields.Generic(declared)
	if !generic && !ex.hasMagic(declared) {
		return declared, false
	}
	sniffed := docfields.MediaType(http.DetectContentType(body))
	switch {
	case sniffed == "text/html":
		return sniffed, !generic
	case generic:
		return sniffed, false
	}
	return declared, false
}

// sniff is the media type of a body whose Content-Type says nothing, by
// its first bytes.
func (ex extractors) sniff(prefix []byte) string {
	mt, _ := ex.readAs("", prefix)
	return mt
}

// hasMagic reports whether the format that reads a type has a signature
// the body could be checked against.
func (ex extractors) hasMagic(mediaType string) bool {
	for _, f := range ex.formats {
		for _, t := range f.Types {
			if t == mediaType {
				return f.Magic != nil
			}
		}
	}
	return false
}
