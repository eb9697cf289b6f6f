// Package sitemap turns the bytes of a sitemap or a news feed into URLs: XML
// sitemaps (urlset and sitemap index), plain-text sitemaps, RSS 2.0, RSS 1.0
// and Atom, gzip-compressed or not.
//
// It never fetches: the provider fetches each file through its politeness
// limits, recurses into child sitemaps up to its depth cap and passes every
// URL through the crawl space like a link. What this package guarantees is
// that a hostile or broken file costs bounded work: at most Limits.MaxBytes
// of decompressed input is read (and at most as much compressed input), at
// most Limits.MaxURLs entries are kept, XML nesting and single XML tokens are
// capped, and entities are never expanded beyond the five predefined ones
// and HTML's named characters. See docs/sitemaps.md.
package sitemap

import (
	"bufio"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// Default limits, the sitemaps.org protocol's (and Funnelback's) caps.
const (
	DefaultMaxBytes = 10 << 20
	DefaultMaxURLs  = 50000
)

// Reasons given in Result.Truncated.
const (
	TruncatedBytes = "max_bytes"
	TruncatedURLs  = "max_urls"
)

// maxURLLen bounds one URL. sitemaps.org asks for fewer than 2,048
// characters; the crawl space's max_url_length decides the real cap, this one
// only keeps a single entry from costing more than a few kilobytes.
const maxURLLen = 8 << 10

// maxGzipLayers is how many nested gzip streams are undone: a .gz file
// served with Content-Encoding: gzip to a client that does not decode
// arrives compressed twice.
const maxGzipLayers = 2

// ErrUnknownFormat is returned (wrapped) for XML whose root element is not a
// sitemap or a feed, such as an HTML error page served with status 200.
var ErrUnknownFormat = errors.New("not a sitemap or feed")

// Kind is the format a file was recognised as, from its content alone.
type Kind uint8

// The formats Parse recognises.
const (
	Unknown Kind = iota
	URLSet       // <urlset>: page URLs
	Index        // <sitemapindex>: child sitemaps
	Text         // one URL a line
	RSS          // <rss> (0.9x, 2.0) or <rdf:RDF> (RSS 1.0)
	Atom         // <feed>
)

var kindNames = [...]string{"unknown", "urlset", "sitemapindex", "text", "rss", "atom"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Limits caps the work one file may cost. Zero or negative fields take the
// defaults.
type Limits struct {
	MaxBytes int64 // decompressed bytes read; also caps the compressed bytes read
	MaxURLs  int   // entries kept, URLs and child sitemaps together
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxURLs <= 0 {
		l.MaxURLs = DefaultMaxURLs
	}
	return l
}

// Entry is one URL found, with its last modification time when the file
// gives one (sitemap lastmod, feed updated or pubDate), in UTC. Lastmod is
// zero when absent or unparseable.
type Entry struct {
	URL     string
	Lastmod time.Time
}

// Result is what one file held. URLs are returned as written (absolute
// http(s) URLs, feed links resolved against their base), neither normalised
// nor de-duplicated: the caller normalises them like any link.
type Result struct {
	Kind     Kind
	URLs     []Entry // page URLs: urlset locs, text lines, feed item links
	Sitemaps []Entry // child sitemaps of a sitemap index
	// Truncated is "" or why parsing stopped before the end of the file:
	// TruncatedBytes or TruncatedURLs. What was found before is kept.
	Truncated string
	// Errors counts entries skipped as malformed: a missing or empty loc or
	// link, a relative or non-http(s) URL, a text line that is not a URL.
	Errors int
	// Bytes is how many decompressed bytes were read.
	Bytes int64
}

// Parse reads one sitemap or feed from r and returns the URLs it lists.
// The format is decided by the content, never by a file name or a
// Content-Type header: gzip by its magic number, XML by its root element
// (urlset, sitemapindex, rss, rdf:RDF, feed), anything else not starting
// with "<" is a text sitemap.
//
// base is the URL the file was fetched from. Feeds resolve relative links
// against it (and against xml:base); sitemaps, which the protocol requires
// to list absolute URLs, do not. It may be empty.
//
// On malformed input Parse returns what it found before the fault together
// with the error, so callers keep partial results; the Result is never nil.
// Reaching a limit is not an error: it is reported in Result.Truncated.
func Parse(r io.Reader, base string, lim Limits) (*Result, error) {
	lim = lim.withDefaults()
	res := &Result{}
	in, err := open(r, lim.MaxBytes)
	if err == nil {
		err = parse(in, res, base, lim)
	}
	res.Bytes = in.last.n
	if in.exceeded() && res.Truncated == "" {
		res.Truncated = TruncatedBytes
		if cutShort(err) {
			// An XML element or a gzip stream cut in half by the cap
			// is the cap's doing, not the file's.
			err = nil
		}
	}
	return res, err
}

// cutShort reports whether err is what a stream ending early produces.
func cutShort(err error) bool {
	var se *xml.SyntaxError
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &se) && se.Msg == "unexpected EOF"
}

func parse(in *input, res *Result, base string, lim Limits) error {
	first, err := in.sniff()
	if err != nil {
		if err == io.EOF {
			return nil // empty, or only white space: nothing to report
		}
		return err
	}
	if first == '<' {
		return parseXML(in, res, base, lim.MaxURLs)
	}
	res.Kind = Text
	return parseText(in, res, lim.MaxURLs)
}

// input is the decompressed, capped byte stream Parse reads.
type input struct {
	br   *bufio.Reader
	caps []*capReader // the raw input's cap, then one per gzip layer
	last *capReader
	// utf16 records that the stream was transcoded from UTF-16, after
	// which an XML declaration's encoding no longer describes the bytes.
	utf16 bool
}

const bufSize = 32 << 10

// open caps r and undoes up to maxGzipLayers of gzip, each layer's input
// capped as well: a deflate stream of empty blocks consumes input without
// producing output, so capping only the final stream would not bound the
// work done beneath it.
func open(r io.Reader, max int64) (*input, error) {
	c := &capReader{r: r, left: max}
	in := &input{caps: []*capReader{c}, last: c, br: bufio.NewReaderSize(c, bufSize)}
	for range maxGzipLayers {
		magic, _ := in.br.Peek(2)
		if len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
			break
		}
		zr, err := gzip.NewReader(in.br)
		if err != nil {
			return in, fmt.Errorf("sitemap: gzip: %w", err)
		}
		c = &capReader{r: zr, left: max}
		in.caps = append(in.caps, c)
		in.last = c
		in.br = bufio.NewReaderSize(c, bufSize)
	}
	return in, nil
}

func (in *input) exceeded() bool {
	for _, c := range in.caps {
		if c.exceeded {
			return true
		}
	}
	return false
}

// capReader returns at most left bytes of r, then io.EOF, and records
// whether r had more.
type capReader struct {
	r        io.Reader
	left     int64
	n        int64
	exceeded bool
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		if !c.exceeded {
			var one [1]byte
			if n, _ := io.ReadFull(c.r, one[:]); n > 0 {
				c.exceeded = true
			}
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	c.n += int64(n)
	return n, err
}

// sniff skips a byte order mark and leading white space and returns the
// first significant byte, left unread. A UTF-16 stream (by its BOM, or by
// the "<" of its first markup) is transcoded to UTF-8 first.
func (in *input) sniff() (byte, error) {
	head, _ := in.br.Peek(3)
	switch {
	case len(head) >= 3 && head[0] == 0xef && head[1] == 0xbb && head[2] == 0xbf:
		in.br.Discard(3)
	case len(head) >= 2 && (head[0] == 0xff && head[1] == 0xfe || head[0] == '<' && head[1] == 0):
		in.transcodeUTF16(unicode.LittleEndian)
	case len(head) >= 2 && (head[0] == 0xfe && head[1] == 0xff || head[0] == 0 && head[1] == '<'):
		in.transcodeUTF16(unicode.BigEndian)
	}
	for {
		b, err := in.br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		in.br.UnreadByte()
		return b, nil
	}
}

func (in *input) transcodeUTF16(e unicode.Endianness) {
	// UseBOM: a BOM, when present, overrides e and is removed.
	dec := unicode.UTF16(e, unicode.UseBOM).NewDecoder()
	in.br = bufio.NewReaderSize(transform.NewReader(in.br, dec), bufSize)
	in.utf16 = true
}
