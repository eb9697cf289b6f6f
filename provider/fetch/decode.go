package fetch

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"

	"github.com/crawlspace/crawlspace/docfields"
)

// acceptEncoding is what every request of the crawler asks for: what
// decodingTransport decodes besides identity (it decodes deflate too, which
// servers send unasked, but deflate's two forms make it a poor thing to
// ask for).
const acceptEncoding = "gzip"

// decodingTransport is the one place a response body is decompressed, for
// pages, robots.txt, sitemaps and feeds alike, and it counts the limit in
// decoded bytes. net/http's transport decodes plain "gzip" only when it
// asked for it itself, and colly gunzips whatever it left ("x-gzip",
// "gzip, identity", a Content-Type or a path naming gzip) with no limit,
// having applied its own to the compressed bytes: a few megabytes of
// compressed zeros became gigabytes. Here every Content-Encoding layer is
// undone as the body is read, each layer's input and the decoded output
// are capped, and the response is marked Uncompressed so nothing above
// decodes it again.
type decodingTransport struct {
	base http.RoundTripper
	// limit caps the decoded bytes of a response whose request carries no
	// limit of its own (withBodyLimit), pages, which colly requests; and
	// docLimit those of such a response whose type is not HTML (PDFs,
	// Office files, and bodies of a type that says nothing, which may
	// turn out to be either).
	limit, docLimit int64
	// sniff names the type of a page whose Content-Type says nothing.
	sniff func(prefix []byte) string
}

// sniffBytes is how much of a body the sniffer sees: the signatures
// crawlspace knows sit in the first bytes, HTML detection looks at 512,
// and the first parts of an Office package, whose names tell its kind,
// within a few KB.
const sniffBytes = 8192

// SniffedHeader carries the Content-Type a response was sent with when
// its body's first bytes gave it another.
const SniffedHeader = "X-Crawlspace-Sent-Content-Type"

type bodyLimitKey struct{}

// withBodyLimit makes the responses to requests made with ctx stop after n
// decoded bytes, with a *tooLargeError.
func withBodyLimit(ctx context.Context, n int64) context.Context {
	return context.WithValue(ctx, bodyLimitKey{}, n)
}

func (t *decodingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(req)
	if err != nil || res.Body == nil || res.Body == http.NoBody {
		return res, err
	}
	limit := t.limit
	n, own := req.Context().Value(bodyLimitKey{}).(int64)
	mt := docfields.MediaType(res.Header.Get("Content-Type"))
	switch {
	case own:
		limit = n
	case !docfields.IsPage(mt):
		limit = t.docLimit
	}
	body := &decodedBody{raw: res.Body, limit: limit}
	if ce := res.Header.Get("Content-Encoding"); ce != "" {
		body.layers, body.unknown = contentCodings(ce)
		res.Header.Del("Content-Encoding")
	} else {
		// What colly would have gunzipped: a type or a path that says gzip.
		// Only a body that starts like gzip is decoded.
		body.sniff = strings.Contains(strings.ToLower(res.Header.Get("Content-Type")), "gzip") ||
			strings.HasSuffix(strings.ToLower(req.URL.Path), ".gz")
	}
	if len(body.layers) > 0 || body.unknown != "" || body.sniff {
		res.Header.Del("Content-Length")
		res.ContentLength = -1
	}
	res.Body = body
	res.Uncompressed = true
	if !own && t.sniff != nil && res.StatusCode == http.StatusOK && docfields.Generic(mt) {
		t.sniffType(res, body)
	}
	return res, nil
}

// sniffType gives a page response whose Content-Type says nothing the type
// its first decoded bytes show, so that the crawl space decides on it
// before the body is downloaded: a PDF sent as application/octet-stream is
// fetched as a PDF, a binary nobody reads is refused unread.
func (t *decodingTransport) sniffType(res *http.Response, body *decodedBody) {
	br := bufio.NewReaderSize(body, sniffBytes)
	prefix, _ := br.Peek(sniffBytes) // a short or failing body: its error comes with the next Read
	if sniffed := t.sniff(prefix); sniffed != "" {
		res.Header.Set(SniffedHeader, res.Header.Get("Content-Type"))
		res.Header.Set("Content-Type", sniffed)
	}
	res.Body = struct {
		io.Reader
		io.Closer
	}{br, body}
}

// contentCodings reads a Content-Encoding value into the codings to undo,
// in the order they were applied; identity is nothing to undo. unknown is
// the first coding the crawler cannot decode.
func contentCodings(v string) (layers []string, unknown string) {
	for tok := range strings.SplitSeq(v, ",") {
		switch c := strings.ToLower(strings.TrimSpace(tok)); c {
		case "", "identity":
		case "gzip", "x-gzip":
			layers = append(layers, "gzip")
		case "deflate":
			layers = append(layers, "deflate")
		default:
			if unknown == "" {
				unknown = c
			}
		}
	}
	return layers, unknown
}

// tooLargeError is a body that went past its limit once decoded, or whose
// compressed layers did.
type tooLargeError struct{ limit int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("body over %d bytes once decoded", e.limit)
}

// encodingError is a body that is not in the Content-Encoding it was sent
// with, or in one the crawler does not decode.
type encodingError struct {
	coding string
	err    error
}

func (e *encodingError) Error() string {
	return fmt.Sprintf("Content-Encoding %s: %v", e.coding, e.err)
}

func (e *encodingError) Unwrap() error { return e.err }

var errUnsupportedCoding = errors.New("not supported")

// decodedBody decodes a response body as it is read. The decoders are made
// at the first Read, so a body nobody reads (a redirect, an error status)
// costs nothing and a broken one fails only its reader. Like the body it
// wraps, it is read by one goroutine at a time, and not after Close.
type decodedBody struct {
	raw     io.ReadCloser
	layers  []string
	unknown string
	sniff   bool
	limit   int64
	r       io.Reader
	err     error
	gz      []*gzipDecoder // back to their pool at Close
}

var errBodyClosed = errors.New("read on a closed response body")

func (b *decodedBody) Read(p []byte) (int, error) {
	if b.r == nil && b.err == nil {
		b.r, b.err = b.open()
	}
	if b.err != nil {
		return 0, b.err
	}
	return b.r.Read(p)
}

func (b *decodedBody) Close() error {
	for _, d := range b.gz {
		d.release()
	}
	b.gz, b.r, b.err = nil, nil, errBodyClosed
	return b.raw.Close()
}

// gzipDecoder is a gzip reader and the buffer it reads through, pooled as
// net/http pools its own: a flate decoder holds some 40 KB of window and
// tables, more than a typical page's garbage.
type gzipDecoder struct {
	zr gzip.Reader
	br *bufio.Reader
}

var gzipPool = sync.Pool{New: func() any { return &gzipDecoder{br: bufio.NewReaderSize(nil, 4096)} }}

func newGzipDecoder(r io.Reader) (*gzipDecoder, error) {
	d := gzipPool.Get().(*gzipDecoder)
	d.br.Reset(r)
	if err := d.zr.Reset(d.br); err != nil {
		d.release()
		return nil, err
	}
	return d, nil
}

func (d *gzipDecoder) release() {
	d.br.Reset(nil)
	gzipPool.Put(d)
}

// open stacks the decoders, outermost coding first. Each compressed layer
// is capped too, at twice the limit and some: a deflate stream of empty
// blocks consumes input without producing any, so capping the output alone
// would not bound the bytes read beneath it.
func (b *decodedBody) open() (io.Reader, error) {
	if b.unknown != "" {
		return nil, &encodingError{coding: b.unknown, err: errUnsupportedCoding}
	}
	var r io.Reader = b.raw
	layers := b.layers
	if b.sniff {
		head, rest, err := peek(r, 2)
		if err != nil {
			return nil, err
		}
		r = rest
		if len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
			layers = []string{"gzip"}
		}
	}
	if len(layers) == 0 {
		return &capReader{r: r, left: b.limit, limit: b.limit}, nil
	}
	inCap := saturatingAdd(saturatingAdd(b.limit, b.limit), 64<<10)
	for i := len(layers) - 1; i >= 0; i-- {
		r = &capReader{r: r, left: inCap, limit: b.limit}
		dec, err := b.newDecoder(layers[i], r)
		if err == io.EOF {
			return bytes.NewReader(nil), nil // an empty body, whatever its coding
		}
		if err != nil {
			return nil, decodeError(layers[i], err)
		}
		r = &codingReader{r: dec, coding: layers[i]}
	}
	return &capReader{r: r, left: b.limit, limit: b.limit}, nil
}

func (b *decodedBody) newDecoder(coding string, r io.Reader) (io.Reader, error) {
	if coding == "gzip" {
		d, err := newGzipDecoder(r)
		if err != nil {
			return nil, err
		}
		b.gz = append(b.gz, d)
		return &d.zr, nil
	}
	// HTTP's deflate is zlib (RFC 1950), but servers send raw deflate too.
	head, rest, err := peek(r, 2)
	if err != nil {
		return nil, err
	}
	if len(head) == 0 {
		return nil, io.EOF
	}
	if len(head) == 2 && head[0]&0x0f == 8 && (uint16(head[0])<<8|uint16(head[1]))%31 == 0 {
		return zlib.NewReader(rest)
	}
	return flate.NewReader(rest), nil
}

// peek reads up to n bytes of r and returns them with a reader that gives
// them again, followed by the rest of r.
func peek(r io.Reader, n int) ([]byte, io.Reader, error) {
	head := make([]byte, n)
	k, err := io.ReadFull(r, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, nil, err
	}
	head = head[:k]
	return head, io.MultiReader(bytes.NewReader(head), r), nil
}

// codingReader marks the errors of a decoder as the body's fault; errors
// from beneath it (the network, a cap) pass as they are.
type codingReader struct {
	r      io.Reader
	coding string
}

func (c *codingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF {
		err = decodeError(c.coding, err)
	}
	return n, err
}

// decodeError wraps the errors that say the bytes are not in the coding.
func decodeError(coding string, err error) error {
	var corrupt flate.CorruptInputError
	if errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, zlib.ErrHeader) ||
		errors.Is(err, zlib.ErrChecksum) || errors.Is(err, zlib.ErrDictionary) || errors.As(err, &corrupt) {
		return &encodingError{coding: coding, err: err}
	}
	return err
}

// capReader passes at most left bytes of r and fails the read after them
// with a *tooLargeError: a body is never cut short silently. Readers that
// want the limit's last byte to tell "too large" from "exactly full" read
// one byte more than they keep.
type capReader struct {
	r     io.Reader
	left  int64
	limit int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		if len(p) == 0 {
			return 0, nil
		}
		// Only a body with more to give is too large.
		var one [1]byte
		if n, err := io.ReadFull(c.r, one[:]); n == 0 {
			if err == nil || err == io.ErrUnexpectedEOF {
				err = io.EOF
			}
			return 0, err
		}
		return 0, &tooLargeError{limit: c.limit}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

func saturatingAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
