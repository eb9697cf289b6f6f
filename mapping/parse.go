package mapping

import (
	"bytes"
	"hash/maphash"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/htmllex"
)

// Element flags. The page is read in one pass with the lexer of package htmllex
// (x/net/html's token types, not its Tokenizer); a light stack of open elements, with the HTML standard's
// implied end tags for p, li, dd/dt, table parts and options, tells where a
// removed element ends even when the page leaves its children unclosed.
const (
	fBlock   uint16 = 1 << iota // its edges are line breaks in the text
	fCell                       // its edges are spaces (table cells)
	fSoft                       // its edges separate words between letters
	fVoid                       // never has content or an end tag
	fSkip                       // its content is never text: script, style...
	fHeadOK                     // may sit in <head> without starting the body
	fClosesP                    // its start tag closes an open <p>
	fHeading                    // h1–h6
	fForeign                    // svg and math: self-closing tags close
	fRawText                    // the lexer reads its content as text
	fInert                      // template: not part of the page, links included
	fPre                        // pre, listing: line breaks in the text are kept
)

func classify(a atom.Atom) uint16 {
	switch a {
	case atom.P, atom.Div, atom.Ul, atom.Ol, atom.Dl, atom.Header, atom.Footer, atom.Nav,
		atom.Section, atom.Article, atom.Aside, atom.Main, atom.Blockquote, atom.Address,
		atom.Center, atom.Details, atom.Dialog, atom.Dir, atom.Fieldset, atom.Figcaption,
		atom.Figure, atom.Hgroup, atom.Menu, atom.Summary, atom.Search:
		return fBlock | fClosesP
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		return fBlock | fClosesP | fHeading
	case atom.Pre, atom.Listing:
		return fBlock | fClosesP | fPre
	case atom.Form, atom.Table:
		return fBlock | fClosesP
	case atom.Li, atom.Dd, atom.Dt:
		return fBlock | fClosesP
	case atom.Xmp, atom.Plaintext:
		return fBlock | fClosesP | fRawText
	case atom.Hr:
		return fBlock | fClosesP | fVoid
	case atom.Br:
		return fBlock | fVoid
	case atom.Tr, atom.Tbody, atom.Thead, atom.Tfoot, atom.Caption, atom.Legend, atom.Optgroup, atom.Option,
		atom.Body, atom.Html, atom.Frameset, atom.Video, atom.Audio, atom.Canvas, atom.Object:
		return fBlock
	case atom.Td, atom.Th:
		return fCell
	case atom.A, atom.Button, atom.Label, atom.Output, atom.Meter, atom.Progress:
		return fSoft
	case atom.Img, atom.Input, atom.Embed, atom.Wbr, atom.Area, atom.Col, atom.Param,
		atom.Source, atom.Track, atom.Keygen:
		return fSoft | fVoid
	case atom.Meta, atom.Link, atom.Base, atom.Basefont, atom.Bgsound:
		return fHeadOK | fVoid
	case atom.Frame:
		return fVoid
	case atom.Title:
		// Only the first title is captured; others are no body text.
		return fHeadOK | fRawText | fSkip
	case atom.Script, atom.Style, atom.Noscript:
		return fHeadOK | fSkip | fRawText
	case atom.Template:
		return fHeadOK | fSkip | fInert
	case atom.Textarea, atom.Iframe, atom.Noembed, atom.Noframes:
		return fSoft | fSkip | fRawText
	case atom.Select:
		return fSoft | fSkip
	case atom.Svg:
		return fSoft | fSkip | fForeign
	case atom.Math:
		return fSoft | fForeign
	case atom.Head:
		return fHeadOK
	}
	return 0
}

// keySeed makes the keys of custom elements stable within a process.
var keySeed = maphash.MakeSeed()

// elemKey identifies an element name without allocating: its atom, or for
// custom elements (<my-widget>) a hash of the name with the top bit set so
// it cannot equal an atom.
func elemKey(a atom.Atom, name []byte) uint64 {
	if a != 0 {
		return uint64(a)
	}
	return maphash.Bytes(keySeed, name) | 1<<63
}

const (
	maxStack = 2048 // deeper elements are treated as closed at once
	maxTitle = 1024 // bytes; a <title> left open must not swallow the page
	// searchDepth bounds the walk down the stack for an end tag, so a page
	// of thousands of unclosed elements cannot make parsing quadratic.
	searchDepth = 256
)

type elem struct {
	key     uint64
	flags   uint16
	removed bool
}

// attr is one attribute as spans of the raw tag.
// parser holds the state of one Extract call; parsers are pooled.
type parser struct {
	x *Extractor
	z htmllex.Lexer

	stack     []elem
	removed   int // removed elements open
	foreign   int // svg and math elements open
	inert     int // template elements open
	openP     int // p elements open: most pages close their paragraphs,
	openLi    int // so implied ends only search when one is open
	openDd    int
	openA     int
	uncounted int
	pre       int  // pre and listing elements open
	heading   int  // stack index + 1 of the open heading, 0 if none
	noindex   bool // inside <!--noindex--> … <!--endnoindex-->
	inBody    bool
	inTitle   bool
	titleSeen bool
	skipRaw   bool // the next text token is the content of an untracked raw element
	inLD      bool // the next text token is a JSON-LD script's

	body, head, tbuf, scratch textBuf
	name                      []byte
	raw                       []byte
	attrs                     []htmllex.Attr
	unesc                     []byte

	title     string
	h1        string
	headings  []string
	metaTitle [titleSlots]string
	desc      [descSlots]string
	keywords  []string
	authors   []string
	modified  [modifiedSlots]time.Time
	lang      [langSlots]string
	extras    [][]string
	robots    Directives
	base      string
	hasBase   bool
	canonical string
	links     []rawLink
	arena     []byte
	seen      map[string]int
	resolved  []byte
	// ld holds the JSON-LD scripts' text, ldEnds where each ends.
	ld     []byte
	ldEnds []int

	// sections are the headings of the indexed text, where each starts in
	// the body; sec is the one the open heading starts.
	sections []docfields.Section
	sec      docfields.Section
	anchor   []byte
	// pendingID is the id of an element opened when the body was
	// pendingAt bytes long: the anchor of a heading that follows before
	// any text (a <section id> around it).
	pendingID []byte
	pendingAt int
}

func (p *parser) reset(x *Extractor) {
	p.x = x
	p.z.Reset(nil)
	p.stack = p.stack[:0]
	p.removed, p.foreign, p.inert, p.pre, p.heading = 0, 0, 0, 0, 0
	p.openP, p.openLi, p.openDd, p.openA = 0, 0, 0, 0
	p.noindex, p.inBody, p.inTitle, p.titleSeen, p.skipRaw, p.inLD = false, false, false, false, false, false
	p.ld, p.ldEnds = p.ld[:0], p.ldEnds[:0]
	clear(p.sections)
	p.sections = p.sections[:0]
	p.anchor, p.pendingID, p.pendingAt = p.anchor[:0], p.pendingID[:0], -1
	p.body.reset(x.maxBody, true)
	p.head.reset(0, false)
	p.tbuf.reset(maxTitle, false)
	p.title, p.h1 = "", ""
	clear(p.headings)
	p.headings = p.headings[:0]
	p.metaTitle = [titleSlots]string{}
	p.desc = [descSlots]string{}
	clear(p.keywords)
	p.keywords = p.keywords[:0]
	clear(p.authors)
	p.authors = p.authors[:0]
	p.modified = [modifiedSlots]time.Time{}
	p.lang = [langSlots]string{}
	for i := range p.extras {
		clear(p.extras[i])
		p.extras[i] = p.extras[i][:0]
	}
	for len(p.extras) < len(x.extras) {
		p.extras = append(p.extras, nil)
	}
	p.extras = p.extras[:len(x.extras)]
	p.robots = Directives{}
	p.base, p.hasBase, p.canonical = "", false, ""
	p.links = p.links[:0]
	p.arena = p.arena[:0]
	if p.seen == nil {
		p.seen = make(map[string]int)
	}
}

// run reads the whole page.
func (p *parser) run(body []byte) {
	z := &p.z
	z.Reset(body)
	for {
		switch tt := z.Next(); tt {
		case html.ErrorToken:
			p.popTo(0)
			z.Reset(nil) // a pooled parser must not keep the page
			return
		case html.TextToken:
			p.text(z.Text())
		case html.StartTagToken, html.SelfClosingTagToken:
			p.skipRaw, p.inLD = false, false
			p.startTag(z.Raw(), tt == html.SelfClosingTagToken)
		case html.EndTagToken:
			p.skipRaw, p.inLD = false, false
			p.endTag(z.Raw())
		case html.CommentToken:
			p.skipRaw, p.inLD = false, false
			p.comment(z.Text())
		}
	}
}

// tagName lower-cases the name of a raw tag starting at offset (1 for
// "<a", 2 for "</a") into p.name.
func (p *parser) tagName(raw []byte, offset int) []byte {
	p.name = p.name[:0]
	for i := offset; i < len(raw); i++ {
		c := raw[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '/' || c == '>' {
			break
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		p.name = append(p.name, c)
	}
	return p.name
}

func (p *parser) text(t []byte) {
	if p.inLD {
		p.inLD = false
		if len(p.ld)+len(t) <= maxJSONLD {
			p.ld = append(p.ld, t...)
			p.ldEnds = append(p.ldEnds, len(p.ld))
		}
	}
	if p.skipRaw {
		p.skipRaw = false
		return
	}
	if p.inTitle {
		p.tbuf.write(t)
		return
	}
	if p.removed > 0 || p.noindex {
		return
	}
	if !p.inBody && !allSpace(t) {
		p.inBody = true
	}
	p.body.write(t)
	if p.heading > 0 {
		p.head.write(t)
	}
}

func allSpace(b []byte) bool {
	for _, c := range b {
		if !htmllex.IsSpace(c) {
			return false
		}
	}
	return true
}

// edge records the separator an element's start or end puts in the text.
func (p *parser) edge(f uint16, removed bool) {
	var k uint8
	switch {
	case f&fBlock != 0:
		k = sepLine
	case f&fCell != 0:
		k = sepSpace
	case f&fSoft != 0 || removed:
		k = sepSoft
	default:
		return
	}
	p.body.sep(k)
	if p.heading > 0 {
		p.head.sep(k)
	}
}

func (p *parser) startTag(raw []byte, selfClosing bool) {
	name := p.tagName(raw, 1)
	a := atom.Lookup(name)
	f := classify(a)
	if p.foreign > 0 && f&fRawText != 0 {
		// In SVG and MathML, <style> or <title> hold markup, not text.
		p.z.NextIsNotRawText()
	}
	p.raw = raw
	p.attrs = htmllex.ParseAttrs(raw, p.attrs[:0])

	switch a {
	case atom.Html:
		if p.lang[0] == "" {
			if v, ok := p.attr("lang"); ok {
				p.lang[0] = normLanguage(string(v))
			} else if v, ok := p.attr("xml:lang"); ok {
				p.lang[0] = normLanguage(string(v))
			}
		}
		return
	case atom.Head:
		return
	case atom.Body:
		p.inBody = true
		return
	case atom.Base:
		if !p.hasBase {
			if v, ok := p.attr("href"); ok {
				p.base, p.hasBase = string(appendURLText(nil, v)), true
			}
		}
	case atom.Meta:
		p.meta()
	case atom.Link:
		// A canonical link in the body may come from user content, so
		// only the head's counts, as search engines do.
		if !p.inBody && p.canonical == "" && p.relHas("canonical") {
			if v, ok := p.attr("href"); ok {
				p.canonical = string(appendURLText(nil, v))
			}
		}
	case atom.A, atom.Area:
		nofollow := p.relHas("nofollow") // before attr reuses its buffer
		if v, ok := p.attr("href"); ok {
			tag := tagA
			if a == atom.Area {
				tag = tagArea
			}
			p.addLink(v, tag, nofollow)
		}
	case atom.Frame, atom.Iframe:
		if v, ok := p.attr("src"); ok {
			tag := tagFrame
			if a == atom.Iframe {
				tag = tagIframe
			}
			p.addLink(v, tag, false)
		}
	case atom.Script:
		// JSON-LD is read wherever it is, as search engines read it.
		if p.x.structured && p.foreign == 0 {
			if v, ok := p.attr("type"); ok && isJSONLDType(v) {
				p.inLD = true
			}
		}
	case atom.Title:
		if p.foreign == 0 && !p.titleSeen {
			p.inTitle = true
			p.tbuf.reset(maxTitle, false)
		}
	}
	if f&fHeadOK == 0 {
		p.inBody = true
	}
	if f&fVoid != 0 {
		p.edge(f, false)
		return
	}
	if p.foreign > 0 && selfClosing {
		return
	}
	p.implyEnds(a, f)
	if len(p.stack) >= maxStack {
		// Too deep to track: the element is treated as closed at once,
		// but the raw text of a script or style must still not become
		// body text.
		p.inTitle = false
		p.skipRaw = f&fRawText != 0
		return
	}
	key := elemKey(a, name)
	removed := f&fSkip != 0 || p.x.removesKey(key) || p.hasRemovedClass()
	p.edge(f, removed)
	p.stack = append(p.stack, elem{key: key, flags: f, removed: removed})
	if removed {
		p.removed++
	}
	if f&fForeign != 0 {
		p.foreign++
	}
	if f&fInert != 0 {
		p.inert++
	}
	*p.openCount(key)++
	if f&fPre != 0 {
		p.pre++
		p.body.pre = true
	}
	switch {
	case f&fHeading != 0 && p.heading == 0:
		p.heading = len(p.stack)
		p.head.reset(0, false)
		p.startSection(a)
	case p.removed == 0 && !p.noindex:
		p.noteID()
	}
}

// startSection notes where the heading a opens its section: its offset in
// the body and its anchor, the heading's own id or, failing that, the id
// of an element opened right before it (a <section id>, a <span id>).
func (p *parser) startSection(a atom.Atom) {
	p.sec = docfields.Section{Offset: len(p.body.b), Level: int(headingLevel(a))}
	p.anchor = p.anchor[:0]
	if v, ok := p.attr("id"); ok && len(bytes.TrimSpace(v)) > 0 {
		p.anchor = append(p.anchor, bytes.TrimSpace(v)...)
	} else if len(p.pendingID) > 0 && p.pendingAt == len(p.body.b) {
		p.anchor = append(p.anchor, p.pendingID...)
	}
}

// noteID keeps the id of an element of the indexed text as the anchor of a
// heading that may follow, unless an element opened since the last text
// gave one already (the outermost leads there first). Inside a heading,
// before its text, an id (or an <a name>) is the heading's anchor when it
// has none.
func (p *parser) noteID() {
	v, ok := p.attr("id")
	if !ok && p.heading > 0 {
		v, ok = p.attr("name")
	}
	v = bytes.TrimSpace(v)
	if !ok || len(v) == 0 {
		return
	}
	if p.heading > 0 {
		if len(p.head.b) == 0 && len(p.anchor) == 0 {
			p.anchor = append(p.anchor, v...)
		}
		return
	}
	if len(p.pendingID) == 0 || p.pendingAt != len(p.body.b) {
		p.pendingID, p.pendingAt = append(p.pendingID[:0], v...), len(p.body.b)
	}
}

// headingLevel is 1 for h1 to 6 for h6.
func headingLevel(a atom.Atom) uint8 {
	switch a {
	case atom.H1:
		return 1
	case atom.H2:
		return 2
	case atom.H3:
		return 3
	case atom.H4:
		return 4
	case atom.H5:
		return 5
	}
	return 6
}

func (p *parser) endTag(raw []byte) {
	name := p.tagName(raw, 2)
	a := atom.Lookup(name)
	switch a {
	case atom.Html, atom.Head, atom.Body:
		return
	case atom.Br:
		// </br> is read as <br>, as browsers do.
		p.edge(fBlock, false)
		return
	}
	key := elemKey(a, name)
	for i, n := len(p.stack)-1, 0; i >= 0 && n < searchDepth; i, n = i-1, n+1 {
		if p.stack[i].key == key {
			p.popTo(i)
			return
		}
	}
	// A stray end tag closes nothing but still ends a block.
	p.edge(classify(a), false)
}

// popTo closes the elements at stack index i and above.
func (p *parser) popTo(i int) {
	for j := len(p.stack) - 1; j >= i; j-- {
		e := p.stack[j]
		if j+1 == p.heading {
			p.endHeading(e.key)
		}
		if e.key == uint64(atom.Title) && p.inTitle {
			p.inTitle, p.titleSeen = false, true
			p.title = string(p.tbuf.b)
		}
		p.edge(e.flags, e.removed)
		if e.removed {
			p.removed--
		}
		if e.flags&fForeign != 0 {
			p.foreign--
		}
		if e.flags&fInert != 0 {
			p.inert--
		}
		*p.openCount(e.key)--
		if e.flags&fPre != 0 {
			p.pre--
			p.body.pre = p.pre > 0
		}
	}
	p.stack = p.stack[:i]
}

func (p *parser) endHeading(key uint64) {
	p.heading = 0
	if len(p.head.b) == 0 {
		return
	}
	h := string(p.head.b)
	p.headings = append(p.headings, h)
	if key == uint64(atom.H1) && p.h1 == "" {
		p.h1 = h
	}
	if p.sec.Offset < len(p.body.b) {
		p.sec.Title, p.sec.Anchor = h, string(p.anchor)
		p.sections = append(p.sections, p.sec)
	}
}

// implyEnds closes the elements a start tag implicitly ends, after the HTML
// standard's tree construction rules, so that "<p class=noindex>a<p>b"
// removes a and keeps b.
func (p *parser) implyEnds(a atom.Atom, f uint16) {
	if f&fClosesP != 0 && p.openP > 0 {
		p.closeOpen(func(k uint64) bool { return k == uint64(atom.P) }, stopsP)
	}
	switch a {
	case atom.Li:
		if p.openLi == 0 {
			return
		}
		p.closeOpen(func(k uint64) bool { return k == uint64(atom.Li) }, stopsLi)
	case atom.Dd, atom.Dt:
		if p.openDd == 0 {
			return
		}
		p.closeOpen(func(k uint64) bool { return k == uint64(atom.Dd) || k == uint64(atom.Dt) }, stopsDd)
	case atom.Tr:
		p.closeLowest(isRowPart, stopsRow)
	case atom.Td, atom.Th:
		p.closeLowest(isCell, stopsCell)
	case atom.Tbody, atom.Thead, atom.Tfoot:
		p.closeLowest(isTablePart, stopsTablePart)
	case atom.Option:
		p.closeTop(uint64(atom.Option))
	case atom.Optgroup:
		p.closeTop(uint64(atom.Option))
		p.closeTop(uint64(atom.Optgroup))
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		if n := len(p.stack); n > 0 && p.stack[n-1].flags&fHeading != 0 {
			p.popTo(n - 1)
		}
	case atom.A:
		// Links do not nest; a new one closes the one still open.
		if p.openA == 0 {
			return
		}
		p.closeOpen(func(k uint64) bool { return k == uint64(atom.A) }, stopsP)
	}
}

// openCount is the counter of open elements with key; a scratch counter
// for elements nobody counts.
func (p *parser) openCount(key uint64) *int {
	switch key {
	case uint64(atom.P):
		return &p.openP
	case uint64(atom.Li):
		return &p.openLi
	case uint64(atom.Dd), uint64(atom.Dt):
		return &p.openDd
	case uint64(atom.A):
		return &p.openA
	}
	return &p.uncounted
}

func (p *parser) closeTop(key uint64) {
	if n := len(p.stack); n > 0 && p.stack[n-1].key == key {
		p.popTo(n - 1)
	}
}

// closeOpen closes the nearest open element matching is, unless an element
// in stops comes first.
func (p *parser) closeOpen(is func(uint64) bool, stops func(uint64) bool) {
	for i, n := len(p.stack)-1, 0; i >= 0 && n < searchDepth; i, n = i-1, n+1 {
		k := p.stack[i].key
		if is(k) {
			p.popTo(i)
			return
		}
		if stops(k) {
			return
		}
	}
}

// closeLowest closes the outermost run of matching elements below the
// nearest stop: a new <tr> closes the open cell and the open row.
func (p *parser) closeLowest(is func(uint64) bool, stops func(uint64) bool) {
	at := -1
	for i, n := len(p.stack)-1, 0; i >= 0 && n < searchDepth; i, n = i-1, n+1 {
		k := p.stack[i].key
		if stops(k) {
			break
		}
		if is(k) {
			at = i
		}
	}
	if at >= 0 {
		p.popTo(at)
	}
}

func keyIn(k uint64, as ...atom.Atom) bool {
	for _, a := range as {
		if k == uint64(a) {
			return true
		}
	}
	return false
}

func stopsP(k uint64) bool {
	return keyIn(k, atom.Button, atom.Table, atom.Td, atom.Th, atom.Caption, atom.Marquee,
		atom.Object, atom.Applet, atom.Template, atom.Svg, atom.Math)
}

func stopsLi(k uint64) bool {
	return keyIn(k, atom.Ul, atom.Ol, atom.Menu, atom.Table, atom.Td, atom.Th, atom.Template, atom.Svg, atom.Math)
}

func stopsDd(k uint64) bool {
	return keyIn(k, atom.Dl, atom.Ul, atom.Ol, atom.Table, atom.Td, atom.Th, atom.Template, atom.Svg, atom.Math)
}

func isRowPart(k uint64) bool { return keyIn(k, atom.Tr, atom.Td, atom.Th) }
func isCell(k uint64) bool    { return keyIn(k, atom.Td, atom.Th) }
func isTablePart(k uint64) bool {
	return keyIn(k, atom.Tbody, atom.Thead, atom.Tfoot, atom.Tr, atom.Td, atom.Th)
}

func stopsRow(k uint64) bool {
	return keyIn(k, atom.Table, atom.Tbody, atom.Thead, atom.Tfoot, atom.Template)
}

func stopsCell(k uint64) bool {
	return keyIn(k, atom.Tr, atom.Table, atom.Tbody, atom.Thead, atom.Tfoot, atom.Template)
}

func stopsTablePart(k uint64) bool { return keyIn(k, atom.Table, atom.Template) }

// comment handles Funnelback's noindex regions and Google's aliases.
// Spaces inside the comment and letter case do not matter; other googleoff
// kinds (snippet, anchor) are not regions of unindexed text.
func (p *parser) comment(t []byte) {
	if len(t) > 48 {
		return
	}
	var buf [48]byte
	n := 0
	for _, c := range t {
		switch c {
		case ' ', '\t', '\n', '\r', '\f':
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	switch string(buf[:n]) {
	case "noindex", "googleoff:index", "googleoff:all":
		p.noindex = true
	case "endnoindex", "googleon:index", "googleon:all":
		p.noindex = false
	default:
		return
	}
	p.body.sep(sepSoft)
	if p.heading > 0 {
		p.head.sep(sepSoft)
	}
}

// attr returns the value of the named attribute (a lower-case name) of the
// current start tag, decoded as the HTML Standard's tokenizer decodes
// attribute values (htmllex.AppendAttrValue). The slice is valid until the next call.
func (p *parser) attr(name string) ([]byte, bool) {
	for _, a := range p.attrs {
		if htmllex.EqualFoldASCII(a.Name(p.raw), name) {
			return p.value(a), true
		}
	}
	return nil, false
}

// value is the value of attribute a of the current start tag, as attr
// gives it.
func (p *parser) value(a htmllex.Attr) []byte {
	v := a.RawValue(p.raw)
	if htmllex.AttrIsPlain(v) {
		return v
	}
	p.unesc = htmllex.AppendAttrValue(p.unesc[:0], v)
	return p.unesc
}

// relHas reports whether the rel attribute lists tok.
func (p *parser) relHas(tok string) bool {
	v, ok := p.attr("rel")
	if !ok {
		return false
	}
	for f := range bytes.FieldsSeq(v) {
		if htmllex.EqualFoldASCII(f, tok) {
			return true
		}
	}
	return false
}

// hasRemovedClass reports whether the current tag has a class the
// configuration removes. Class names compare case-insensitively: authors
// mix "NoIndex" and "noindex", and a removed class is a request to hide.
func (p *parser) hasRemovedClass() bool {
	if len(p.x.removeClasses) == 0 {
		return false
	}
	v, ok := p.attr("class")
	if !ok {
		return false
	}
	for f := range bytes.FieldsSeq(v) {
		for _, c := range p.x.removeClasses {
			if htmllex.EqualFoldASCII(f, c) {
				return true
			}
		}
	}
	return false
}

func (p *parser) addLink(v []byte, tag uint8, nofollow bool) {
	if p.inert > 0 {
		return // template content: often placeholders such as {{url}}
	}
	start := len(p.arena)
	p.arena = appendURLText(p.arena, v)
	if len(p.arena) == start {
		return
	}
	p.links = append(p.links, rawLink{start: start, end: len(p.arena), tag: tag, nofollow: nofollow})
}

// meta handles a <meta> tag: name and property both name metadata.
func (p *parser) meta() {
	if v, ok := p.attr("http-equiv"); ok {
		switch {
		case htmllex.EqualFoldASCII(bytes.TrimSpace(v), "content-language"):
			if c, ok := p.attr("content"); ok && p.lang[2] == "" {
				p.lang[2] = normLanguage(string(c))
			}
		case htmllex.EqualFoldASCII(bytes.TrimSpace(v), "refresh"):
			if c, ok := p.attr("content"); ok {
				if u := refreshURL(string(c)); u != "" {
					p.addLink([]byte(u), tagMeta, false)
				}
			}
		}
	}
	var prev string
	for _, an := range [...]string{"name", "property"} {
		v, ok := p.attr(an)
		if !ok {
			continue
		}
		p.name = append(p.name[:0], bytes.TrimSpace(v)...)
		for i, c := range p.name {
			if 'A' <= c && c <= 'Z' {
				p.name[i] = c + 'a' - 'A'
			}
		}
		rule := p.x.meta[string(p.name)]
		if rule == nil || string(p.name) == prev {
			continue
		}
		prev = string(p.name)
		if c, ok := p.attr("content"); ok {
			p.applyMeta(rule, c)
		}
	}
}

// applyMeta fills fields from one metadata value.
func (p *parser) applyMeta(rule *metaRule, content []byte) {
	switch rule.kind {
	case metaTitle:
		if p.metaTitle[rule.slot] == "" {
			p.metaTitle[rule.slot] = p.scratch.normalize(content)
		}
	case metaDescription:
		if p.desc[rule.slot] == "" {
			p.desc[rule.slot] = p.scratch.normalize(content)
		}
	case metaKeywords:
		for kw := range bytes.SplitSeq(content, []byte{','}) {
			p.keywords = appendUnique(p.keywords, p.scratch.normalize(kw))
		}
	case metaAuthor:
		p.authors = appendUnique(p.authors, p.scratch.normalize(content))
	case metaModified:
		if p.modified[rule.slot].IsZero() {
			if t, ok := parseDate(string(content)); ok {
				p.modified[rule.slot] = t
			}
		}
	case metaLanguage:
		if p.lang[rule.slot] == "" {
			p.lang[rule.slot] = normLanguage(string(content))
		}
	case metaRobots:
		p.robots.parseMetaRobots(string(content))
	}
	if len(rule.extras) > 0 {
		v := p.scratch.normalize(content)
		for _, fi := range rule.extras {
			p.extras[fi] = appendUnique(p.extras[fi], extraValue(v, p.x.extras[fi].typ))
		}
	}
}
