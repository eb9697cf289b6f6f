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
//     article:modified_time, structured data, then the Last-Modified
//     header give doc_modified; <html lang>, DC.language, http-equiv content-language,
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
//   - Extraction rules (rules.go): for the pages their include/exclude
//     patterns select, extra fields from CSS selectors (on a second parse
//     into a tree, only when a selector needs it), the URL or fixed values,
//     typed like meta values, with refused values reported.
//   - Structured data (structured.go): schema.org JSON-LD captured during
//     the parse, microdata and RDFa lite from the tree when the page has
//     any; mapped into extra fields by configuration, and feeding
//     doc_modified, doc_author and doc_description after the meta tags.
//   - The language (language.go): detected from the text when the page
//     declares none, and flagged doc_language_detected.
//   - Links from a and area href, frame and iframe src and meta refresh,
//     resolved against <base href>; only http and https.
//   - Robots directives from meta tags and X-Robots-Tag, and rel=canonical
//     from the head or a Link header.
package mapping

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/crawlspace/crawlspace/charset"
	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/robots"
	"github.com/crawlspace/crawlspace/urlnorm"
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
	// Request is the URL requested, which the page's links resolve
	// against; "" when it is URL. (URL is the page's key, whose query
	// parameters are sorted; the site wrote them in another order.)
	Request string
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
	// Origins say which extraction rule or structured data mapping filled
	// which field, and with what.
	Origins []Origin `json:"origins,omitempty"`
	// FieldWarnings are values an extraction rule or a structured data
	// mapping found that the field's type refused, each with its reason
	// and the config line.
	FieldWarnings []string `json:"field_warnings,omitempty"`
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

	// rules are the source's extraction rules; selectors is set when one
	// of them needs the page's tree.
	rules     []extractionRule
	selectors bool
	// structured reads structured data; structuredMaps are its mappings.
	structured     bool
	structuredMaps []structuredMapping
	// detect guesses the language of a page that declares none.
	detect *detector
}

type extraField struct {
	name, typ string
}

// New builds the extractor of src from a loaded configuration, which has
// every default set and every value checked.
func New(cfg *config.Config, src *config.Source) *Extractor {
	ex := src.Extraction
	x := &Extractor{
		source:     src.Name,
		meta:       make(map[string]*metaRule),
		extraIndex: make(map[string]int),
		maxBody:    ex.MaxBodyBytes,
		maxLinks:   cfg.Fetch.MaxLinksPerPage,
		titleOrder: ex.TitleOrder,
	}
	// HTML names are case-insensitive; the parser compares lower case.
	for _, e := range ex.RemoveElements {
		n := strings.ToLower(e)
		x.removeKeys = append(x.removeKeys, elemKey(atom.Lookup([]byte(n)), []byte(n)))
	}
	for _, c := range ex.RemoveClasses {
		x.removeClasses = append(x.removeClasses, strings.ToLower(c))
	}

	for _, n := range slices.Sorted(maps.Keys(cfg.ExtraFields)) {
		x.extraIndex[n] = len(x.extras)
		x.extras = append(x.extras, extraField{name: n, typ: cfg.ExtraFields[n]})
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

	for _, m := range ex.MetaMappings {
		name, field, _ := config.SplitMetaMapping(m)
		name = strings.ToLower(name)
		fi := x.extraIndex[field]
		r := x.meta[name]
		if r == nil {
			r = &metaRule{}
			x.meta[name] = r
		}
		if !slices.Contains(r.extras, fi) {
			r.extras = append(r.extras, fi)
		}
	}
	x.compileRules(cfg, src)
	x.compileStructured(cfg, src)
	if !ex.NoLanguageDetection {
		x.detect = newDetector(ex.Languages)
	}
	return x
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
	ctype, declared := docfields.MediaType(ct), charset.OfContentType(ct)
	if ctype == "" {
		ctype = docfields.MediaType(http.DetectContentType(page.Body))
	}
	body, used, charsetWarning := charset.Decode(page.Body, declared)

	p := parserPool.Get().(*parser)
	defer func() {
		p.x = nil
		parserPool.Put(p)
	}()
	p.reset(x)
	p.run(body)

	res := &Result{Charset: used, CharsetWarning: charsetWarning, BodyTruncated: p.body.full}
	d := &res.Doc
	x.fetchFields(d, page, ctype)

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
	var root *html.Node
	parsed := false
	dom := func() *html.Node {
		if !parsed {
			parsed = true
			root, _ = html.Parse(bytes.NewReader(body))
		}
		return root
	}
	x.applyRules(p, d.URL, dom, res)
	if x.structured {
		items := jsonLDItems(p.ldScripts(), nil)
		if bytes.Contains(body, []byte("itemscope")) || bytes.Contains(body, []byte("typeof")) {
			if r := dom(); r != nil {
				items = domItems(r, items)
			}
		}
		x.applyStructured(p, items, res)
	}
	x.addMeta(p, page.AddMeta)

	d.Title = x.title(p, page.URL)
	d.Description = first(p.desc[:])
	d.Keywords = cloneOrNil(p.keywords)
	d.Author = cloneOrNil(p.authors)
	d.Language = first(p.lang[:])
	d.Headings = cloneOrNil(p.headings)
	d.Body = string(p.body.b)
	if len(p.sections) > 0 {
		d.Sections = slices.Clone(p.sections)
	}
	for _, t := range p.modified {
		if !t.IsZero() {
			d.Modified = t
			break
		}
	}
	x.detectLanguage(d)
	x.copyExtrasAndRobots(p, res)

	lb := page.base()
	if p.hasBase {
		if b, ok := lb.Resolve(p.base); ok {
			lb, _ = urlnorm.ParseBase(b)
		}
	}
	var found int
	res.Links, res.LinksCapped, found = p.resolveLinks(&lb, d.URL, x.maxLinks)
	if res.LinksCapped {
		res.LinksFound = found
	}
	if p.canonical != "" {
		res.Canonical, _ = lb.Resolve(p.canonical)
	} else if c := headerCanonical(page.Header); c != "" {
		pb := page.base()
		res.Canonical, _ = pb.Resolve(c)
	}
	d.ContentHash = ContentHash(d)
	return res, nil
}

// base is what the page's links resolve against: the URL requested.
func (page Page) base() urlnorm.Base {
	if page.Request != "" {
		if b, ok := urlnorm.ParseBase(page.Request); ok {
			return b
		}
	}
	return urlnorm.NewBase(page.URL)
}

// fetchFields fills what the fetch gives every document, a page's or a
// file's: its URL, host, path, type, fetch time, source and depth.
func (x *Extractor) fetchFields(d *docfields.Document, page Page, ctype string) {
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
}

// copyExtrasAndRobots moves what the parser gathered for the extra fields
// and the robots directives into the result.
func (x *Extractor) copyExtrasAndRobots(p *parser, res *Result) {
	d := &res.Doc
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
	return capTitle(fallbackTitle(u))
}

// fallbackTitle is the title of last resort: the URL made readable, or
// the URL itself when that gives nothing (a URL without host), so a title
// is never empty.
func fallbackTitle(u *url.URL) string {
	if t := urlTitle(u); t != "" {
		return t
	}
	return u.String()
}

func capTitle(t string) string { return cutUTF8(t, maxTitle) }

// cutUTF8 cuts s to at most n bytes on a character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
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
// changes the hash. The duplicates a document stands for are not hashed
// here: GroupHash adds them.
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

// GroupHash is the doc_content_hash of the document standing for a group
// of duplicates: content, the ContentHash of its pages, and the other
// URLs it lists. It needs no more than the group as the state store keeps
// it, so the document's list can be rewritten without fetching its page
// again. A document that lists none keeps its page's ContentHash.
func GroupHash(content string, duplicates []string) string {
	if len(duplicates) == 0 {
		return content
	}
	h := sha256.New()
	w := hashWriter{h: h}
	w.str("content", content)
	w.list("duplicates", duplicates)
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
