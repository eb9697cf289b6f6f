package sitemap

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/html/charset"

	"github.com/crawlspace/crawlspace/internal/xmlguard"
)

// maxDepth caps XML nesting. Sitemaps need four levels and feeds a handful
// more (XHTML content in Atom); the decoder keeps a stack entry per open
// element, so 10 MB of "<a>" would otherwise hold some 300 MB.
const maxDepth = 256

// maxToken caps the input one XML token may span. The decoder builds a
// start tag's attributes and namespace bindings all at once, at about
// fifteen times the bytes they took; this keeps a start tag with a million
// attributes from costing more than a few tens of megabytes. It also caps a
// single text node, which no sitemap or feed item comes near.
const maxToken = 1 << 20

var (
	errTooDeep       = fmt.Errorf("sitemap: XML nested deeper than %d elements", maxDepth)
	errTokenTooLarge = fmt.Errorf("sitemap: XML token longer than %d bytes", maxToken)
)

// Namespaces the feed parser tells apart. Sitemap elements are recognised
// by name and position alone, whatever their namespace (sitemaps.org 0.9,
// Google's older 0.84, none at all); their extensions (image, video, news,
// xhtml links) sit at other positions or under other names.
const (
	nsAtom    = "http://www.w3.org/2005/Atom"
	nsAtom03  = "http://purl.org/atom/ns#"
	nsRSS10   = "http://purl.org/rss/1.0/"
	nsRSS090  = "http://my.netscape.com/rdf/simple/0.9/"
	nsRDF     = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
	nsDC      = "http://purl.org/dc/elements/1.1/"
	nsXML     = "http://www.w3.org/XML/1998/namespace"
	relAltIRI = "http://www.iana.org/assignments/relation/alternate"
)

// field is the entry child whose text is being collected.
type field uint8

const (
	fNone      field = iota
	fLoc             // sitemap <loc>
	fLastmod         // sitemap <lastmod>
	fLink            // RSS <link>
	fGuid            // RSS <guid>, a permalink
	fPubDate         // RSS 2.0 <pubDate>
	fDCDate          // RSS 1.0 <dc:date>
	fUpdated         // Atom <updated> (0.3: <modified>)
	fPublished       // Atom <published> (0.3: <issued>)
	fIgnored         // anything else
)

// xmlParser walks the token stream once, keeping only the entry being read.
type xmlParser struct {
	dec     *xml.Decoder
	guard   *xmlguard.Reader
	res     *Result
	maxURLs int
	kind    Kind

	depth      int
	entryDepth int // depth of the open entry element; 0 outside entries
	field      field
	text       []byte // the field's text, at most maxURLLen+1 bytes

	// The open entry. Feed links are resolved when read, against the base
	// in force at their element.
	loc    []byte // sitemap loc, kept raw until the entry ends
	hasLoc bool
	link   string // resolved RSS link or Atom alternate link
	guid   string // absolute RSS permalink guid
	about  string // RSS 1.0 rdf:about
	date   time.Time
	date2  time.Time // the fallback date: Atom published, RSS dc:date

	base  *url.URL // the file's own URL, for feeds
	bases []baseAt // xml:base in force, innermost last
}

type baseAt struct {
	depth int
	u     *url.URL
}

func parseXML(in *input, res *Result, base string, maxURLs int) error {
	g := xmlguard.New(in.br, maxToken, errTokenTooLarge)
	dec := xml.NewDecoder(g)
	// Not strict: sitemaps in the wild carry raw "&" in query strings and
	// feeds carry HTML entities; both are kept as text rather than ending
	// the parse. Mismatched end tags close the open element. Entities a
	// DTD declares are never expanded (encoding/xml ignores DTDs), so
	// neither billion laughs nor external entities apply.
	dec.Strict = false
	dec.Entity = xml.HTMLEntity
	utf16 := in.utf16
	dec.CharsetReader = func(label string, r io.Reader) (io.Reader, error) {
		// A stream that was UTF-16 has been transcoded already, and one
		// whose declaration reads as ASCII is not UTF-16 whatever it
		// says. An unknown label is read as UTF-8: URLs are mostly
		// ASCII, and a guess beats losing the file.
		if utf16 || strings.HasPrefix(strings.ToLower(label), "utf-16") {
			return r, nil
		}
		cr, err := charset.NewReaderLabel(label, r)
		if err != nil {
			return r, nil
		}
		return cr, nil
	}
	p := &xmlParser{dec: dec, guard: g, res: res, maxURLs: maxURLs, base: parseBase(base)}
	return p.run()
}

func (p *xmlParser) run() error {
	for {
		p.guard.Mark()
		tok, err := p.dec.Token()
		if err != nil {
			if err == io.EOF {
				return nil
			}
			if errors.Is(err, errTokenTooLarge) {
				return errTokenTooLarge
			}
			return fmt.Errorf("sitemap: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			p.depth++
			if p.depth > maxDepth {
				return errTooDeep
			}
			if p.depth == 1 {
				if p.kind = rootKind(t.Name); p.kind == Unknown {
					return fmt.Errorf("sitemap: %w: root element <%s>", ErrUnknownFormat, t.Name.Local)
				}
				p.res.Kind = p.kind
			}
			if p.kind == RSS || p.kind == Atom {
				p.pushBase(t.Attr)
			}
			switch {
			case p.entryDepth == 0:
				if p.isEntry(t.Name) {
					p.startEntry(t)
				}
			case p.depth == p.entryDepth+1:
				p.startField(t)
			}
		case xml.CharData:
			if p.field != fNone && p.field != fIgnored && len(p.text) <= maxURLLen {
				p.text = append(p.text, t[:min(len(t), maxURLLen+1-len(p.text))]...)
			}
		case xml.EndElement:
			if p.depth == p.entryDepth+1 && p.field != fNone {
				p.endField()
			} else if p.depth == p.entryDepth && p.entryDepth > 0 {
				if !p.endEntry() {
					return nil
				}
			}
			if n := len(p.bases); n > 0 && p.bases[n-1].depth == p.depth {
				p.bases = p.bases[:n-1]
			}
			if p.depth--; p.depth == 0 {
				return nil // what follows the root element is not ours to read
			}
		}
	}
}

func rootKind(n xml.Name) Kind {
	switch n.Local {
	case "urlset":
		return URLSet
	case "sitemapindex":
		return Index
	case "rss":
		return RSS
	case "RDF":
		return RSS
	case "feed":
		return Atom
	}
	return Unknown
}

func (p *xmlParser) isEntry(n xml.Name) bool {
	switch p.kind {
	case URLSet:
		return p.depth == 2 && n.Local == "url"
	case Index:
		return p.depth == 2 && n.Local == "sitemap"
	case RSS:
		// RSS 2.0 items sit in <channel>, RSS 1.0 items beside it.
		return n.Local == "item" && isRSSSpace(n.Space)
	case Atom:
		return n.Local == "entry" && isAtomSpace(n.Space)
	}
	return false
}

func isRSSSpace(s string) bool { return s == "" || s == nsRSS10 || s == nsRSS090 }

func isAtomSpace(s string) bool { return s == nsAtom || s == nsAtom03 || s == "" }

func (p *xmlParser) startEntry(t xml.StartElement) {
	p.entryDepth, p.field = p.depth, fNone
	p.loc, p.hasLoc = p.loc[:0], false
	p.link, p.guid, p.about = "", "", ""
	p.date, p.date2 = time.Time{}, time.Time{}
	if p.kind == RSS {
		if v, ok := attr(t.Attr, nsRDF, "about"); ok {
			p.about, _ = resolve(p.currentBase(), []byte(v))
		}
	}
}

func (p *xmlParser) startField(t xml.StartElement) {
	p.field, p.text = fIgnored, p.text[:0]
	n := t.Name
	switch p.kind {
	case URLSet, Index:
		switch n.Local {
		case "loc":
			p.field = fLoc
		case "lastmod":
			p.field = fLastmod
		}
	case RSS:
		switch {
		case n.Local == "link" && isRSSSpace(n.Space):
			p.field = fLink
		case n.Local == "guid" && n.Space == "":
			if v, _ := attr(t.Attr, "", "isPermaLink"); !strings.EqualFold(strings.TrimSpace(v), "false") {
				p.field = fGuid
			}
		case n.Local == "pubDate" && n.Space == "":
			p.field = fPubDate
		case n.Local == "date" && n.Space == nsDC:
			p.field = fDCDate
		}
	case Atom:
		if !isAtomSpace(n.Space) {
			return
		}
		switch n.Local {
		case "link":
			p.atomLink(t.Attr)
		case "updated", "modified":
			p.field = fUpdated
		case "published", "issued":
			p.field = fPublished
		}
	}
}

// atomLink takes an entry's first alternate link: rel="alternate" or no rel
// at all (RFC 4287 4.2.7.2).
func (p *xmlParser) atomLink(attrs []xml.Attr) {
	if p.link != "" {
		return
	}
	rel, _ := attr(attrs, "", "rel")
	if rel = strings.TrimSpace(rel); rel != "" && !strings.EqualFold(rel, "alternate") && rel != relAltIRI {
		return
	}
	if href, ok := attr(attrs, "", "href"); ok {
		p.link, _ = resolve(p.currentBase(), []byte(href))
	}
}

func (p *xmlParser) endField() {
	f := p.field
	p.field = fNone
	if len(p.text) > maxURLLen && f != fLoc {
		return // only a loc counts as an error; an overlong date or link is no value
	}
	switch f {
	case fLoc:
		if !p.hasLoc {
			p.loc, p.hasLoc = append(p.loc[:0], p.text...), true
		}
	case fLastmod, fUpdated, fPubDate:
		if p.date.IsZero() {
			p.date = parseDate(f, trimSpace(p.text))
		}
	case fPublished, fDCDate:
		if p.date2.IsZero() {
			p.date2 = parseDate(f, trimSpace(p.text))
		}
	case fLink:
		if p.link == "" {
			p.link, _ = resolve(p.currentBase(), p.text)
		}
	case fGuid:
		// A guid is only a link when written as one: "12345" resolved
		// against the feed's URL would name a page that does not exist.
		if g := trimSpace(p.text); p.guid == "" && isAbsHTTP(g) {
			p.guid = string(g)
		}
	}
}

func parseDate(f field, s []byte) time.Time {
	var t time.Time
	if f == fPubDate {
		t, _ = parseRFC822(string(s))
	} else {
		t, _ = parseW3C(s)
	}
	return t
}

// endEntry records the entry that just closed. It returns false when the
// entry was one too many, having set Truncated.
func (p *xmlParser) endEntry() bool {
	p.entryDepth, p.field = 0, fNone
	var u string
	switch p.kind {
	case URLSet, Index:
		if loc := trimSpace(p.loc); p.hasLoc && isAbsHTTP(loc) {
			u = string(loc)
		}
	case RSS:
		u = firstNonEmpty(p.link, p.guid, p.about)
	case Atom:
		u = p.link
	}
	if u == "" {
		p.res.Errors++
		return true
	}
	if len(p.res.URLs)+len(p.res.Sitemaps) == p.maxURLs {
		p.res.Truncated = TruncatedURLs
		return false
	}
	date := p.date
	if date.IsZero() {
		date = p.date2
	}
	e := Entry{URL: u, Lastmod: date}
	if p.kind == Index {
		p.res.Sitemaps = append(p.res.Sitemaps, e)
	} else {
		p.res.URLs = append(p.res.URLs, e)
	}
	return true
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// pushBase applies an xml:base attribute (XML Base, used by Atom) of the
// element just opened, relative to the base around it.
func (p *xmlParser) pushBase(attrs []xml.Attr) {
	for _, a := range attrs {
		if a.Name.Local != "base" || a.Name.Space != nsXML && a.Name.Space != "xml" {
			continue
		}
		ref, err := url.Parse(strings.TrimSpace(a.Value))
		if err != nil {
			return
		}
		u := ref
		if cur := p.currentBase(); cur != nil {
			u = cur.ResolveReference(ref)
		}
		if !u.IsAbs() {
			return
		}
		p.bases = append(p.bases, baseAt{depth: p.depth, u: u})
		return
	}
}

func (p *xmlParser) currentBase() *url.URL {
	if n := len(p.bases); n > 0 {
		return p.bases[n-1].u
	}
	return p.base
}

func attr(attrs []xml.Attr, space, local string) (string, bool) {
	for _, a := range attrs {
		if a.Name.Local == local && a.Name.Space == space {
			return a.Value, true
		}
	}
	return "", false
}
