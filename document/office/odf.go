package office

import (
	"encoding/xml"
	"strconv"
	"strings"

	"github.com/crawlspace/crawlspace/document"
)

const (
	nsText         = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
	nsTable        = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
	nsDraw         = "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
	nsOffice       = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
	nsManifest     = "urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"
	nsPresentation = "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0"
)

func (p *pkg) readODF(kind Kind, c *document.Content, text *document.Text) error {
	if p.file("content.xml") == nil {
		return document.Errorf(document.ReasonCorrupt, "no content.xml in the package")
	}
	encrypted, err := p.odfEncrypted()
	if err != nil {
		return err
	}
	if encrypted {
		return document.Errorf(document.ReasonEncrypted, "content.xml is encrypted (META-INF/manifest.xml has its encryption-data)")
	}
	if err := p.odfMeta(c); err != nil {
		return err
	}
	if kind == ODS {
		c.Pages = 0 // a spreadsheet's printed pages depend on print ranges, not on the file
	}
	return finish(p.odfContent(kind, c, text))
}

func (p *pkg) odfEncrypted() (bool, error) {
	var cur string
	encrypted := false
	err := p.each("META-INF/manifest.xml", true, func(t xml.Token) error {
		e, ok := t.(xml.StartElement)
		if !ok || e.Name.Space != nsManifest {
			return nil
		}
		switch e.Name.Local {
		case "file-entry":
			cur = strings.TrimPrefix(attr(e, "full-path"), "/")
		case "encryption-data":
			if cur == "content.xml" {
				encrypted = true
			}
		}
		return nil
	})
	return encrypted, err
}

func (p *pkg) odfMeta(c *document.Content) error {
	var (
		cur           string
		b             strings.Builder
		creator, init string
	)
	err := p.each("meta.xml", true, func(t xml.Token) error {
		switch t := t.(type) {
		case xml.StartElement:
			cur = t.Name.Local
			b.Reset()
			if cur == "document-statistic" {
				if n, err := strconv.Atoi(attr(t, "page-count")); err == nil && n > 0 {
					c.Pages = n
				}
			}
		case xml.CharData:
			if cur != "" {
				appendCapped(&b, t, 64<<10)
			}
		case xml.EndElement:
			v := strings.TrimSpace(b.String())
			switch t.Name.Local {
			case "title":
				c.Title = v
			case "creator":
				creator = v
			case "initial-creator":
				init = v
			case "subject":
				c.Subject = v
			case "description":
				if c.Subject == "" {
					c.Subject = v
				}
			case "keyword":
				for _, k := range splitKeywords(v) {
					if err := p.keep("meta.xml", len(k)); err != nil {
						return err
					}
					c.Keywords = append(c.Keywords, k)
				}
			case "language":
				c.Language = v
			case "date":
				c.Modified = parseDate(v)
			case "creation-date":
				c.Created = parseDate(v)
			}
			cur = ""
			b.Reset()
		}
		return nil
	})
	// The creator is who saved last, the initial creator who wrote it:
	// both are authors, the writer first.
	for _, a := range []string{init, creator} {
		if a != "" && (len(c.Authors) == 0 || c.Authors[0] != a) {
			c.Authors = append(c.Authors, a)
		}
	}
	return err
}

// skipped are elements whose text is not the document's: comments,
// deleted text kept for change tracking, footnote numbers, alt texts.
func skipped(n xml.Name) bool {
	switch n.Space {
	case nsOffice:
		return n.Local == "annotation"
	case nsText:
		return n.Local == "tracked-changes" || n.Local == "note-citation"
	case "urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0":
		return n.Local == "title" || n.Local == "desc"
	}
	return false
}

// maxRepeat bounds how often a repeated cell or row with text is written:
// the body's own limit stops it too, this keeps a hostile count from
// costing time when the text is tiny.
const maxRepeat = 1 << 16

func (p *pkg) odfContent(kind Kind, c *document.Content, text *document.Text) error {
	var (
		links     = linkSet{p: p}
		skip      int
		paras     int // depth of text:p / text:h
		cells     int
		rows      int // depth of table rows: text inside one is buffered
		row       strings.Builder
		rowRepeat int
		cellStart []int // where each open cell's text begins in row
		cellRep   []int
		heading   strings.Builder
		inHeading bool
		tables    int
		pages     int
		sheets    int
	)
	rowMax := p.lim.MaxText
	write := func(b []byte) {
		if rows > 0 {
			appendCapped(&row, b, rowMax)
			return
		}
		text.WriteBytes(b)
	}
	space := func() {
		if rows > 0 {
			write([]byte{' '})
		} else {
			text.Space()
		}
	}
	brk := func() {
		if cells > 0 {
			space()
		} else {
			text.Break()
		}
	}
	repeat := func(e xml.StartElement, local string) int {
		n, err := strconv.Atoi(attr(e, local))
		if err != nil || n < 1 {
			return 1
		}
		return min(n, maxRepeat)
	}
	err := p.each("content.xml", false, func(t xml.Token) error {
		switch t := t.(type) {
		case xml.StartElement:
			if skip > 0 || skipped(t.Name) {
				skip++
				return nil
			}
			switch t.Name.Space {
			case nsText:
				switch t.Name.Local {
				case "p", "h":
					paras++
					if t.Name.Local == "h" && c.Heading == "" && !inHeading {
						inHeading = true
						heading.Reset()
					}
				case "s", "tab":
					space()
				case "line-break":
					brk()
				case "a":
					links.add(attr(t, "href"))
				}
			case nsDraw:
				switch t.Name.Local {
				case "a":
					links.add(attr(t, "href"))
				case "page":
					pages++
					c.Parts = append(c.Parts, document.Part{Offset: text.Len(), Page: pages})
				}
			case nsTable:
				switch t.Name.Local {
				case "table":
					if kind == ODS && tables == 0 {
						sheets++
						c.Parts = append(c.Parts, document.Part{Offset: text.Len(), Page: sheets, Title: attr(t, "name"), Level: 1})
						text.WriteString(attr(t, "name"))
						text.Break()
					}
					tables++
				case "table-row":
					if rows == 0 {
						row.Reset()
						rowRepeat = repeat(t, "number-rows-repeated")
					}
					rows++
				case "table-cell", "covered-table-cell":
					cells++
					cellStart = append(cellStart, row.Len())
					cellRep = append(cellRep, repeat(t, "number-columns-repeated"))
				}
			}
		case xml.CharData:
			if skip == 0 && paras > 0 {
				write(t)
				if inHeading {
					appendCapped(&heading, t, 4096)
				}
			}
		case xml.EndElement:
			if skip > 0 {
				skip--
				return nil
			}
			switch t.Name.Space {
			case nsText:
				switch t.Name.Local {
				case "p", "h":
					paras--
					brk()
					if t.Name.Local == "h" && inHeading {
						c.Heading = strings.Join(strings.Fields(heading.String()), " ")
						inHeading = false
					}
				}
			case nsDraw:
				if t.Name.Local == "page" {
					text.Break()
				}
			case nsTable:
				switch t.Name.Local {
				case "table":
					tables--
					if kind == ODS && tables == 0 {
						text.Break()
					}
				case "table-cell", "covered-table-cell":
					if len(cellStart) > 0 {
						i := len(cellStart) - 1
						// Empty repeated cells (a sheet's padding to its
						// last column) cost nothing.
						if cell := row.String()[cellStart[i]:]; strings.TrimSpace(cell) != "" {
							for n := 1; n < cellRep[i] && row.Len() < rowMax; n++ {
								row.WriteString(" ")
								row.WriteString(cell)
							}
						}
						cellStart, cellRep = cellStart[:i], cellRep[:i]
					}
					cells--
					space()
				case "table-row":
					rows--
					if rows == 0 {
						if s := row.String(); strings.TrimSpace(s) != "" {
							for n := 0; n < rowRepeat && !text.Full(); n++ {
								text.WriteString(s)
								text.Break()
							}
						}
						row.Reset()
					} else {
						space()
					}
				}
			}
			return stop(text)
		}
		return nil
	})
	if kind == ODP {
		c.Pages = pages
	}
	c.Links = links.list
	if links.err != nil {
		return links.err
	}
	return err
}
