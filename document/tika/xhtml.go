package tika

import (
	"context"
	"encoding/xml"
	"io"
	"strings"

	"github.com/crawlspace/crawlspace/document"
)

// xhtml turns the XHTML Tika writes for one file into body text, links, the first heading and a
// count of the slides it marks.
type xhtml struct {
	body    *document.Text
	links   []string
	heading string
	pages   int
	err     error
}

// checkEvery is how many XML tokens pass between looks at ctx.
const checkEvery = 4096

func (x *xhtml) read(ctx context.Context, content string) {
	if content == "" {
		return
	}
	d := xml.NewDecoder(strings.NewReader(content))
	// Tika's XHTML is well-formed, but text from a broken file may not be: read on, as a browser.
	d.Strict = false
	d.AutoClose = xml.HTMLAutoClose
	d.Entity = xml.HTMLEntity
	var (
		skip       int // depth inside <head>, <script>, <style>
		cell       int // depth inside <td> or <th>, where paragraphs only separate words
		inHeading  bool
		heading    strings.Builder
		n          int
		headingSet = x.heading != ""
	)
	for !x.body.Full() {
		if n++; n%checkEvery == 0 && ctx.Err() != nil {
			x.err = &document.Error{Reason: document.ReasonTimeout, Err: ctx.Err()}
			return
		}
		tok, err := d.Token()
		if err != nil {
			if err != io.EOF {
				// The text so far stands; what follows a syntax error is lost.
				x.body.Break()
			}
			return
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := t.Name.Local
			// A spreadsheet's headers and footers come as <div class="outside"> in Excel's
			// codes (&C&"Font"&12Page &P): print layout, not content.
			if skip > 0 || name == "head" || name == "script" || name == "style" || name == "div" && attr(t, "class") == "outside" {
				skip++
				continue
			}
			switch name {
			case "a":
				if href := strings.TrimSpace(attr(t, "href")); href != "" && !strings.HasPrefix(href, "#") {
					// "#_Toc..." bookmarks point inside this file: nothing to crawl.
					x.links = append(x.links, href)
				}
			case "td", "th":
				cell++
				x.body.Space()
			case "br":
				x.body.Break()
			case "h1", "h2", "h3", "h4", "h5", "h6":
				x.body.Break()
				inHeading = !headingSet
			case "div":
				// A PDF's pages come as <div class="page"> too, but Tika counts those itself, and a
				// spreadsheet's sheets do as well, which are no pages.
				if attr(t, "class") == "slide" {
					x.pages++
				}
				x.brk(cell)
			default:
				if block[name] {
					x.brk(cell)
				}
			}
		case xml.EndElement:
			name := t.Name.Local
			if skip > 0 {
				skip--
				continue
			}
			switch {
			case name == "td" || name == "th":
				cell = max(cell-1, 0)
				x.body.Space()
			case inHeading && len(name) == 2 && name[0] == 'h':
				inHeading = false
				if h := strings.Join(strings.Fields(heading.String()), " "); h != "" {
					x.heading, headingSet = h, true
				}
				heading.Reset()
				x.body.Break()
			case block[name] || name == "div" || len(name) == 2 && name[0] == 'h' && name[1] >= '1' && name[1] <= '6':
				x.brk(cell)
			}
		case xml.CharData:
			if skip > 0 {
				continue
			}
			x.body.WriteString(string(t))
			if inHeading && heading.Len() < 1024 {
				heading.Write(t)
			}
		}
	}
}

// brk ends a block, which inside a table cell only ends a word: a row stays on one line.
func (x *xhtml) brk(cell int) {
	if cell > 0 {
		x.body.Space()
		return
	}
	x.body.Break()
}

// block elements end a line of the body.
var block = map[string]bool{
	"p": true, "li": true, "tr": true, "table": true, "ul": true, "ol": true, "dl": true,
	"dt": true, "dd": true, "blockquote": true, "pre": true, "body": true, "caption": true,
}

func attr(t xml.StartElement, name string) string {
	for _, a := range t.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}
