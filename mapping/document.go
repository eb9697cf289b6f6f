package mapping

import (
	"errors"

	"github.com/crawlspace/crawlspace/docfields"

	"github.com/crawlspace/crawlspace/document"
)

// FromDocument maps what a document file gave (PDF, Office, OpenDocument,
// RTF, text) into a search document the way Extract maps a page: the same
// URL fields, crawl rule add_meta, X-Robots-Tag directives, link
// resolution and cap, and content hash. mediaType is the type the file was
// read as. The title is the file's own, then its first heading, then the
// URL made readable; doc_modified is the file's own date, then
// Last-Modified; doc_language the file's, then Content-Language, then
// the language detected in its text.
func (x *Extractor) FromDocument(page Page, mediaType string, c *document.Content) (*Result, error) {
	if page.URL == nil {
		return nil, errors.New("mapping: page has no URL")
	}
	p := parserPool.Get().(*parser)
	defer func() {
		p.x = nil
		parserPool.Put(p)
	}()
	p.reset(x)

	res := &Result{BodyTruncated: c.Truncated, Charset: c.Charset, CharsetWarning: c.CharsetWarning}
	d := &res.Doc
	x.fetchFields(d, page, mediaType)
	d.Pages = c.Pages

	var t textBuf
	d.Title = t.normalize([]byte(c.Title))
	if d.Title == "" {
		d.Title = t.normalize([]byte(c.Heading))
	}
	if d.Title == "" {
		d.Title = fallbackTitle(page.URL)
	}
	d.Title = capTitle(d.Title)
	d.Description = t.normalize([]byte(c.Subject))
	for _, k := range c.Keywords {
		d.Keywords = appendUnique(d.Keywords, t.normalize([]byte(k)))
	}
	for _, a := range c.Authors {
		d.Author = appendUnique(d.Author, t.normalize([]byte(a)))
	}
	d.Language = normLanguage(c.Language)
	if d.Language == "" {
		d.Language = normLanguage(page.Header.Get("Content-Language"))
	}
	d.Body = c.Body
	if x.maxBody > 0 && len(d.Body) > x.maxBody {
		d.Body, res.BodyTruncated = cutUTF8(d.Body, x.maxBody), true
	}
	for _, p := range c.Parts {
		if p.Offset < len(d.Body) {
			d.Sections = append(d.Sections, docfields.Section{Offset: p.Offset, Level: p.Level, Title: t.normalize([]byte(p.Title)), Page: p.Page})
		}
	}
	x.detectLanguage(d)
	d.Modified = c.Modified.UTC()
	if c.Modified.IsZero() {
		if v := page.Header.Get("Last-Modified"); v != "" {
			if tm, ok := parseHeaderDate(v); ok {
				d.Modified = tm
			}
		}
	}

	for _, v := range page.Header.Values("X-Robots-Tag") {
		p.robots.parseXRobotsTag(v, x.agents)
	}
	x.addMeta(p, page.AddMeta)
	x.copyExtrasAndRobots(p, res)

	for _, l := range c.Links {
		start := len(p.arena)
		p.arena = appendURLText(p.arena, []byte(l))
		p.links = append(p.links, rawLink{start: start, end: len(p.arena), tag: tagA})
	}
	lb := page.base()
	var found int
	res.Links, res.LinksCapped, found = p.resolveLinks(&lb, d.URL, x.maxLinks)
	if res.LinksCapped {
		res.LinksFound = found
	}
	if h := headerCanonical(page.Header); h != "" {
		res.Canonical, _ = lb.Resolve(h)
	}
	d.ContentHash = ContentHash(d)
	return res, nil
}
