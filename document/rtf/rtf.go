// Package rtf reads Rich Text Format files as documents, in pure Go: the body text in reading
// order, the \info group's properties and the targets of HYPERLINK fields.
//
// The parser follows the RTF 1.9.1 specification's reader model: groups save and restore the
// character and paragraph state, destinations that hold no body text (font and colour tables,
// style sheets, pictures, objects, headers and footers, and every \* destination it does not
// know) are skipped, \uN is followed by \ucN fallback characters that are skipped, and 8-bit
// text (\'hh or raw bytes) is decoded in the code page of the current font's \fcharset, else
// the document's \ansicpg.
package rtf

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/crawlspace/crawlspace/document"
)

// Reader reads RTF files. The zero value is ready to use.
type Reader struct{}

const (
	// maxDepth bounds group nesting: real files stay under a few dozen levels, and the state
	// stack grows with it.
	maxDepth = 1024
	// maxField bounds each \info property and each field instruction kept.
	maxField = 4096
	// maxFonts bounds the font table's code pages kept: a file of nothing but fonts would
	// otherwise cost some 40 bytes of memory for every 24 it takes. Past it, text in a font
	// not kept is read in the document's code page.
	maxFonts = 1 << 16
	// maxPend bounds the 8-bit text held before it is decoded: a run of megabytes without a
	// control word is decoded as it comes, so it costs this much and the body's limit ends it.
	maxPend = 64 << 10
	// checkEvery is how many tokens pass between looks at ctx.
	checkEvery = 1 << 16
)

// dest says where a group's text goes.
type dest uint8

const (
	destBody dest = iota
	destSkip
	destInfo      // \info and \ud: no text of their own, properties in their groups
	destFontTable // read for the fonts' \fcharset, no text
	destTitle
	destSubject
	destAuthor
	destKeywords
	destComment
	destDate    // \creatim, \revtim: control words only
	destFldinst // a field's instruction: HYPERLINK "url"
)

// state is what a group saves and restores.
type state struct {
	dest    dest
	uc      int  // fallback characters after \uN
	cp      int  // code page of 8-bit text: the current font's, else the document's
	intbl   bool // paragraph inside a table: \par separates words, \row ends the line
	outline bool // paragraph is a heading (\outlinelevelN)
	date    *dateParts
	upr     bool // inside \upr: its first group is the ANSI copy of the \*\ud group that follows
	field   *field
}

type dateParts struct {
	yr, mo, dy, hr, min, sec int
	revised                  bool // \revtim, else \creatim
}

type field struct{ inst strings.Builder }

type parser struct {
	ctx   context.Context
	data  []byte
	pos   int
	st    state
	stack []state
	body  *document.Text
	c     *document.Content

	docCP     int         // \ansicpg
	fonts     map[int]int // font number -> code page, from \fcharset
	fontNum   int         // the font being defined in the font table
	pend      []byte      // 8-bit text awaiting decoding, so a double-byte character stays whole
	pendCP    int         // the code page of pend
	skip      int         // fallback characters still to skip after \uN
	high      rune        // a UTF-16 high surrogate from \uN awaiting its low half
	info      map[dest]*strings.Builder
	heading   strings.Builder
	headDone  bool
	starred   bool // the group began with \*
	groupOpen bool // no control word has been read in this group yet
	links     map[string]bool
}

// Read parses data as RTF.
func (Reader) Read(ctx context.Context, data []byte, lim document.Limits) (c *document.Content, err error) {
	lim = lim.WithDefaults()
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, document.Errorf(document.ReasonCorrupt, "rtf reader panic: %v", p)
		}
	}()
	start := bytes.TrimLeft(data, " \t\r\n\ufeff")
	start = bytes.TrimPrefix(start, []byte("\xef\xbb\xbf"))
	if !bytes.HasPrefix(start, []byte(`{\rtf`)) {
		return nil, document.Errorf(document.ReasonCorrupt, "not RTF: the file does not start with {\\rtf")
	}
	p := &parser{
		ctx:   ctx,
		data:  data,
		body:  document.NewText(lim.MaxText),
		c:     &document.Content{},
		docCP: 1252,
		fonts: map[int]int{},
		info:  map[dest]*strings.Builder{},
		links: map[string]bool{},
		st:    state{dest: destBody, uc: 1, cp: 1252},
	}
	if err := p.run(); err != nil {
		return nil, err
	}
	p.flush()
	p.endParagraph()
	c = p.c
	c.Title = p.infoText(destTitle)
	c.Subject = p.infoText(destSubject)
	if c.Subject == "" {
		c.Subject = p.infoText(destComment)
	}
	if a := p.infoText(destAuthor); a != "" {
		c.Authors = []string{a}
	}
	c.Keywords = splitKeywords(p.infoText(destKeywords))
	c.Heading = strings.Join(strings.Fields(p.heading.String()), " ")
	c.Body = p.body.String()
	c.Truncated = p.body.Truncated()
	return c, nil
}

func (p *parser) run() error {
	for n := 0; p.pos < len(p.data); n++ {
		if n%checkEvery == 0 {
			if err := p.ctx.Err(); err != nil {
				return &document.Error{Reason: document.ReasonTimeout, Err: err}
			}
		}
		if p.body.Full() {
			return nil
		}
		b := p.data[p.pos]
		switch b {
		case '{':
			p.pos++
			p.flush()
			p.skip = 0
			if len(p.stack) >= maxDepth {
				return document.Errorf(document.ReasonCorrupt, "groups nested deeper than %d", maxDepth)
			}
			p.stack = append(p.stack, p.st)
			if p.st.upr {
				// The first group inside \upr is the ANSI copy of the text \*\ud holds in Unicode.
				p.stack[len(p.stack)-1].upr = false
				p.st.dest = destSkip
				p.st.upr = false
			}
			p.starred, p.groupOpen = false, true
		case '}':
			p.pos++
			p.flush()
			p.skip = 0
			if len(p.stack) == 0 {
				return nil // the document's group has closed: what follows is not RTF
			}
			p.closeGroup()
		case '\\':
			if err := p.control(); err != nil {
				return err
			}
		case '\r', '\n':
			p.pos++
		default:
			p.pos++
			p.byteText(b)
		}
	}
	return nil
}

// closeGroup ends a group: a finished field instruction or date takes effect.
func (p *parser) closeGroup() {
	inner := p.st
	p.st = p.stack[len(p.stack)-1]
	p.stack = p.stack[:len(p.stack)-1]
	if inner.dest == destFldinst && p.st.dest != destFldinst && inner.field != nil {
		p.link(inner.field.inst.String())
	}
	if inner.dest == destDate && p.st.dest != destDate && inner.date != nil {
		p.setDate(inner)
	}
}

// control reads one control word or symbol at p.pos.
func (p *parser) control() error {
	p.pos++ // the backslash
	if p.pos >= len(p.data) {
		return nil
	}
	c := p.data[p.pos]
	if !isLetter(c) {
		p.pos++
		p.symbol(c)
		return nil
	}
	start := p.pos
	for p.pos < len(p.data) && isLetter(p.data[p.pos]) && p.pos-start < 32 {
		p.pos++
	}
	word := string(p.data[start:p.pos])
	param, hasParam := 0, false
	if p.pos < len(p.data) && (p.data[p.pos] == '-' || isDigit(p.data[p.pos])) {
		s := p.pos
		if p.data[p.pos] == '-' {
			p.pos++
		}
		for p.pos < len(p.data) && isDigit(p.data[p.pos]) && p.pos-s < 11 {
			p.pos++
		}
		if n, err := strconv.Atoi(string(p.data[s:p.pos])); err == nil {
			param, hasParam = n, true
		}
	}
	if p.pos < len(p.data) && p.data[p.pos] == ' ' {
		p.pos++ // the delimiter belongs to the control word
	}
	first := p.groupOpen
	p.groupOpen = false
	if word == "bin" {
		// Binary data of param bytes follows: it is not text, whatever it holds.
		p.flush()
		if hasParam && param > 0 {
			p.pos += min(param, len(p.data)-p.pos)
		}
		return nil
	}
	if p.skip > 0 && word != "u" {
		p.skip--
		return nil
	}
	p.word(word, param, hasParam, first)
	return nil
}

func (p *parser) symbol(c byte) {
	first := p.groupOpen
	p.groupOpen = false
	switch c {
	case '\'':
		if p.pos+2 <= len(p.data) {
			if v, err := strconv.ParseUint(string(p.data[p.pos:p.pos+2]), 16, 8); err == nil {
				p.pos += 2
				p.byteText(byte(v))
				return
			}
		}
		return
	case '*':
		p.starred = first
		if first {
			p.groupOpen = true // the destination's control word follows
		}
		return
	}
	if p.skip > 0 {
		p.skip--
		return
	}
	switch c {
	case '\\', '{', '}':
		p.text(string(c))
	case '~':
		p.text("\u00a0")
	case '_':
		p.text("\u2011")
	case '\r', '\n':
		p.par() // \<newline> is \par
	case '\t':
		p.space()
	}
	// \- (optional hyphen), \: (index subentry) and \| add nothing.
}

// skipped are destinations that hold no body text, whether or not they come starred.
var skipped = map[string]bool{
	"colortbl": true, "stylesheet": true, "listtable": true, "listoverridetable": true,
	"revtbl": true, "rsidtbl": true, "filetbl": true, "pict": true, "object": true,
	"header": true, "headerl": true, "headerr": true, "headerf": true,
	"footer": true, "footerl": true, "footerr": true, "footerf": true,
	"xe": true, "tc": true, "txe": true, "nonshppict": true, "sp": true, "annotation": true,
	"atnauthor": true, "atnid": true, "atndate": true, "template": true, "listtext": true,
	"pntext": true, "pntxta": true, "pntxtb": true, "operator": true, "printim": true,
	"buptim": true, "company": true, "category": true, "manager": true, "hlinkbase": true,
	"docvar": true, "userprops": true, "generator": true, "ftnsep": true, "ftnsepc": true,
	"aftnsep": true, "aftnsepc": true, "fldtype": true, "datafield": true, "themedata": true,
	"colorschememapping": true, "datastore": true, "latentstyles": true, "xmlnstbl": true,
	"pgdsctbl": true, "mmathPr": true, "wgrffmtfilter": true, "passwordhash": true,
}

var infoDest = map[string]dest{
	"title": destTitle, "subject": destSubject, "author": destAuthor, "keywords": destKeywords,
	"doccomm": destComment, "creatim": destDate, "revtim": destDate,
}

func (p *parser) word(w string, n int, hasParam, first bool) {
	starred := p.starred && first
	if first {
		p.starred = false
	}
	switch {
	case p.st.dest == destSkip:
		return
	case p.st.dest == destFontTable:
		switch w {
		case "f":
			p.fontNum = n
		case "fcharset":
			_, known := p.fonts[p.fontNum]
			if cp, ok := charsetCodePage[n]; ok && (known || len(p.fonts) < maxFonts) {
				p.fonts[p.fontNum] = cp
			}
		}
		return
	case p.st.dest == destDate:
		d := p.st.date
		switch w {
		case "yr":
			d.yr = n
		case "mo":
			d.mo = n
		case "dy":
			d.dy = n
		case "hr":
			d.hr = n
		case "min":
			d.min = n
		case "sec":
			d.sec = n
		}
		return
	}
	if first {
		// A destination: the control word that opens a group decides where its text goes.
		switch {
		case w == "fonttbl":
			p.st.dest = destFontTable
			return
		case skipped[w]:
			p.st.dest = destSkip
			return
		case w == "info" || w == "ud":
			p.st.dest = destInfo
			return
		case w == "upr":
			p.st.upr = true
			return
		case infoDest[w] != 0:
			p.flush()
			p.st.dest = infoDest[w]
			if p.st.dest == destDate {
				p.st.date = &dateParts{revised: w == "revtim"}
			} else {
				// A property written twice (LibreOffice repeats \author) keeps its last value.
				p.info[p.st.dest] = &strings.Builder{}
			}
			return
		case w == "fldinst":
			p.st.dest = destFldinst
			p.st.field = &field{}
			return
		case w == "fldrslt" || w == "field":
			return // the field's result is text like any other
		case starred:
			p.st.dest = destSkip
			return
		}
	}
	switch w {
	case "ansicpg":
		if hasParam && n > 0 {
			p.docCP = n
			p.st.cp = n
		}
	case "mac":
		p.docCP, p.st.cp = 10000, 10000
	case "pc":
		p.docCP, p.st.cp = 437, 437
	case "pca":
		p.docCP, p.st.cp = 850, 850
	case "f":
		p.flush()
		if cp, ok := p.fonts[n]; ok {
			p.st.cp = cp
		} else {
			p.st.cp = p.docCP
		}
	case "uc":
		if hasParam && n >= 0 && n < 16 {
			p.st.uc = n
		}
	case "u":
		p.unicode(n)
	case "par", "sect", "page":
		p.par()
	case "line":
		p.flush()
		if p.st.dest == destBody {
			p.body.Break()
		}
	case "tab", "cell", "nestcell":
		p.space()
	case "row", "nestrow":
		p.flush()
		if p.st.dest == destBody {
			p.body.Break()
		}
	case "pard":
		p.st.intbl, p.st.outline = false, false
	case "intbl":
		p.st.intbl = true
	case "outlinelevel":
		p.st.outline = hasParam && n >= 0 && n < 9
	case "nofpages":
		if hasParam && n > 0 {
			p.c.Pages = n
		}
	case "deflang":
		if tag, ok := lcid[n]; ok && p.c.Language == "" {
			p.c.Language = tag
		}
	case "emdash":
		p.text("\u2014")
	case "endash":
		p.text("\u2013")
	case "bullet":
		p.text("\u2022")
	case "lquote":
		p.text("\u2018")
	case "rquote":
		p.text("\u2019")
	case "ldblquote":
		p.text("\u201c")
	case "rdblquote":
		p.text("\u201d")
	case "emspace", "enspace", "qmspace":
		p.space()
	}
}

// unicode writes \uN and arranges for its fallback characters to be skipped.
func (p *parser) unicode(n int) {
	p.flush()
	if n < 0 {
		n += 65536 // RTF writes code points above 32767 as negative 16-bit numbers
	}
	r := rune(n)
	switch {
	case utf16.IsSurrogate(r) && r < 0xdc00:
		p.high = r
	case utf16.IsSurrogate(r) && p.high != 0:
		p.text(string(utf16.DecodeRune(p.high, r)))
		p.high = 0
	default:
		p.high = 0
		p.text(string(r))
	}
	p.skip = p.st.uc
}

// byteText takes one 8-bit character (raw or \'hh), to be decoded with its neighbours.
func (p *parser) byteText(b byte) {
	p.groupOpen = false // a control word after text opens no destination
	if p.skip > 0 {
		p.skip--
		return
	}
	if p.st.dest == destSkip || p.st.dest == destFontTable || p.st.dest == destDate {
		return
	}
	if len(p.pend) > 0 && p.pendCP != p.st.cp {
		p.flush()
	}
	p.pendCP = p.st.cp
	p.pend = append(p.pend, b)
	if len(p.pend) >= maxPend {
		s, n := decodeSome(p.pend, p.pendCP)
		p.pend = p.pend[:copy(p.pend, p.pend[n:])]
		p.write(s)
	}
}

// flush decodes the pending 8-bit text.
func (p *parser) flush() {
	if len(p.pend) == 0 {
		return
	}
	s := decode(p.pend, p.pendCP)
	p.pend = p.pend[:0]
	p.write(s)
}

func (p *parser) text(s string) {
	p.flush()
	p.write(s)
}

// write sends decoded text to the group's destination.
func (p *parser) write(s string) {
	switch p.st.dest {
	case destBody:
		p.body.WriteString(s)
		if p.st.outline && !p.headDone && p.heading.Len() < maxField {
			p.heading.WriteString(s)
		}
	case destFldinst:
		if p.st.field != nil && p.st.field.inst.Len() < maxField {
			p.st.field.inst.WriteString(s)
		}
	case destTitle, destSubject, destAuthor, destKeywords, destComment:
		if b := p.info[p.st.dest]; b != nil && b.Len() < maxField {
			b.WriteString(s)
		}
	}
}

func (p *parser) space() {
	p.flush()
	switch p.st.dest {
	case destBody:
		p.body.Space()
	case destFldinst, destTitle, destSubject, destAuthor, destKeywords, destComment:
		p.write(" ")
	}
}

// par ends a paragraph; inside a table it only ends a word, so that a row stays on one line.
func (p *parser) par() {
	p.flush()
	if p.st.dest != destBody {
		p.write(" ")
		return
	}
	if p.st.intbl {
		p.body.Space()
		return
	}
	p.body.Break()
	p.endParagraph()
}

func (p *parser) endParagraph() {
	if p.heading.Len() > 0 && strings.TrimSpace(p.heading.String()) != "" {
		p.headDone = true
	} else {
		p.heading.Reset()
	}
}

// link records the target of a HYPERLINK field instruction: HYPERLINK "url" [switches], where
// \l "bookmark" alone points inside the file.
func (p *parser) link(inst string) {
	f := strings.Fields(strings.TrimSpace(inst))
	if len(f) < 2 || !strings.EqualFold(f[0], "HYPERLINK") || len(p.links) >= document.MaxLinks {
		return
	}
	rest := strings.TrimSpace(inst[strings.Index(inst, f[0])+len(f[0]):])
	var target string
	for rest != "" {
		if strings.HasPrefix(rest, `\`) {
			// A switch: \l, \o, \t, \m, \n; \l's and \o's arguments are not the target.
			sw, after, _ := strings.Cut(rest, " ")
			rest = strings.TrimSpace(after)
			if sw == `\l` || sw == `\o` || sw == `\t` {
				_, rest = quoted(rest)
			}
			continue
		}
		target, _ = quoted(rest)
		break
	}
	// Field codes double backslashes (C:\\dir); a link as written keeps one.
	target = strings.TrimSpace(strings.ReplaceAll(target, `\\`, `\`))
	if target == "" || p.links[target] {
		return
	}
	p.links[target] = true
	p.c.Links = append(p.c.Links, target)
}

// quoted splits off the first argument of a field code: "a quoted one" or a bare word.
func quoted(s string) (arg, rest string) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, `"`) {
		if end := strings.IndexByte(s[1:], '"'); end >= 0 {
			return s[1 : 1+end], s[2+end:]
		}
		return s[1:], ""
	}
	arg, rest, _ = strings.Cut(s, " ")
	return arg, rest
}

func (p *parser) setDate(inner state) {
	d := inner.date
	if d.yr < 1900 || d.mo < 1 || d.mo > 12 || d.dy < 1 || d.dy > 31 {
		return // \yr0 is how LibreOffice writes "never"
	}
	t := time.Date(d.yr, time.Month(d.mo), d.dy, d.hr, d.min, d.sec, 0, time.UTC)
	if d.revised {
		p.c.Modified = t
	} else {
		p.c.Created = t
	}
}

func (p *parser) infoText(d dest) string {
	b := p.info[d]
	if b == nil {
		return ""
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

func splitKeywords(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
		if k = strings.TrimSpace(k); k != "" && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
