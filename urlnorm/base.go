package urlnorm

import (
	"bytes"
	"net/url"
	"strings"
)

// schemeOf returns the scheme of an absolute reference, nil for a
// relative one.
func schemeOf(s []byte) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case c == ':' && i > 0:
			return s[:i]
		default:
			return nil
		}
	}
	return nil
}

// Base is the URL the links of a page, a sitemap or a feed resolve against
// (RFC 3986 section 5.2, as net/url does it), prepared so the common kinds
// of reference (absolute, root-relative, relative, with or without dot
// segments) resolve without net/url and without allocating: the caller
// turns the bytes into a string only for a link it keeps. The result is
// the string net/url would give (a test and a fuzz target hold the two to
// it), without fragment or user information; anything unusual, such as
// IPv6 hosts, user information or characters to escape, takes the net/url
// path. It is not normalised: Normalize, or the crawl space's rules, do
// that to what is kept. Resolve is for a single reference that is to be
// normalised at once, such as a Location header.
type Base struct {
	u      *url.URL
	origin string // "scheme://host"; "" disables the fast path
	path   string // escaped path, "" for none
	dir    string // path up to its last '/'; "" disables relative references
	tmp    []byte
}

// NewBase prepares u, an absolute URL, as a base.
func NewBase(u *url.URL) Base {
	b := Base{u: u}
	if u.User != nil || u.Opaque != "" || !plainHost([]byte(u.Host)) || (u.Scheme != "http" && u.Scheme != "https") {
		return b
	}
	b.origin = u.Scheme + "://" + strings.ToLower(u.Host)
	b.path = u.EscapedPath()
	if p := []byte(b.path); plainPath(p) && !hasDotSegment(p) && (b.path == "" || b.path[0] == '/') {
		b.dir = "/"
		if i := strings.LastIndexByte(b.path, '/'); i >= 0 {
			b.dir = b.path[:i+1]
		}
	}
	return b
}

// Resolve is AppendResolved for a single string.
func (b *Base) Resolve(ref string) (string, bool) {
	out, ok := b.AppendResolved(nil, []byte(ref))
	return string(out), ok
}

// AppendResolved appends the absolute http(s) URL of ref, without fragment
// or user information, to dst; ok is false (and dst unchanged) for anything
// that is not a web link.
func (b *Base) AppendResolved(dst, ref []byte) ([]byte, bool) {
	if len(ref) == 0 || ref[0] == '#' {
		return dst, false // the page itself
	}
	sc := schemeOf(ref)
	if sc != nil && !equalFoldASCII("http", sc) && !equalFoldASCII("https", sc) {
		return dst, false // mailto:, javascript:, tel:, data:, ftp: ...
	}
	// The fragment goes before parsing: a bad escape in it must not cost
	// the link.
	if i := bytes.IndexByte(ref, '#'); i >= 0 {
		ref = ref[:i]
	}
	if out, ok := b.appendFast(dst, ref, sc); ok {
		return out, true
	}
	u, err := b.u.Parse(string(ref))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return dst, false
	}
	u.Fragment, u.RawFragment = "", ""
	u.Host = strings.ToLower(u.Host)
	// Credentials in a link must not travel into the frontier and logs.
	u.User = nil
	abs := u.String()
	// net/url accepts some hosts ("//::") it then cannot read back.
	if _, err := url.Parse(abs); err != nil {
		return dst, false
	}
	return append(dst, abs...), true
}

func (b *Base) appendFast(dst, ref, sc []byte) ([]byte, bool) {
	if b.origin == "" || len(ref) == 0 {
		return dst, false
	}
	path, query, hasQuery := bytes.Cut(ref, []byte{'?'})
	if !plainPath(path) || (hasQuery && !plainQuery(query)) || equalFoldASCII("%2a", path) {
		// "%2A" alone decodes to "*", which net/url never re-escapes.
		return dst, false
	}
	start := len(dst)
	switch {
	case len(path) >= 2 && path[0] == '/' && path[1] == '/':
		return dst, false // scheme-relative: net/url
	case sc != nil:
		rest := path[len(sc)+1:]
		if !bytes.HasPrefix(rest, []byte("//")) {
			return dst, false
		}
		rest = rest[2:]
		i := bytes.IndexByte(rest, '/')
		if i < 0 {
			i = len(rest)
		}
		if !plainHost(rest[:i]) {
			return dst, false
		}
		dst = appendLower(dst, sc)
		dst = append(dst, "://"...)
		dst = appendLower(dst, rest[:i])
		dst = b.appendPath(dst, "", rest[i:])
	case len(path) == 0:
		if b.dir == "" {
			return dst, false
		}
		dst = append(dst, b.origin...)
		dst = append(dst, b.path...)
	case path[0] == '/':
		dst = append(dst, b.origin...)
		dst = b.appendPath(dst, "", path)
	default:
		if b.dir == "" || bytes.IndexByte(path, ':') >= 0 {
			return dst[:start], false
		}
		dst = append(dst, b.origin...)
		dst = b.appendPath(dst, b.dir, path)
	}
	if hasQuery {
		dst = append(dst, '?')
		dst = append(dst, query...)
	}
	return dst, true
}

// appendPath appends dir+rel with dot segments removed, exactly as
// net/url's resolvePath does.
func (b *Base) appendPath(dst []byte, dir string, rel []byte) []byte {
	b.tmp = append(append(b.tmp[:0], dir...), rel...)
	full := b.tmp
	if len(full) == 0 {
		return dst
	}
	if !hasDotSegment(full) && full[0] == '/' {
		return append(dst, full...)
	}
	mark := len(dst)
	dst = append(dst, '/')
	var elem []byte
	rem, found, first := full, true, true
	for found {
		elem, rem, found = bytes.Cut(rem, []byte{'/'})
		switch {
		case isDot(elem):
			first = false
			continue
		case isDotDot(elem):
			if i := bytes.LastIndexByte(dst[mark+1:], '/'); i >= 0 {
				dst = dst[:mark+1+i]
			} else {
				dst = dst[:mark+1]
			}
			first = len(dst) == mark+1
		default:
			if !first {
				dst = append(dst, '/')
			}
			dst = append(dst, elem...)
			first = false
		}
	}
	if isDot(elem) || isDotDot(elem) {
		dst = append(dst, '/')
	}
	if len(dst) > mark+1 && dst[mark+1] == '/' {
		copy(dst[mark:], dst[mark+1:])
		dst = dst[:len(dst)-1]
	}
	return dst
}

func isDot(e []byte) bool    { return len(e) == 1 && e[0] == '.' }
func isDotDot(e []byte) bool { return len(e) == 2 && e[0] == '.' && e[1] == '.' }

func appendLower(dst, s []byte) []byte {
	for _, c := range s {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// plainHost is a host name or IPv4 address with an optional port: no user
// information, no IPv6 brackets, nothing to escape.
func plainHost(h []byte) bool {
	name, port, hasPort := bytes.Cut(h, []byte{':'})
	if len(name) == 0 || (hasPort && len(port) == 0) {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return false
		}
	}
	return true
}

// pathChar marks the bytes net/url leaves unescaped in a path.
var pathChar = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range []byte("-._~!$&'()*+,;=:@/") {
		t[c] = true
	}
	return t
}()

// plainPath holds only characters net/url leaves as they are in a path,
// with every % starting a valid escape.
func plainPath(p []byte) bool {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case pathChar[c]:
		case c == '%':
			if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// plainQuery holds only printable ASCII net/url passes through unchanged.
func plainQuery(q []byte) bool {
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '<' || c == '>' || c == '\\' || c == '^' || c == '`' || c == '{' || c == '|' || c == '}' {
			return false
		}
		if c == '%' && (i+2 >= len(q) || !isHex(q[i+1]) || !isHex(q[i+2])) {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// hasDotSegment reports whether a path has a "." or ".." segment.
func hasDotSegment(p []byte) bool {
	for len(p) > 0 {
		var seg []byte
		seg, p, _ = bytes.Cut(p, []byte{'/'})
		if isDot(seg) || isDotDot(seg) {
			return true
		}
	}
	return false
}
