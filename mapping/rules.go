package mapping

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/rules"
)

// extractionRule is a compiled sources[].extraction.rules entry: the pages
// it selects and the fields it fills on them.
type extractionRule struct {
	scope  *rules.Scope
	fields []fieldRule
}

// fieldRule fills one extra field from a CSS selector, the URL or a fixed
// value.
type fieldRule struct {
	extra int    // index into Extractor.extras
	ref   string // the config line, for explain and warnings
	sel   cascadia.Matcher
	attr  string
	all   bool
	re    *regexp.Regexp
	value string
	fixed bool
}

// Origin says which part of the configuration filled a field of a page,
// with the values it gave: what `explain -page` and `status -url` show.
type Origin struct {
	Field  string   `json:"field"`
	Rule   string   `json:"rule"`
	Values []string `json:"values,omitempty"`
	// Dropped are values the field's type refused, each with its reason.
	Dropped []string `json:"dropped,omitempty"`
}

// compileRules compiles the source's extraction rules, which config.Load
// and rules.Compile have checked: an entry that still fails to compile is
// left out rather than failing the crawl.
func (x *Extractor) compileRules(cfg *config.Config, src *config.Source) {
	base := config.SourcePath(src.Index) + ".extraction.rules"
	for j, r := range src.Extraction.Rules {
		scope, err := rules.NewScope(r.Include, r.Exclude)
		if err != nil {
			continue
		}
		er := extractionRule{scope: scope}
		for f, fr := range r.Fields {
			fi, ok := x.extraIndex[fr.Field]
			if !ok {
				continue
			}
			c := fieldRule{extra: fi, all: fr.Values == "all", attr: strings.ToLower(fr.Attribute),
				ref: cfg.Ref(base + "[" + strconv.Itoa(j) + "].fields[" + strconv.Itoa(f) + "]")}
			switch {
			case fr.Value != nil:
				c.value, c.fixed = *fr.Value, true
			case fr.URL != "":
				if c.re, err = regexp.Compile(fr.URL); err != nil {
					continue
				}
			default:
				if c.sel, err = cascadia.Compile(fr.Selector); err != nil {
					continue
				}
				x.selectors = true
			}
			er.fields = append(er.fields, c)
		}
		x.rules = append(x.rules, er)
	}
}

// applyRules fills the extra fields of the rules whose scope holds u.
// dom parses the page when a selector needs it, once. Values are
// normalised to the field's type; one that does not parse is dropped
// with its reason in the origin and in warnings.
func (x *Extractor) applyRules(p *parser, u string, dom func() *html.Node, res *Result) {
	for i := range x.rules {
		r := &x.rules[i]
		if !r.scope.Contains(u) {
			continue
		}
		for j := range r.fields {
			f := &r.fields[j]
			var raw []string
			switch {
			case f.fixed:
				raw = []string{f.value}
			case f.re != nil:
				raw = urlValues(f.re, u, f.all)
			default:
				if root := dom(); root != nil {
					raw = selectValues(f.sel, f.attr, f.all, root, &p.scratch)
				}
			}
			x.fill(p, f.extra, f.ref, raw, res)
		}
	}
}

// fill adds raw values to extra field fi, typed, and records where they
// came from.
func (x *Extractor) fill(p *parser, fi int, ref string, raw []string, res *Result) {
	ef := x.extras[fi]
	o := Origin{Field: ef.name, Rule: ref}
	for _, r := range raw {
		v := p.scratch.normalize([]byte(r))
		if v == "" {
			continue
		}
		typed := extraValue(v, ef.typ)
		if typed == "" {
			why := strconv.Quote(cutUTF8(v, 64)) + " is not a " + ef.typ
			o.Dropped = append(o.Dropped, why)
			res.FieldWarnings = append(res.FieldWarnings, ef.name+": "+why+" ("+ref+")")
			continue
		}
		o.Values = append(o.Values, typed)
		p.extras[fi] = appendUnique(p.extras[fi], typed)
	}
	if len(o.Values) > 0 || len(o.Dropped) > 0 {
		res.Origins = append(res.Origins, o)
	}
}

// urlValues is what re captures of u: its first group, or the whole match
// when it has none.
func urlValues(re *regexp.Regexp, u string, all bool) []string {
	n := 1
	if all {
		n = -1
	}
	var out []string
	for _, m := range re.FindAllStringSubmatch(u, n) {
		v := m[0]
		if len(m) > 1 {
			v = m[1]
		}
		out = append(out, v)
	}
	return out
}

// selectValues is the text, or the attribute, of the elements sel matches
// in document order: the first non-empty one, or all.
func selectValues(sel cascadia.Matcher, attr string, all bool, root *html.Node, t *textBuf) []string {
	var out []string
	for _, n := range cascadia.QueryAll(root, sel) {
		var v string
		if attr != "" {
			for _, a := range n.Attr {
				if a.Namespace == "" && a.Key == attr {
					v = a.Val
					break
				}
			}
		} else {
			v = nodeText(n)
		}
		if t.normalize([]byte(v)) == "" {
			continue
		}
		out = append(out, v)
		if !all {
			break
		}
	}
	return out
}

// nodeText is the text under n with a space at block and cell edges, so
// that words in adjacent blocks are not glued together; script, style and
// the other elements whose content is never text are left out.
func nodeText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.TextNode:
			b.WriteString(n.Data)
			return
		case html.ElementNode:
			f := classify(n.DataAtom)
			if f&fSkip != 0 {
				return
			}
			if f&(fBlock|fCell) != 0 {
				// Inline elements join their text as a browser shows it.
				b.WriteByte(' ')
				defer b.WriteByte(' ')
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}
