// Package document holds what the readers of document files (PDF, Office,
// OpenDocument, RTF, plain text, and whatever Apache Tika reads) give the
// crawler: a file's text in reading order and what the file says about
// itself. Each format's reader lives in a package of its own below this
// one; turning a Content into a search document is mapping's.
package document

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Reader reads one format. It is safe for concurrent use. ctx bounds the
// time an extraction may take: a reader returns soon after ctx ends, with
// an *Error of reason "timeout".
type Reader interface {
	Read(ctx context.Context, data []byte, lim Limits) (*Content, error)
}

// Content is what a document file gives.
type Content struct {
	// Title is the file's own title (PDF Info or XMP, OOXML or ODF core
	// properties, RTF \info), "" when it has none.
	Title string
	// Heading is its first heading, where the format marks headings: a
	// title fallback.
	Heading  string
	Authors  []string
	Subject  string // becomes doc_description
	Keywords []string
	// Language is a language tag as the file states it ("en-GB"), "" if
	// none.
	Language string
	// Modified is the file's own last-modified date, zero when it has
	// none; Created is its creation date.
	Modified time.Time
	Created  time.Time
	// Body is the text in reading order, valid UTF-8: blocks (paragraphs,
	// table rows, cells of a spreadsheet row, a slide's notes) on lines of
	// their own, at most Limits.MaxText bytes cut on a character boundary.
	Body string
	// Truncated says the body went past Limits.MaxText.
	Truncated bool
	// Pages is the page count where the format has one (PDF pages, the
	// slides of a presentation, the page count a word processor saved),
	// 0 where it has none.
	Pages int
	// Charset is the encoding a text format was decoded from, and
	// CharsetWarning says how the bytes contradicted a declared one, as
	// for pages (charset.Decode); "" for formats that carry their own.
	Charset        string
	CharsetWarning string
	// Links are the link targets the file holds (PDF URI actions, OOXML
	// and ODF hyperlinks, RTF HYPERLINK fields), as written: absolute or
	// relative to the file's URL, in document order, without repeats.
	Links []string
	// Parts mark where the body's parts start, in body order: a PDF's
	// pages and the pages its bookmarks lead to, a presentation's slides,
	// a spreadsheet's sheets. Passages are cut along them.
	Parts []Part
}

// Part is where a part of a document's body starts.
type Part struct {
	// Offset is the byte offset in Body.
	Offset int
	// Page is the page, slide or sheet, from 1.
	Page int
	// Title is a bookmark's title or a sheet's name; "" for a page or a
	// slide.
	Title string
	// Level is 1 for a sheet or a top-level bookmark, 2 and on for the
	// bookmarks under it, 0 for a page or a slide.
	Level int
}

// Limits bound one extraction. Zero means the default.
type Limits struct {
	// MaxText is the body text kept, in bytes.
	MaxText int
	// MaxUnpacked bounds the bytes decompressed from a zip-based file, all
	// entries together, and MaxEntries the entries it may have: a zip bomb
	// costs this much and no more.
	MaxUnpacked int64
	MaxEntries  int
	// MaxToken bounds the input one XML token of a zip-based file may
	// take: one text run, one tag with its attributes. The XML decoder
	// holds a token whole, in a buffer that doubles as it grows, so a run
	// of hundreds of megabytes packed into a small file would otherwise
	// cost that and more; a read costs up to five times the bound.
	MaxToken int64
	// MaxMemory bounds the memory a reader that runs a parser in a sandbox
	// (PDFium in WebAssembly) may give it.
	MaxMemory int64
}

// Default limits.
const (
	DefaultMaxText     = 1 << 20
	DefaultMaxUnpacked = 256 << 20
	DefaultMaxEntries  = 10000
	DefaultMaxToken    = 8 << 20
	DefaultMaxMemory   = 512 << 20
)

// MaxLinks bounds the link targets a reader keeps from one file: far more
// than a page's links are followed (fetch.max_links_per_page), few enough
// that a file of nothing but links costs little.
const MaxLinks = 10000

// WithDefaults fills the zero limits.
func (l Limits) WithDefaults() Limits {
	if l.MaxText <= 0 {
		l.MaxText = DefaultMaxText
	}
	if l.MaxUnpacked <= 0 {
		l.MaxUnpacked = DefaultMaxUnpacked
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.MaxToken <= 0 {
		l.MaxToken = DefaultMaxToken
	}
	if l.MaxMemory <= 0 {
		l.MaxMemory = DefaultMaxMemory
	}
	return l
}

// Reasons an extraction fails, as the crawl report and a URL's state
// record them.
const (
	ReasonEncrypted = "encrypted"       // a password is needed to read the text
	ReasonCorrupt   = "corrupt"         // the parser could not read the file; Err says why
	ReasonTooLarge  = "too_large"       // past MaxUnpacked, MaxEntries, MaxToken or MaxMemory, or a reader's own bound
	ReasonTimeout   = "extract_timeout" // ctx ended first
	ReasonFailed    = "extract_failed"
	// ReasonUnavailable is a reader that could not be reached (a Tika
	// server down or overloaded): the file is not at fault and waits.
	ReasonUnavailable = "extractor_unavailable"
)

// Error is a failed extraction and its reason.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Reason + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf is an *Error of a reason.
func Errorf(reason, format string, args ...any) *Error {
	return &Error{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// ReasonOf is the reason of an extraction error: an *Error's own, "timeout"
// for a context's end, else "extract_failed".
func ReasonOf(err error) string {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e.Reason
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return ReasonTimeout
	}
	return ReasonFailed
}
