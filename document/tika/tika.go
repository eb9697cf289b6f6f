// Package tika reads documents through an Apache Tika server, the optional extractor for the
// formats crawlspace does not read itself (legacy .doc, .xls, .ppt and whatever else Tika knows).
//
// It PUTs the file to the server's /rmeta/xml endpoint: the JSON list of the metadata of the file
// and of each file embedded in it, each with its content as XHTML. XHTML rather than /rmeta/text
// because it keeps what plain text loses: the link targets (<a href>), the first heading (<h1>..
// <h6>), where blocks and table cells end, the slides and pages (<div class="slide|page">) that
// count the pages when the file does not, and the <head> that /rmeta/text repeats the title from.
package tika

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/crawlspace/crawlspace/document"
)

// ErrUnavailable is wrapped by every error that says nothing about the document: the server could
// not be reached, answered 5xx, or answered something other than Tika's metadata list. The crawler
// retries such a URL later and never deletes its document for it.
var ErrUnavailable = errors.New("tika server unavailable")

// ReasonUnavailable is the reason of the *document.Error wrapping ErrUnavailable, as the crawl
// report and the URL's state record it: the crawler's reason for any extractor out of reach.
const ReasonUnavailable = document.ReasonUnavailable

// Reader sends one document to a Tika server. A Reader is a value: the crawler makes one per
// response, with that response's Content-Type.
type Reader struct {
	// URL is the server's base URL, e.g. http://127.0.0.1:9998 (scripts/tika start prints it).
	URL string
	// ContentType is sent with the file to guide Tika's detection; "" lets Tika detect alone.
	ContentType string
	// Client sends the request; nil means a client that follows no redirects, so the file goes to
	// URL and nowhere else. ctx bounds every request: give the client no timeout of its own.
	Client *http.Client
}

// ForContentType is the reader of one response: its Content-Type goes to Tika with the file.
func (r Reader) ForContentType(contentType string) document.Reader {
	r.ContentType = contentType
	return r
}

var defaultClient = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Transport: &http.Transport{
		Proxy:               nil, // the server is configured by address; a proxy would see every file
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	},
}

// Metadata keys of the /rmeta answer (Tika's names).
const (
	keyContent            = "X-TIKA:content"
	keyContainerException = "X-TIKA:EXCEPTION:container_exception"
	keyWriteLimitReached  = "X-TIKA:EXCEPTION:write_limit_reached"
	keyEncrypted          = "X-TIKA:encrypted"
)

// Read sends data to the server and maps its answer onto a Content. Failures: the reason
// "encrypted" when Tika says the file is encrypted, "corrupt" with Tika's message when its parser
// failed, "too_large" when the answer passes its bound, "timeout" when ctx ended, and
// ReasonUnavailable (wrapping ErrUnavailable) when the server is not there or not well.
func (r Reader) Read(ctx context.Context, data []byte, lim document.Limits) (c *document.Content, err error) {
	lim = lim.WithDefaults()
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, document.Errorf(document.ReasonCorrupt, "tika reader panic: %v", p)
		}
	}()
	list, err := r.rmeta(ctx, data, lim)
	if err != nil {
		return nil, err
	}
	return contentOf(ctx, list, lim)
}

// maxAnswer bounds the bytes read from the server: the text Tika was asked for (MaxText
// characters, each up to 4 bytes, for the file and each embedded one it reads with its own
// limit) comes wrapped in XHTML and JSON, beside the metadata; past this the answer is refused.
func maxAnswer(lim document.Limits) int64 {
	return min(lim.MaxUnpacked, 16*int64(lim.MaxText)+32<<20)
}

type metadata map[string]json.RawMessage

func (r Reader) rmeta(ctx context.Context, data []byte, lim document.Limits) ([]metadata, error) {
	if err := ctx.Err(); err != nil {
		return nil, &document.Error{Reason: document.ReasonTimeout, Err: err}
	}
	base := strings.TrimRight(r.URL, "/")
	if base == "" {
		return nil, unavailable("no Tika URL configured")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, base+"/rmeta/xml", bytes.NewReader(data))
	if err != nil {
		return nil, unavailable("Tika URL %q: %v", r.URL, err)
	}
	if r.ContentType != "" {
		req.Header.Set("Content-Type", r.ContentType)
	}
	req.Header.Set("Accept", "application/json")
	// Tika stops writing a file's text at writeLimit characters and says so; maxEmbeddedResources
	// bounds how many embedded files (attachments, OLE objects) it opens.
	req.Header.Set("writeLimit", strconv.Itoa(lim.MaxText))
	req.Header.Set("maxEmbeddedResources", strconv.Itoa(lim.MaxEntries))
	client := r.Client
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &document.Error{Reason: document.ReasonTimeout, Err: ctx.Err()}
		}
		return nil, unavailable("%v", err)
	}
	defer resp.Body.Close()
	limit := maxAnswer(lim)
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, &document.Error{Reason: document.ReasonTimeout, Err: ctx.Err()}
		}
		return nil, unavailable("reading the answer: %v", err)
	}
	if int64(len(body)) > limit {
		return nil, document.Errorf(document.ReasonTooLarge, "Tika's answer passed %d bytes", limit)
	}
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusUnprocessableEntity:
		// What tika-server answers on its other endpoints when the parser failed: the document's
		// fault, with the exception in the body.
		return nil, parseFailure(string(body), false)
	case resp.StatusCode == http.StatusUnsupportedMediaType:
		return nil, document.Errorf(document.ReasonCorrupt, "Tika has no parser for this file (%s)", resp.Status)
	default:
		// 5xx is the server's trouble; any other status is a URL that is not a Tika server's:
		// either way the document is not at fault.
		return nil, unavailable("PUT %s/rmeta/xml: %s: %.200s", base, resp.Status, body)
	}
	var list []metadata
	if err := json.Unmarshal(body, &list); err != nil || len(list) == 0 {
		return nil, unavailable("the answer is not Tika's metadata list: %.200q", body)
	}
	return list, nil
}

func unavailable(format string, args ...any) *document.Error {
	return &document.Error{Reason: ReasonUnavailable, Err: fmt.Errorf("%w: %s", ErrUnavailable, fmt.Sprintf(format, args...))}
}

// parseFailure is the error for a Tika exception: its stack trace's first line is the message.
func parseFailure(trace string, encrypted bool) *document.Error {
	msg, _, _ := strings.Cut(strings.TrimSpace(trace), "\n")
	msg = strings.TrimSpace(msg)
	if encrypted || strings.Contains(msg, "EncryptedDocumentException") {
		return document.Errorf(document.ReasonEncrypted, "%s", msg)
	}
	if msg == "" {
		msg = "Tika's parser failed without a message"
	}
	return document.Errorf(document.ReasonCorrupt, "%s", msg)
}

// values is a metadata value as strings: Tika writes one value as a string, several as an array.
func (m metadata) values(key string) []string {
	raw, ok := m[key]
	if !ok {
		return nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		return many
	}
	return nil
}

func (m metadata) first(keys ...string) string {
	for _, k := range keys {
		for _, v := range m.values(k) {
			if v = strings.TrimSpace(v); v != "" {
				return v
			}
		}
	}
	return ""
}

func contentOf(ctx context.Context, list []metadata, lim document.Limits) (*document.Content, error) {
	doc := list[0]
	if trace := doc.first(keyContainerException); trace != "" {
		return nil, parseFailure(trace, doc.first(keyEncrypted) == "true")
	}
	c := &document.Content{
		Title:    doc.first("dc:title"),
		Language: doc.first("dc:language"),
		Modified: date(doc.first("dcterms:modified")),
		Created:  date(doc.first("dcterms:created")),
		Pages:    pages(doc),
	}
	c.Authors = unique(doc.values("dc:creator"), doc.values("meta:author"))
	c.Keywords = keywords(doc)
	c.Subject = subject(doc, c.Keywords)

	body := document.NewText(lim.MaxText)
	x := &xhtml{body: body}
	for i, m := range list {
		if err := ctx.Err(); err != nil {
			return nil, &document.Error{Reason: document.ReasonTimeout, Err: err}
		}
		if body.Full() {
			break
		}
		x.links = x.links[:0:0]
		x.read(ctx, m.first(keyContent))
		if x.err != nil {
			return nil, x.err
		}
		if i == 0 {
			c.Heading = x.heading
			if c.Pages == 0 {
				c.Pages = x.pages
			}
		}
		c.Links = append(c.Links, x.links...)
		body.Break()
	}
	c.Links = unique(c.Links)
	c.Body = body.String()
	c.Truncated = body.Truncated() || doc.first(keyWriteLimitReached) == "true"
	return c, nil
}

// pages is the page or slide count the file states.
func pages(m metadata) int {
	for _, k := range []string{"xmpTPg:NPages", "meta:page-count", "meta:slide-count"} {
		if n, err := strconv.Atoi(m.first(k)); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// keywords are meta:keyword's values, each split at commas and semicolons as Office and PDF
// writers join them.
func keywords(m metadata) []string {
	var out []string
	for _, v := range m.values("meta:keyword") {
		out = append(out, strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' })...)
	}
	return unique(out)
}

// subject is dc:subject where it is not the keywords: Tika copies the keywords of Office files
// into dc:subject beside the subject proper, so a value equal to a meta:keyword value, or made
// of the keywords, is skipped. dc:description (the PDF and ODF comment field) comes second.
func subject(m metadata, kw []string) string {
	raw := map[string]bool{}
	for _, v := range m.values("meta:keyword") {
		raw[strings.TrimSpace(v)] = true
	}
	joined := strings.Join(kw, ", ")
	for _, v := range m.values("dc:subject") {
		v = strings.TrimSpace(v)
		if v != "" && !raw[v] && v != joined {
			return v
		}
	}
	return m.first("dc:description", "cp:subject")
}

// date reads Tika's ISO 8601 dates; a zero or placeholder date (Office writes 1601-01-01 for
// "never") is no date.
func date(s string) time.Time {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			if t.Year() < 1900 {
				return time.Time{}
			}
			return t.UTC()
		}
	}
	return time.Time{}
}

// unique joins lists, trimming each value and dropping empty ones and repeats, in first-seen order.
func unique(lists ...[]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range lists {
		for _, v := range l {
			v = strings.TrimSpace(v)
			if v == "" || seen[v] {
				continue
			}
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
