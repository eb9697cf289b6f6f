package urlnorm

import (
	"net/url"
	"strings"
)

// Base is the URL the links of a page, a sitemap or a feed resolve
// against: the page's own URL, or its <base href>. Resolving a link
// allocates nothing; the caller makes a string only of a link it keeps.
// The links come out as found (see the package comment), http and https
// only.
type Base struct {
	b  baseURL
	ok bool // false: the base is no URL, and only absolute links resolve
}

// NewBase prepares u, an absolute URL, as a base.
func NewBase(u *url.URL) Base {
	if u == nil {
		return Base{}
	}
	b, _ := ParseBase(u.String())
	return b
}

// ParseBase prepares raw, an absolute URL of a special scheme, as a base;
// ok is false when it is none.
func ParseBase(raw string) (Base, bool) {
	found, err := Found(raw)
	if err != nil {
		return Base{}, false
	}
	scheme, rest, _ := strings.Cut(found, "://")
	if _, special := specialScheme(scheme); !special {
		return Base{}, false
	}
	i := strings.IndexAny(rest, "/?")
	b := baseURL{scheme: scheme, origin: found[:len(scheme)+3+i]}
	b.path, b.query, b.hasQuery = strings.Cut(found[len(b.origin):], "?")
	return Base{b: b, ok: true}, true
}

// at is the base for appendURL: nil when there is none.
func (b *Base) at() *baseURL {
	if b == nil || !b.ok {
		return nil
	}
	return &b.b
}

// Resolve is AppendResolved for a single string.
func (b *Base) Resolve(ref string) (string, bool) {
	var stack [256]byte
	out, ok := appendLink(stack[:0], ref, b.at())
	return string(out), ok
}

// AppendResolved appends the absolute http(s) URL of ref, as found, to
// dst; ok is false (and dst unchanged) for anything that is not a link to
// another web page: a reference to the page itself ("" or "#top"), another
// scheme (mailto:, javascript:, tel:, data:, ftp:), or what the URL
// Standard refuses.
func (b *Base) AppendResolved(dst, ref []byte) ([]byte, bool) {
	return appendLink(dst, ref, b.at())
}

func appendLink[S text](dst []byte, ref S, b *baseURL) ([]byte, bool) {
	r := trimC0Space(ref)
	if len(r) == 0 || r[0] == '#' {
		return dst, false // the page itself
	}
	if sc, _, ok := cutScheme(r); ok && !equalFoldASCII("http", sc) && !equalFoldASCII("https", sc) {
		return dst, false
	}
	start := len(dst)
	out, err := appendURL(dst, r, b, nil)
	if err != nil || !isWeb(out[start:]) {
		return dst[:start], false
	}
	return out, true
}

// isWeb reports whether a URL the parser wrote is http or https: a
// scheme-relative link on another base may be neither.
func isWeb(u []byte) bool {
	return hasPrefix(u, "http://") || hasPrefix(u, "https://")
}
