package mapping

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/htmllex"
)

// Structured data: schema.org items from JSON-LD (<script
// type="application/ld+json">), microdata (itemscope, itemprop) and RDFa
// lite (typeof, property), read into one shape, the JSON-LD one: an item
// is a map of property to value, "@type" its type; a value is a string,
// a number, a boolean, an item, or a list of them.
//
// JSON-LD is captured while the page is parsed, at the cost of a copy of
// its scripts; microdata and RDFa need the page's tree, so they are read
// only when the page holds "itemscope" or "typeof" at all.

const (
	// maxJSONLD bounds the JSON-LD bytes kept per page: scripts past it
	// are ignored, so a page cannot make the parser hold a copy of itself
	// many times over.
	maxJSONLD = 512 << 10
	// maxItems bounds the items read from one page.
	maxItems = 256
)

// structuredMapping is a compiled structured_data_mappings entry.
type structuredMapping struct {
	typ   string   // "" for top-level items of any type
	path  []string // properties
	extra int
	ref   string
}

func (x *Extractor) compileStructured(cfg *config.Config, src *config.Source) {
	x.structured = !src.Extraction.IgnoreStructuredData
	base := config.SourcePath(src.Index) + ".extraction.structured_data_mappings"
	for j, m := range src.Extraction.StructuredDataMappings {
		prop, field, ok := config.SplitMetaMapping(m)
		fi, declared := x.extraIndex[field]
		if !ok || !declared {
			continue
		}
		sm := structuredMapping{extra: fi, ref: cfg.Ref(base + "[" + strconv.Itoa(j) + "]")}
		parts := strings.Split(prop, ".")
		if parts[0] != "" && 'A' <= parts[0][0] && parts[0][0] <= 'Z' {
			sm.typ, parts = parts[0], parts[1:]
		}
		sm.path = parts
		x.structuredMaps = append(x.structuredMaps, sm)
	}
}

// jsonLDItems decodes the JSON-LD scripts of a page into items: a script
// may hold an item, a list of items, or an object whose "@graph" lists
// them. A script that is not JSON is skipped, as browsers and search
// engines skip it.
func jsonLDItems(scripts [][]byte, items []map[string]any) []map[string]any {
	for _, s := range scripts {
		var v any
		if err := json.Unmarshal(bytes.TrimSpace(s), &v); err != nil {
			continue
		}
		items = appendItems(items, v)
	}
	return items
}

func appendItems(items []map[string]any, v any) []map[string]any {
	switch t := v.(type) {
	case []any:
		for _, e := range t {
			items = appendItems(items, e)
		}
	case map[string]any:
		if g, ok := t["@graph"]; ok {
			return appendItems(items, g)
		}
		if len(items) < maxItems {
			items = append(items, t)
		}
	}
	return items
}

// domItems reads the microdata and RDFa lite items of a page's tree.
func domItems(root *html.Node, items []map[string]any) []map[string]any {
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			if scope, ok := itemScope(n); ok && !hasAttr(n, "itemprop") && !hasAttr(n, "property") {
				if len(items) < maxItems {
					items = append(items, readItem(n, scope))
				}
				return
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return items
}

// itemScope tells whether n starts an item, and its type: microdata's
// itemscope with its itemtype, or RDFa's typeof.
func itemScope(n *html.Node) (typ string, ok bool) {
	if hasAttr(n, "itemscope") {
		return attrOf(n, "itemtype"), true
	}
	if t, has := attrOK(n, "typeof"); has {
		return t, true
	}
	return "", false
}

// readItem collects the properties under the item n: elements with
// itemprop or property, down to (and including) a nested item, which is
// the value of its own property.
func readItem(n *html.Node, typ string) map[string]any {
	it := map[string]any{}
	if typ != "" {
		it["@type"] = strings.Fields(typ)[0]
	}
	var walk func(c *html.Node)
	walk = func(c *html.Node) {
		for ; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			names := attrOf(c, "itemprop")
			if names == "" {
				names = attrOf(c, "property")
			}
			if scope, ok := itemScope(c); ok {
				if names != "" {
					sub := readItem(c, scope)
					for _, name := range strings.Fields(names) {
						addProp(it, name, sub)
					}
				}
				continue // a nested item's properties are its own
			}
			if names != "" {
				v := propValue(c)
				for _, name := range strings.Fields(names) {
					addProp(it, name, v)
				}
			}
			walk(c.FirstChild)
		}
	}
	walk(n.FirstChild)
	return it
}

func addProp(it map[string]any, name string, v any) {
	// "schema:name" and "http://schema.org/name" name the same property.
	name = localName(name)
	switch old := it[name].(type) {
	case nil:
		it[name] = v
	case []any:
		it[name] = append(old, v)
	default:
		it[name] = []any{old, v}
	}
}

// propValue is a microdata property's value as the HTML standard reads
// it, RDFa lite's content attribute first.
func propValue(n *html.Node) string {
	if v, ok := attrOK(n, "content"); ok {
		return v
	}
	switch n.DataAtom {
	case atom.Audio, atom.Embed, atom.Iframe, atom.Img, atom.Source, atom.Track, atom.Video:
		return attrOf(n, "src")
	case atom.A, atom.Area, atom.Link:
		return attrOf(n, "href")
	case atom.Object:
		return attrOf(n, "data")
	case atom.Data, atom.Meter:
		return attrOf(n, "value")
	case atom.Time:
		if v, ok := attrOK(n, "datetime"); ok {
			return v
		}
	}
	return nodeText(n)
}

func hasAttr(n *html.Node, key string) bool {
	_, ok := attrOK(n, key)
	return ok
}

func attrOf(n *html.Node, key string) string {
	v, _ := attrOK(n, key)
	return v
}

func attrOK(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// localName is a type or property name without its vocabulary:
// "https://schema.org/Article", "schema:Article" and "Article" are all
// "Article".
func localName(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexAny(s, "/#:"); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// types lists an item's types, without vocabulary.
func types(it map[string]any) []string {
	var out []string
	for _, v := range flat(it["@type"]) {
		if s, ok := v.(string); ok {
			out = append(out, localName(s))
		}
	}
	return out
}

func isType(it map[string]any, typ string) bool {
	for _, t := range types(it) {
		if t == typ {
			return true
		}
	}
	return false
}

func flat(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

// values follows path from v, fanning out over lists, and gives the
// scalars found at its end. An item found at the end gives its name (or
// @value, or @id, or url), so "author" reads as "author.name".
func values(v any, path []string, out []string) []string {
	for _, e := range flat(v) {
		if len(path) > 0 {
			if m, ok := e.(map[string]any); ok {
				out = values(m[path[0]], path[1:], out)
			}
			continue
		}
		switch t := e.(type) {
		case string:
			out = append(out, t)
		case float64:
			out = append(out, strconv.FormatFloat(t, 'g', -1, 64))
		case bool:
			out = append(out, strconv.FormatBool(t))
		case map[string]any:
			for _, k := range []string{"name", "@value", "@id", "url"} {
				if _, ok := t[k]; ok {
					out = values(t[k], nil, out)
					break
				}
			}
		}
	}
	return out
}

// eachItem calls fn on every item of items and the items nested in them,
// depth first, until fn returns false.
func eachItem(items []map[string]any, fn func(map[string]any) bool) {
	var walk func(v any, depth int) bool
	walk = func(v any, depth int) bool {
		if depth > 32 {
			return true
		}
		for _, e := range flat(v) {
			m, ok := e.(map[string]any)
			if !ok {
				continue
			}
			if _, typed := m["@type"]; typed && !fn(m) {
				return false
			}
			// In key order: the values found, and so the content hash,
			// must not depend on map iteration.
			for _, k := range slices.Sorted(maps.Keys(m)) {
				if k != "@type" && !walk(m[k], depth+1) {
					return false
				}
			}
		}
		return true
	}
	for _, it := range items {
		if !walk(it, 0) {
			return
		}
	}
}

// furniture are the types a page carries about its site rather than its
// content: their descriptions and authors are not the page's.
var furniture = map[string]bool{
	"WebSite": true, "Organization": true, "Corporation": true, "NewsMediaOrganization": true,
	"Person": true, "BreadcrumbList": true, "ListItem": true, "ImageObject": true,
	"SiteNavigationElement": true, "WPHeader": true, "WPFooter": true, "WPSideBar": true,
	"SearchAction": true, "EntryPoint": true, "LocalBusiness": true, "Brand": true, "Logo": true,
}

// mainItems are the top-level items that describe the page itself: every
// one whose types are not all furniture.
func mainItems(items []map[string]any) []map[string]any {
	var out []map[string]any
	for _, it := range items {
		ts := types(it)
		main := len(ts) == 0
		for _, t := range ts {
			main = main || !furniture[t]
		}
		if main {
			out = append(out, it)
		}
	}
	return out
}

// firstValue is the first value of prop among items.
func firstValue(items []map[string]any, props ...string) (string, string) {
	for _, prop := range props {
		for _, it := range items {
			for _, v := range values(it[prop], nil, nil) {
				if strings.TrimSpace(v) != "" {
					return v, prop
				}
			}
		}
	}
	return "", ""
}

// isJSONLDType reports whether a script's type attribute says JSON-LD.
func isJSONLDType(v []byte) bool {
	if i := bytes.IndexByte(v, ';'); i >= 0 {
		v = v[:i]
	}
	return htmllex.EqualFoldASCII(bytes.TrimSpace(v), "application/ld+json")
}

// ldScripts are the JSON-LD scripts the parse captured; they share the
// parser's buffer and are read before it goes back to the pool.
func (p *parser) ldScripts() [][]byte {
	if len(p.ldEnds) == 0 {
		return nil
	}
	out := make([][]byte, len(p.ldEnds))
	start := 0
	for i, end := range p.ldEnds {
		out[i], start = p.ld[start:end], end
	}
	return out
}

// applyStructured fills the mapped extra fields from items, then, where
// the page gave nothing better, doc_modified (dateModified, else
// datePublished), doc_author (author) and doc_description (description)
// from the items that describe the page itself (mainItems).
func (x *Extractor) applyStructured(p *parser, items []map[string]any, res *Result) {
	if len(items) == 0 {
		return
	}
	for _, m := range x.structuredMaps {
		var raw []string
		if m.typ == "" {
			for _, it := range items {
				raw = values(it, m.path, raw)
			}
		} else {
			eachItem(items, func(it map[string]any) bool {
				if isType(it, m.typ) {
					raw = values(it, m.path, raw)
				}
				return true
			})
		}
		x.fill(p, m.extra, m.ref, raw, res)
	}

	main := mainItems(items)
	if len(main) == 0 {
		return
	}
	const defaults = "structured data (docs/fields.md#structured-data)"
	if v, prop := firstValue(main, "dateModified", "datePublished"); v != "" {
		if t, ok := parseDate(v); ok {
			p.modified[modifiedSlots-2] = t
			if p.modified[0].IsZero() && p.modified[1].IsZero() {
				res.Origins = append(res.Origins, Origin{Field: "doc_modified", Rule: defaults + ": " + prop, Values: []string{v}})
			}
		}
	}
	if len(p.authors) == 0 {
		for _, it := range main {
			for _, a := range values(it["author"], nil, nil) {
				p.authors = appendUnique(p.authors, p.scratch.normalize([]byte(a)))
			}
			if len(p.authors) > 0 {
				res.Origins = append(res.Origins, Origin{Field: "doc_author", Rule: defaults + ": author", Values: slices.Clone(p.authors)})
				break
			}
		}
	}
	if v, _ := firstValue(main, "description"); v != "" && first(p.desc[:]) == "" {
		p.desc[descSlots-1] = p.scratch.normalize([]byte(v))
		res.Origins = append(res.Origins, Origin{Field: "doc_description", Rule: defaults + ": description", Values: []string{p.desc[descSlots-1]}})
	}
}
