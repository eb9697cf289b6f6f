package mapping

import (
	"net/http"
	"strings"

	"github.com/crawlspace/crawlspace/urlnorm"
)

// Link is a hyperlink found in a page.
type Link struct {
	// URL is absolute, resolved against <base href> or the page URL, with
	// the fragment and any user information removed. The provider still
	// normalises it before queueing.
	URL string `json:"url"`
	// NoFollow is set when every occurrence of the link on the page carries
	// rel="nofollow".
	NoFollow bool `json:"nofollow,omitempty"`
	// Tag is the element of the first occurrence: a, area, frame, iframe,
	// or meta for a <meta http-equiv="refresh"> target.
	Tag string `json:"tag"`
}

const (
	tagA uint8 = iota
	tagArea
	tagFrame
	tagIframe
	tagMeta
)

var linkTagNames = [...]string{tagA: "a", tagArea: "area", tagFrame: "frame", tagIframe: "iframe", tagMeta: "meta"}

// rawLink is a link as written, kept in the parser's arena until the whole
// page has been read: <base href> applies to links before it too.
type rawLink struct {
	start, end int
	tag        uint8
	nofollow   bool
}

// appendURLText appends an attribute value as URL text: leading and
// trailing spaces and control characters removed, tabs and newlines inside
// deleted, as the URL standard does before parsing.
func appendURLText(dst, v []byte) []byte {
	i, j := 0, len(v)
	for i < j && v[i] <= ' ' {
		i++
	}
	for j > i && v[j-1] <= ' ' {
		j--
	}
	for _, c := range v[i:j] {
		if c == '\t' || c == '\n' || c == '\r' {
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

// resolveLinks resolves, filters and deduplicates the page's links, keeping
// at most max (0: no cap), and counts the links found, repeats included.
// Only kept links cost an allocation.
func (p *parser) resolveLinks(base *urlnorm.Base, self string, max int) (links []Link, capped bool, found int) {
	if len(p.links) == 0 {
		return nil, false, 0
	}
	clear(p.seen)
	out := make([]Link, 0, min(len(p.links), max))
	for _, rl := range p.links {
		var ok bool
		p.resolved, ok = base.AppendResolved(p.resolved[:0], p.arena[rl.start:rl.end])
		if !ok || string(p.resolved) == self {
			continue
		}
		found++
		if i, dup := p.seen[string(p.resolved)]; dup {
			out[i].NoFollow = out[i].NoFollow && rl.nofollow
			continue
		}
		if max > 0 && len(out) >= max {
			capped = true
			continue // a later duplicate may still clear a nofollow
		}
		abs := string(p.resolved)
		p.seen[abs] = len(out)
		out = append(out, Link{URL: abs, NoFollow: rl.nofollow, Tag: linkTagNames[rl.tag]})
	}
	if len(out) == 0 {
		return nil, capped, found
	}
	return out, capped, found
}

// refreshURL extracts the target of <meta http-equiv="refresh"
// content="5; url=/next">.
func refreshURL(content string) string {
	_, rest, ok := strings.Cut(content, ";")
	if !ok {
		_, rest, ok = strings.Cut(content, ",")
		if !ok {
			return ""
		}
	}
	rest = strings.TrimSpace(rest)
	if len(rest) >= 3 && strings.EqualFold(rest[:3], "url") {
		r := strings.TrimSpace(rest[3:])
		if strings.HasPrefix(r, "=") {
			rest = strings.TrimSpace(r[1:])
		}
	}
	if n := len(rest); n >= 2 && (rest[0] == '\'' || rest[0] == '"') {
		if i := strings.IndexByte(rest[1:], rest[0]); i >= 0 {
			rest = rest[1 : 1+i]
		} else {
			rest = rest[1:]
		}
	}
	return rest
}

// headerCanonical finds rel="canonical" in the Link headers (RFC 8288),
// the way non-HTML resources and some CMSs declare it.
func headerCanonical(h http.Header) string {
	for _, v := range h.Values("Link") {
		for {
			i := strings.IndexByte(v, '<')
			if i < 0 {
				break
			}
			j := strings.IndexByte(v[i:], '>')
			if j < 0 {
				break
			}
			target := v[i+1 : i+j]
			params := v[i+j+1:]
			if k := strings.IndexByte(params, '<'); k >= 0 {
				v = params[k:]
				params = params[:k]
			} else {
				v = ""
			}
			if relCanonical(params) {
				return strings.TrimSpace(target)
			}
		}
	}
	return ""
}

func relCanonical(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		k, val, ok := strings.Cut(p, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "rel") {
			continue
		}
		val = strings.Trim(strings.TrimSpace(val), `"',`)
		for tok := range strings.FieldsSeq(val) {
			if strings.EqualFold(tok, "canonical") {
				return true
			}
		}
	}
	return false
}
