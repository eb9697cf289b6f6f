// Package mapping turns a fetched HTML page into a search document and the
// crawl facts the provider needs from it, in one pass over the page.
//
// What it reads:
//
//   - Metadata: every <meta name> and <meta property>, names compared
//     case-insensitively. DCTERMS.title, DC.title and og:title are title
//     candidates (in that priority); description, DCTERMS.description,
//     DC.description and og:description give doc_description; keywords
//     gives doc_keywords (split on commas); author, DC.creator and
//     DCTERMS.creator give doc_author; DCTERMS.modified,
//     article:modified_time, then the Last-Modified header give
//     doc_modified; <html lang>, DC.language, http-equiv content-language,
//     then the Content-Language header give doc_language. Meta tags are
//     read wherever they are, because broken templates emit them after
//     <body>.
//   - Custom mappings "metaname:extra_field": several names may feed one
//     field; values accumulate in page order without repeats, normalised
//     to the field's declared type (a value that is not a number for a
//     numeric field, or not a date for a date field, is dropped).
//   - The title, by the source's title_order (default title, meta, h1,
//     url): the first <title>, the title metadata, the first <h1> of the
//     indexed text, then the URL. The URL gives its last path segment
//     percent-decoded, with an extension such as ".html" dropped and "-"
//     and "_" made spaces; "index" and "default" pages take their folder's
//     name, and a site root gives the host name. A title is never empty
//     and is at most 1 KiB.
//   - Text: the remove_elements (default header, footer) and elements with
//     a remove_classes class (default noindex) are left out with all they
//     contain, as are script, style, noscript, template, textarea, select,
//     iframe, noembed, noframes and svg, and the regions between
//     <!--noindex--> and <!--endnoindex--> or Google's <!--googleoff:
//     index|all--> and <!--googleon: index|all-->, which may span elements.
//     Links inside all of these but template (whose content is not part
//     of the page) are still returned. Block elements become line breaks,
//     table cells spaces, and links, buttons, images and removed parts
//     word breaks, so no two words are glued together; inline elements
//     such as b or span join their text as a browser shows it. doc_body is
//     capped at max_body_bytes (default 1 MiB) on a character boundary.
//   - Links from a and area href, frame and iframe src and meta refresh,
//     resolved against <base href>; only http and https.
//   - Robots directives from meta tags and X-Robots-Tag, and rel=canonical
//     from the head or a Link header.
package mapping

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/robots"
	"golang.org/x/net/html/atom"
)

// Defaults for a source's extraction settings left unset. A list written
// as [] in the configuration means none.
var (
	DefaultRemoveElements = []string{"header", "footer"}
	DefaultRemoveClasses  = []string{"noindex"}
	DefaultTitleOrder     = []string{"title", "meta", "h1", "url"}
)

const (
	// DefaultMaxBodyBytes caps doc_body.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultMaxLinksPerPage caps the distinct links taken from one page.
	DefaultMaxLinksPerPage = 2000
)

// Page is a fetched page.
type Page struct {
	// URL is the final, normalised URL: the document's identity.
	URL    *url.URL
	Header http.Header
	Body   []byte
	Depth  int
	Source string
	// Fetched becomes doc_crawled.
	Fetched time.Time
	// AddMeta holds the add_meta of the crawl rule that matched the page:
	// a key fills the extra field of that name ("section" and
	// "extra_section" both fill extra_section). Values come after the
	// page's own and count in doc_content_hash.
	AddMeta map[string]string
}

// Result is what a page gives.
type Result struct {
	// Doc has every field the page gives filled, Extra included.
	Doc   docfields.Document `json:"doc"`
	Links []Link             `json:"links,omitempty"`
	// LinksCapped is set when the page had more distinct links than
	// max_links_per_page; the rest were dropped. LinksFound then counts
	// the links the page held, repeats included.
	LinksCapped bool `json:"links_capped,omitempty"`
	LinksFound  int  `json:"links_found,omitempty"`
	// Robots are the directives the page and its headers give; obeying
	// them, or not, is the provider's decision.
	Robots Directives `json:"robots"`
	// Canonical is the absolute rel=canonical URL, "" if none.
	Canonical string `json:"canonical,omitempty"`
	// BodyTruncated is set when doc_body hit max_body_bytes.
	BodyTruncated bool `json:"body_truncated,omitempty"`
	// Charset is the WHATWG name of the encoding the page was decoded from.
	Charset string `json:"charset"`
	// CharsetWarning says how the bytes contradicted the charset the page
	// declared, and what they were read as instead; "" when they did not.
	CharsetWarning string `json:"charset_warning,omitempty"`
}

// Extractor maps pages of one source. It is safe for concurrent use.
type Extractor struct {
	source        string
	removeKeys    []uint64
	removeClasses []string
	meta          map[string]*metaRule
	extras        []extraField
	extraIndex    map[string]int
	titleOrder    []string
	maxBody       int
	maxLinks      int
	agents        []string
}

type extraField struct {
	name, typ string
}

// New builds the extractor of src. Configuration mistakes come back as
// config.Errors, each at the file position of the value it is about.
func New(cfg *config.Config, src *config.Source) (*Extractor, error) {
	if cfg == nil || src == nil {
		return nil, errors.New("mapping: New needs a configuration and a source")
	}
	path := sourcePath(cfg, src)
	ex := src.Extraction
	var errs config.Errors
	errf := func(p, format string, args ...any) { errs = append(errs, cfg.Errorf(p, format, args...)) }

	x := &Extractor{
		source:     src.Name,
		meta:       make(map[string]*metaRule),
		extraIndex: make(map[string]int),
		maxBody:    ex.MaxBodyBytes,
		maxLinks:   cfg.Fetch.MaxLinksPerPage,
	}
	if x.maxBody == 0 {
		x.maxBody = DefaultMaxBodyBytes
	} else if x.maxBody < 0 {
		errf(path+".extraction.max_body_bytes", "must not be negative")
	}
	if x.maxLinks == 0 {
		x.maxLinks = DefaultMaxLinksPerPage
	} else if x.maxLinks < 0 {
		errf("fetch.max_links_per_page", "must not be negative")
	}

	elems := ex.RemoveElements
	if elems == nil {
		elems = DefaultRemoveElements
	}
	for i, e := range elems {
		n := strings.ToLower(strings.TrimSpace(e))
		if !validToken(n) {
			errf(fmt.Sprintf("%s.extraction.remove_elements[%d]", path, i), "%q is not an element name", e)
			continue
		}
		x.removeKeys = append(x.removeKeys, elemKey(atom.Lookup([]byte(n)), []byte(n)))
	}
	classes := ex.RemoveClasses
	if classes == nil {
		classes = DefaultRemoveClasses
	}
	for i, c := range classes {
		n := strings.ToLower(strings.TrimSpace(c))
		if !validToken(n) {
			errf(fmt.Sprintf("%s.extraction.remove_classes[%d]", path, i), "%q is not a class name", c)
			continue
		}
		x.removeClasses = append(x.removeClasses, n)
	}

	order := ex.TitleOrder
	if order == nil {
		order = DefaultTitleOrder
	}
	for i, o := range order {
		n := strings.ToLower(strings.TrimSpace(o))
		p := fmt.Sprintf("%s.extraction.title_order[%d]", path, i)
		switch {
		case !slices.Contains(DefaultTitleOrder, n):
			errf(p, "unknown title source %q (want title, meta, h1 or url)", o)
		case slices.Contains(x.titleOrder, n):
			errf(p, "title source %q given twice", o)
		default:
			x.titleOrder = append(x.titleOrder, n)
		}
	}

	names := make([]string, 0, len(cfg.ExtraFields))
	for n := range cfg.ExtraFields {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		typ, ok := docfields.ExtraType(cfg.ExtraFields[n])
		if !ok {
			typ = docfields.DefaultExtraType // the config check reports it
		}
		x.extraIndex[n] = len(x.extras)
		x.extras = append(x.extras, extraField{name: n, typ: typ})
	}

	for _, k := range knownMeta {
		x.meta[k.name] = &metaRule{kind: k.kind, slot: k.slot}
	}
	x.agents = []string{ownAgent}
	if tok := strings.ToLower(robots.ProductToken(cfg.UserAgent)); tok != "" && tok != ownAgent {
		x.agents = append(x.agents, tok)
		if x.meta[tok] == nil {
			x.meta[tok] = &metaRule{kind: metaRobots}
		}
	}

	for i, m := range ex.MetaMappings {
		p := fmt.Sprintf("%s.extraction.meta_mappings[%d]", path, i)
		// Split at the last colon: metadata names have colons of their
		// own (og:type, article:tag), field names never do.
		name, field, ok := config.SplitMetaMapping(m)
		if !ok {
			errf(p, "%q is not a mapping: want metaname:extra_field", m)
			continue
		}
		name = strings.ToLower(name)
		if fi, ok := x.extraField(field, func(format string, args ...any) { errf(p, format, args...) }); ok {
			r := x.meta[name]
			if r == nil {
				r = &metaRule{}
				x.meta[name] = r
			}
			if !slices.Contains(r.extras, fi) {
				r.extras = append(r.extras, fi)
			}
		}
	}

	for i, cr := range src.CrawlRules {
		keys := make([]string, 0, len(cr.AddMeta))
		for k := range cr.AddMeta {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := fmt.Sprintf("%s.crawl_rules[%d].add_meta.%s", path, i, k)
			x.extraField(config.AddMetaField(k), func(format string, args ...any) { errf(p, format, args...) })
		}
	}

	if len(errs) > 0 {
		return nil, errs
	}
	return x, nil
}

// extraField checks a field a mapping names and returns its index.
func (x *Extractor) extraField(field string, errf func(string, ...any)) (int, bool) {
	if !docfields.ValidExtraName(field) {
		errf("%q is not an extra field name: want extra_ followed by lower-case letters, digits or underscores", field)
		return 0, false
	}
	fi, ok := x.extraIndex[field]
	if !ok {
		errf("field %s is not declared in extra_fields", field)
		return 0, false
	}
	return fi, true
}

// sourcePath is the key path of src in cfg, for error positions.
func sourcePath(cfg *config.Config, src *config.Source) string {
	for i := range cfg.Sources {
		if &cfg.Sources[i] == src {
			return fmt.Sprintf("sources[%d]", i)
		}
	}
	for i := range cfg.Sources {
		if cfg.Sources[i].Name == src.Name {
			return fmt.Sprintf("sources[%d]", i)
		}
	}
	return "sources"
}

// validToken reports whether s is a usable element or class name.
func validToken(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t\r\n\f<>/\"'=")
}

func (x *Extractor) removesKey(k uint64) bool {
	return slices.Contains(x.removeKeys, k)
}

var parserPool = sync.Pool{New: func() any { return new(parser) }}

// Extract maps one page. Broken HTML is read as browsers read it; the only
// error is a page without a URL.
func (x *Extractor) Extract(page Page) (*Result, error) {
	if page.URL == nil {
		return nil, errors.New("mapping: page has no URL")
	}
	ct := page.Header.Get("Content-Type")
	ctype, charset := docfields.MediaType(ct), declaredCharset(ct)
	if ctype == "" {
		ctype = docfields.MediaType(http.DetectContentType(page.Body))
	}
	body, used, charsetWarning := decodeBody(page.Body, charset)

	p := parserPool.Get().(*parser)
	defer func() {
		p.x = nil
		parserPool.Put(p)
	}()
	p.reset(x)
	p.run(body)

	res := &Result{Charset: used, CharsetWarning: charsetWarning, BodyTruncated: p.body.full}
	d := &res.Doc
	d.URL = page.URL.String()
	d.Host = strings.ToLower(page.URL.Host)
	d.Path = docPath(page.URL)
	d.ContentType = ctype
	d.Crawled = page.Fetched
	d.Source = page.Source
	if d.Source == "" {
		d.Source = x.source
	}
	d.Depth = page.Depth

	if v := page.Header.Get("Last-Modified"); v != "" {
		if t, ok := parseHeaderDate(v); ok {
			p.modified[modifiedSlots-1] = t
		}
	}
	if v := page.Header.Get("Content-Language"); v != "" {
		p.lang[langSlots-1] = normLanguage(v)
	}
	for _, v := range page.Header.Values("X-Robots-Tag") {
		p.robots.parseXRobotsTag(v, x.agents)
	}
	x.addMeta(p, page.AddMeta)

	d.Title = x.title(p, page.URL)
	d.Description = first(p.desc[:])
	d.Keywords = cloneOrNil(p.keywords)
	d.Author = cloneOrNil(p.authors)
	d.Language = first(p.lang[:])
	d.Headings = cloneOrNil(p.headings)
	d.Body = string(p.body.b)
	for _, t := range p.modified {
		if !t.IsZero() {
			d.Modified = t
			break
		}
	}
	for i, vals := range p.extras {
		if len(vals) == 0 {
			continue
		}
		if d.Extra == nil {
			d.Extra = make(map[string][]string)
		}
		d.Extra[x.extras[i].name] = slices.Clone(vals)
	}
	res.Robots = p.robots
	d.NoSnippet, d.NoArchive = p.robots.NoSnippet, p.robots.NoArchive

	base := page.URL
	if p.hasBase {
		if b, err := page.URL.Parse(p.base); err == nil && (b.Scheme == "http" || b.Scheme == "https") && b.Host != "" {
			base = b
		}
	}
	lb := newLinkBase(base)
	var found int
	res.Links, res.LinksCapped, found = p.resolveLinks(&lb, d.URL, x.maxLinks)
	if res.LinksCapped {
		res.LinksFound = found
	}
	if p.canonical != "" {
		res.Canonical, _ = lb.resolve(p.canonical)
	} else if c := headerCanonical(page.Header); c != "" {
		pb := newLinkBase(page.URL)
		res.Canonical, _ = pb.resolve(c)
	}
	d.ContentHash = ContentHash(d)
	return res, nil
}

// addMeta applies a crawl rule's add_meta: "section" and "extra_section"
// both fill extra_section, as in the configuration.
func (x *Extractor) addMeta(p *parser, add map[string]string) {
	if len(add) == 0 {
		return
	}
	keys := make([]string, 0, len(add))
	for k := range add {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if fi, ok := x.extraIndex[config.AddMetaField(k)]; ok {
			v := extraValue(p.scratch.normalize([]byte(add[k])), x.extras[fi].typ)
			p.extras[fi] = appendUnique(p.extras[fi], v)
		}
	}
}

// title picks the title by the configured order; the URL is the last
// resort whatever the order says, so a title is never empty.
func (x *Extractor) title(p *parser, u *url.URL) string {
	for _, src := range x.titleOrder {
		var t string
		switch src {
		case "title":
			t = p.title
		case "meta":
			t = first(p.metaTitle[:])
		case "h1":
			t = p.h1
		case "url":
			t = urlTitle(u)
		}
		if t != "" {
			return capTitle(t)
		}
	}
	if t := urlTitle(u); t != "" {
		return capTitle(t)
	}
	return capTitle(u.String()) // a URL without host: never an empty title
}

func capTitle(t string) string {
	if len(t) <= maxTitle {
		return t
	}
	i := maxTitle
	for i > 0 && t[i]&0xc0 == 0x80 {
		i--
	}
	return t[:i]
}

func first(ss []string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func cloneOrNil(ss []string) []string {
	if len(ss) == 0 {
		return nil
	}
	return slices.Clone(ss)
}

// declaredCharset is the charset parameter of a Content-Type value, ""
// when it names none.
func declaredCharset(ct string) string {
	if !strings.Contains(ct, ";") {
		return ""
	}
	_, params, err := mime.ParseMediaType(ct)
	if err != nil {
		// Lenient fallback for values such as "text/html;;charset=x".
		return charsetFromContentType(ct)
	}
	return strings.TrimSpace(params["charset"])
}

// docPath is the decoded path, or the escaped one when decoding would give
// invalid UTF-8.
func docPath(u *url.URL) string {
	p := u.Path
	if p == "" {
		p = "/"
	}
	if !utf8.ValidString(p) {
		p = u.EscapedPath()
	}
	return p
}

// ContentHash is doc_content_hash: a SHA-256 over the fields a search sees
// (title, description, keywords, author, language, headings, body, extra
// fields in name order, nosnippet and noarchive), not over the raw page, so
// a changed timestamp in a removed footer or a reordered attribute is no
// change. Each value is length-prefixed, so moving text between fields
// changes the hash.
func ContentHash(d *docfields.Document) string {
	h := sha256.New()
	w := hashWriter{h: h}
	w.str("title", d.Title)
	w.str("description", d.Description)
	w.list("keywords", d.Keywords)
	w.list("author", d.Author)
	w.str("language", d.Language)
	w.list("headings", d.Headings)
	w.str("body", d.Body)
	if len(d.Extra) > 0 {
		names := make([]string, 0, len(d.Extra))
		for n, v := range d.Extra {
			if len(v) > 0 {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			w.list(n, d.Extra[n])
		}
	}
	var flags [2]byte
	if d.NoSnippet {
		flags[0] = 1
	}
	if d.NoArchive {
		flags[1] = 1
	}
	h.Write(flags[:])
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// hashWriter feeds strings to a hash through a fixed buffer, so hashing a
// large body costs no allocation.
type hashWriter struct {
	h   hash.Hash
	buf [512]byte
}

func (w *hashWriter) str(name, s string) {
	w.num(len(name))
	w.write(name)
	w.num(len(s))
	w.write(s)
}

func (w *hashWriter) list(name string, ss []string) {
	w.num(len(name))
	w.write(name)
	w.num(len(ss))
	for _, s := range ss {
		w.num(len(s))
		w.write(s)
	}
}

func (w *hashWriter) num(n int) {
	b := w.buf[:8]
	for i := range b {
		b[i] = byte(n >> (8 * i))
	}
	w.h.Write(b)
}

func (w *hashWriter) write(s string) {
	for len(s) > 0 {
		n := copy(w.buf[:], s)
		w.h.Write(w.buf[:n])
		s = s[n:]
	}
}
