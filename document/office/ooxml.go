package office

import (
	"encoding/xml"
	"errors"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crawlspace/crawlspace/document"
)

type rel struct {
	target   string // a part name, or the URL of an external target
	typ      string // the type's last segment: typeName
	external bool
}

// rels are a part's relationships by id; none when it has no rels part.
func (p *pkg) rels(part string) (map[string]rel, error) {
	part = strings.TrimPrefix(part, "/")
	name := path.Join(partDir(part), "_rels", path.Base(part)+".rels")
	if part == "" {
		name = "_rels/.rels"
	}
	m := map[string]rel{}
	err := p.each(name, true, func(t xml.Token) error {
		e, ok := t.(xml.StartElement)
		if !ok || e.Name.Local != "Relationship" {
			return nil
		}
		r := rel{target: attr(e, "Target"), typ: typeName(attr(e, "Type")), external: strings.EqualFold(attr(e, "TargetMode"), "External")}
		id := attr(e, "Id")
		if err := p.keep(name, relSize(id, r)); err != nil {
			return err
		}
		if !r.external {
			if strings.HasPrefix(r.target, "/") {
				r.target = strings.TrimPrefix(r.target, "/")
			} else {
				r.target = path.Join(partDir(part), r.target)
			}
		}
		m[id] = r
		return nil
	})
	return m, err
}

// typeName is the last segment of a relationship type with its slash
// ("/styles"), all byType looks at, copied: the namespace before it is
// some 60 bytes a relationship need not hold.
func typeName(t string) string {
	i := strings.LastIndexByte(t, '/')
	if i < 0 {
		return ""
	}
	return strings.Clone(t[i:])
}

func relSize(id string, r rel) int { return len(id) + len(r.target) + len(r.typ) }

// forgetRels gives back what rels kept, once the part they belong to is
// read.
func (p *pkg) forgetRels(m map[string]rel) {
	for id, r := range m {
		p.forget(relSize(id, r))
	}
}

// byType is the target of the first relationship whose type ends in
// suffix, "" when there is none.
func byType(rels map[string]rel, suffix string) string {
	best := ""
	for _, r := range rels {
		// Map order is random: the smallest name keeps the choice stable.
		if !r.external && strings.HasSuffix(r.typ, suffix) && (best == "" || r.target < best) {
			best = r.target
		}
	}
	return best
}

// mainPart is the package's main part from its root relationships, or the
// usual name of it.
func (p *pkg) mainPart(usual string) (string, error) {
	root, err := p.rels("")
	if err != nil {
		return "", err
	}
	if t := byType(root, "/officeDocument"); t != "" && p.file(t) != nil {
		return t, nil
	}
	if p.file(usual) == nil {
		return "", document.Errorf(document.ReasonCorrupt, "no %s in the package", usual)
	}
	return usual, nil
}

// topLevelText collects the text of the children of a part's root element
// that have one of the local names asked for, the first of each name: the
// shape of core.xml and app.xml. Each text is kept up to 64 KB.
func (p *pkg) topLevelText(name string, names ...string) (map[string]string, error) {
	m := map[string]string{}
	depth := 0
	var cur string
	var b strings.Builder
	err := p.each(name, true, func(t xml.Token) error {
		switch t := t.(type) {
		case xml.StartElement:
			depth++
			if depth == 2 {
				cur = ""
				if _, seen := m[t.Name.Local]; !seen && slices.Contains(names, t.Name.Local) {
					cur = t.Name.Local
				}
				b.Reset()
			}
		case xml.CharData:
			if depth >= 2 && cur != "" {
				appendCapped(&b, t, 64<<10)
			}
		case xml.EndElement:
			if depth == 2 && cur != "" {
				m[cur] = strings.TrimSpace(b.String())
			}
			depth--
		}
		return nil
	})
	return m, err
}

// coreProperties fills the metadata of docProps/core.xml and the page or
// slide count of docProps/app.xml (countField names it).
func (p *pkg) coreProperties(c *document.Content, countField string) error {
	core, err := p.topLevelText("docProps/core.xml", "title", "creator", "subject", "description", "keywords", "language", "modified", "created")
	if err != nil {
		return err
	}
	c.Title = core["title"]
	if a := core["creator"]; a != "" {
		c.Authors = []string{a}
	}
	c.Subject = core["subject"]
	if c.Subject == "" {
		c.Subject = core["description"]
	}
	c.Keywords = splitKeywords(core["keywords"])
	c.Language = core["language"]
	c.Modified = parseDate(core["modified"])
	c.Created = parseDate(core["created"])
	if countField == "" {
		return nil
	}
	app, err := p.topLevelText("docProps/app.xml", countField)
	if err != nil {
		return err
	}
	if n, err := strconv.Atoi(app[countField]); err == nil && n > 0 {
		c.Pages = n
	}
	return nil
}

func splitKeywords(s string) []string {
	var out []string
	for _, k := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

func parseDate(s string) time.Time {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// stop is errStop once the body is full.
func stop(text *document.Text) error {
	if text.Full() {
		return errStop
	}
	return nil
}

// finish turns the early end of a full body into success.
func finish(err error) error {
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

func (p *pkg) readDOCX(c *document.Content, text *document.Text) error {
	main, err := p.mainPart("word/document.xml")
	if err != nil {
		return err
	}
	if err := p.coreProperties(c, "Pages"); err != nil {
		return err
	}
	rels, err := p.rels(main)
	if err != nil {
		return err
	}
	headings, err := p.headingStyles(byType(rels, "/styles"))
	if err != nil {
		return err
	}
	links := linkSet{p: p}
	// Footnotes and endnotes follow the body: they are the author's text.
	// Headers and footers are not: they repeat on every page and say little.
	parts := []string{main}
	for _, t := range []string{"/footnotes", "/endnotes"} {
		if n := byType(rels, t); n != "" {
			parts = append(parts, n)
		}
	}
	for i, part := range parts {
		r := rels
		if i > 0 {
			if r, err = p.rels(part); err != nil {
				return err
			}
		}
		err := finish(p.docxPart(part, headings, r, c, text, &links))
		if i > 0 {
			p.forgetRels(r)
		}
		if err != nil {
			return err
		}
		if links.err != nil {
			return links.err
		}
		if text.Full() {
			break
		}
	}
	c.Links = links.list
	return nil
}

// headingStyles are the ids of the paragraph styles named "heading 1" or
// "Title": ids are localised ("berschrift1"), names are not.
func (p *pkg) headingStyles(styles string) (map[string]bool, error) {
	m := map[string]bool{"Heading1": true, "Title": true}
	if styles == "" {
		return m, nil
	}
	var id string
	err := p.each(styles, true, func(t xml.Token) error {
		e, ok := t.(xml.StartElement)
		if !ok {
			return nil
		}
		switch e.Name.Local {
		case "style":
			id = attr(e, "styleId")
		case "name":
			if id != "" && !m[id] {
				switch strings.ToLower(attr(e, "val")) {
				case "heading 1", "title":
					m[id] = true
					return p.keep(styles, len(id))
				}
			}
		}
		return nil
	})
	return m, err
}

func (p *pkg) docxPart(part string, headings map[string]bool, rels map[string]rel, c *document.Content, text *document.Text, links *linkSet) error {
	var (
		inText    bool
		inInstr   bool
		instr     strings.Builder
		cells     int // depth of table cells
		isHeading bool
		heading   strings.Builder
	)
	return p.each(part, false, func(t xml.Token) error {
		switch t := t.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "p":
				isHeading = false
				heading.Reset()
			case "pStyle":
				isHeading = c.Heading == "" && headings[attr(t, "val")]
			case "t":
				inText = true
			case "instrText":
				inInstr = true
			case "fldSimple":
				fieldLink(attr(t, "instr"), links)
			case "tab":
				text.Space()
			case "br", "cr":
				if cells > 0 {
					text.Space()
				} else {
					text.Break()
				}
			case "tc":
				cells++
			case "hyperlink", "hlinkClick":
				if r, ok := rels[relID(t, "id")]; ok && r.external {
					links.add(r.target)
				}
			}
		case xml.CharData:
			if inInstr {
				appendCapped(&instr, t, 4096)
			}
			if inText {
				text.WriteBytes(t)
				if isHeading {
					appendCapped(&heading, t, 4096)
				}
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "t":
				inText = false
			case "instrText":
				inInstr = false
			case "fldChar":
				// A field's code may span runs: it is complete at its
				// separator or end.
				fieldLink(instr.String(), links)
				instr.Reset()
			case "p":
				if cells > 0 {
					text.Space()
				} else {
					text.Break()
				}
				if isHeading {
					c.Heading = strings.Join(strings.Fields(heading.String()), " ")
					isHeading = false
				}
			case "tc":
				cells--
				text.Space()
			case "tr":
				text.Break()
			}
			return stop(text)
		}
		return nil
	})
}

// fieldLink adds the target of a HYPERLINK field code (HYPERLINK
// "https://..." with switches); a field with only a \l bookmark links
// inside the document.
func fieldLink(code string, links *linkSet) {
	f := strings.Fields(code)
	if len(f) < 2 || !strings.EqualFold(f[0], "HYPERLINK") {
		return
	}
	rest := strings.TrimSpace(code[strings.Index(code, f[0])+len(f[0]):])
	if strings.HasPrefix(rest, "\\") {
		return
	}
	if strings.HasPrefix(rest, `"`) {
		if end := strings.Index(rest[1:], `"`); end >= 0 {
			links.add(rest[1 : 1+end])
		}
		return
	}
	links.add(strings.Fields(rest)[0])
}

func (p *pkg) readXLSX(c *document.Content, text *document.Text) error {
	main, err := p.mainPart("xl/workbook.xml")
	if err != nil {
		return err
	}
	if err := p.coreProperties(c, ""); err != nil {
		return err
	}
	rels, err := p.rels(main)
	if err != nil {
		return err
	}
	type sheet struct{ name, id string }
	var sheets []sheet
	err = p.each(main, false, func(t xml.Token) error {
		if e, ok := t.(xml.StartElement); ok && e.Name.Local == "sheet" {
			s := sheet{attr(e, "name"), relID(e, "id")}
			sheets = append(sheets, s)
			return p.keep(main, len(s.name)+len(s.id))
		}
		return nil
	})
	if err != nil {
		return err
	}
	shared, err := p.sharedStrings(byType(rels, "/sharedStrings"), 4*p.lim.MaxText)
	if err != nil {
		return err
	}
	links := linkSet{p: p}
	for i, s := range sheets {
		r, ok := rels[s.id]
		if !ok || r.external || p.file(r.target) == nil {
			continue // a chart sheet or a dangling reference: no cells
		}
		c.Parts = append(c.Parts, document.Part{Offset: text.Len(), Page: i + 1, Title: s.name, Level: 1})
		text.WriteString(s.name)
		text.Break()
		if err := finish(p.xlsxSheet(r.target, shared, text, &links)); err != nil {
			return err
		}
		if links.err != nil {
			return links.err
		}
		text.Break()
		if text.Full() {
			break
		}
	}
	c.Links = links.list
	return nil
}

// stringCost is what a string of the table costs beside its bytes.
const stringCost = 16

// sharedStrings is the workbook's string table as far as max bytes of it
// go, each string counted with stringCost; the part is read no further.
// Excel numbers strings in order of first use, row by row, so a body cut
// at MaxText seldom needs those past it, and a cell whose string was not
// kept reads as empty. Millions of strings would otherwise all sit in
// memory.
func (p *pkg) sharedStrings(part string, max int) ([]string, error) {
	if part == "" {
		return nil, nil
	}
	var (
		out      []string
		kept     int
		b        strings.Builder
		inT      bool
		phonetic int // depth inside rPh: reading aids, not the cell's text
	)
	err := p.each(part, true, func(t xml.Token) error {
		switch t := t.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "si":
				b.Reset()
			case "t":
				inT = phonetic == 0
			case "rPh":
				phonetic++
			}
		case xml.CharData:
			// One byte past what fits tells that the string does not.
			if room := max - kept + 1 - b.Len(); inT && room > 0 {
				b.Write(t[:min(len(t), room)])
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "si":
				if kept += b.Len() + stringCost; kept > max {
					return errStop
				}
				out = append(out, b.String())
			case "t":
				inT = false
			case "rPh":
				phonetic--
			}
		}
		return nil
	})
	return out, finish(err)
}

func (p *pkg) xlsxSheet(part string, shared []string, text *document.Text, links *linkSet) error {
	rels, err := p.rels(part)
	if err != nil {
		return err
	}
	defer p.forgetRels(rels)
	var (
		typ        string
		val        strings.Builder
		inV, inT   bool
		inlineText strings.Builder
		phonetic   int
	)
	return p.each(part, false, func(t xml.Token) error {
		switch t := t.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "c":
				typ = attr(t, "t")
				val.Reset()
				inlineText.Reset()
			case "v":
				inV = true
			case "t":
				inT = phonetic == 0
			case "rPh":
				phonetic++
			case "hyperlink":
				if r, ok := rels[relID(t, "id")]; ok && r.external {
					links.add(r.target)
				}
			}
		case xml.CharData:
			if inV {
				appendCapped(&val, t, 1<<16)
			} else if inT {
				appendCapped(&inlineText, t, 1<<20)
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "v":
				inV = false
			case "t":
				inT = false
			case "rPh":
				phonetic--
			case "c":
				text.WriteString(cellValue(typ, strings.TrimSpace(val.String()), inlineText.String(), shared))
				text.Space()
			case "row":
				text.Break()
			}
			return stop(text)
		}
		return nil
	})
}

// cellValue is a cell's text: the shared or inline string it points to,
// else its value as written (numbers unformatted, as the file stores them).
func cellValue(typ, v, inline string, shared []string) string {
	switch typ {
	case "s":
		if i, err := strconv.Atoi(v); err == nil && i >= 0 && i < len(shared) {
			return shared[i]
		}
		return ""
	case "inlineStr":
		return inline
	case "b":
		switch v {
		case "1":
			return "TRUE"
		case "0":
			return "FALSE"
		}
	}
	return v
}

func (p *pkg) readPPTX(c *document.Content, text *document.Text) error {
	main, err := p.mainPart("ppt/presentation.xml")
	if err != nil {
		return err
	}
	if err := p.coreProperties(c, "Slides"); err != nil {
		return err
	}
	rels, err := p.rels(main)
	if err != nil {
		return err
	}
	var slides []string
	err = p.each(main, false, func(t xml.Token) error {
		if e, ok := t.(xml.StartElement); ok && e.Name.Local == "sldId" {
			if r, ok := rels[relID(e, "id")]; ok && !r.external {
				slides = append(slides, r.target)
				return p.keep(main, len(r.target))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if c.Pages == 0 {
		c.Pages = len(slides)
	}
	links := linkSet{p: p}
	for i, s := range slides {
		if p.file(s) == nil {
			continue
		}
		c.Parts = append(c.Parts, document.Part{Offset: text.Len(), Page: i + 1})
		if err := p.slideText(s, text, &links); err != nil {
			return err
		}
		text.Break()
		if text.Full() {
			break
		}
	}
	c.Links = links.list
	return nil
}

// slideText writes the text of a slide, then of its notes.
func (p *pkg) slideText(slide string, text *document.Text, links *linkSet) error {
	notes, err := p.drawingPart(slide, text, links)
	if err != nil || notes == "" || p.file(notes) == nil {
		return err
	}
	_, err = p.drawingPart(notes, text, links)
	return err
}

// drawingPart writes the text of a slide or notes slide with its
// relationships, and is the notes slide they name.
func (p *pkg) drawingPart(part string, text *document.Text, links *linkSet) (string, error) {
	rels, err := p.rels(part)
	if err != nil {
		return "", err
	}
	defer p.forgetRels(rels)
	if err := finish(p.drawingText(part, rels, text, links)); err != nil {
		return "", err
	}
	return byType(rels, "/notesSlide"), links.err
}

// drawingText writes the DrawingML text of a slide or notes slide:
// paragraphs as blocks, table rows as blocks of cells. Slide-number fields
// are left out: a notes page shows its slide's number.
func (p *pkg) drawingText(part string, rels map[string]rel, text *document.Text, links *linkSet) error {
	var (
		inT   bool
		cells int
		skip  int
	)
	return p.each(part, false, func(t xml.Token) error {
		switch t := t.(type) {
		case xml.StartElement:
			if skip > 0 {
				skip++
				return nil
			}
			switch t.Name.Local {
			case "fld":
				if strings.EqualFold(attr(t, "type"), "slidenum") {
					skip = 1
				}
			case "t":
				inT = true
			case "br":
				text.Space()
			case "tc":
				cells++
			case "hlinkClick":
				if r, ok := rels[relID(t, "id")]; ok && r.external {
					links.add(r.target)
				}
			}
		case xml.CharData:
			if inT && skip == 0 {
				text.WriteBytes(t)
			}
		case xml.EndElement:
			if skip > 0 {
				skip--
				return nil
			}
			switch t.Name.Local {
			case "t":
				inT = false
			case "p":
				if cells > 0 {
					text.Space()
				} else {
					text.Break()
				}
			case "tc":
				cells--
				text.Space()
			case "tr":
				text.Break()
			}
			return stop(text)
		}
		return nil
	})
}
