package urlnorm

import (
	"bytes"
	"strings"
)

// The parser: the WHATWG URL Standard's basic URL parser for the special
// schemes (http, https, ws, wss, ftp), writing the normalised spelling as
// it goes rather than building the standard's URL record and serialising
// it. It is generic over strings and byte slices so the links of a page,
// held in a byte arena, resolve without a conversion that would allocate.

// text is what the parser reads: a string, or the bytes of a page.
type text interface{ ~string | ~[]byte }

// baseURL is what a reference resolves against: an absolute URL of a
// special scheme as the parser wrote it (as found: query not sorted).
type baseURL struct {
	scheme   string // "http", "https", ...
	origin   string // "scheme://host[:port]"
	path     string // starts with "/"
	query    string // without "?"
	hasQuery bool
}

// appendURL writes the URL in, resolved against b (nil: in must be
// absolute). With n nil the query is written as found, parameters in the
// order written; otherwise it is sorted and filtered as n says (the key).
func appendURL[S text](dst []byte, in S, b *baseURL, n *Normalizer) ([]byte, error) {
	in = trimC0Space(in)
	if hasTabOrNewline(in) {
		// Browsers drop tabs and newlines anywhere (an href wrapped over
		// lines); rare enough to pay for a copy.
		var stack [256]byte
		return appendURL(dst, stripTabsAndNewlines(stack[:0], in), b, n)
	}
	if len(in) == 0 && b == nil {
		return dst, ErrEmpty
	}
	// The fragment is never kept: cutting it first also keeps its bad
	// escapes from costing the link.
	if i := indexByte(in, '#'); i >= 0 {
		in = in[:i]
	}
	sc, rest, hasScheme := cutScheme(in)
	if hasScheme {
		scheme, special := specialScheme(sc)
		switch {
		case special && b != nil && b.scheme == scheme && !twoSlashes(rest):
			// "http:foo" and "http:/foo" are relative to a base of the
			// same scheme.
			return appendRelative(dst, rest, b, n), nil
		case special:
			// "http:foo", "http:/foo" and "http:\\foo" name host foo
			// otherwise: the standard skips any slashes.
			return appendHierarchical(dst, scheme, skipSlashes(rest), n)
		case scheme == "file":
			return dst, ErrOpaque
		case !hasPrefix(rest, "//"):
			return dst, ErrOpaque // mailto:, javascript:, data:, urn: ...
		}
		// Another scheme written scheme://host/...: normalised alike, for
		// the crawl-space rules to refuse.
		return appendHierarchical(dst, lowerASCII(sc), rest[2:], n)
	}
	if b == nil {
		return dst, ErrRelative
	}
	if twoSlashes(in) {
		return appendHierarchical(dst, b.scheme, skipSlashes(in), n)
	}
	return appendRelative(dst, in, b, n), nil
}

// appendHierarchical writes scheme://, the authority at the start of s and
// the path and query after it.
func appendHierarchical[S text](dst []byte, scheme string, s S, n *Normalizer) ([]byte, error) {
	end := 0
	for end < len(s) && s[end] != '/' && s[end] != '\\' && s[end] != '?' {
		end++
	}
	dst = append(dst, scheme...)
	dst = append(dst, "://"...)
	dst, err := appendAuthority(dst, scheme, s[:end])
	if err != nil {
		return dst, err
	}
	path, query, hasQuery := cutByte(s[end:], '?')
	start := len(dst)
	if len(path) == 0 {
		dst = append(dst, '/')
	} else {
		dst = appendSegments(dst, start, path[1:])
	}
	if hasQuery {
		dst = appendQuery(dst, query, n)
	}
	return dst, nil
}

// appendRelative resolves r, a reference without scheme or authority,
// against b.
func appendRelative[S text](dst []byte, r S, b *baseURL, n *Normalizer) []byte {
	dst = append(dst, b.origin...)
	path, query, hasQuery := cutByte(r, '?')
	start := len(dst)
	switch {
	case len(path) > 0 && isSlash(path[0]):
		dst = appendSegments(dst, start, path[1:])
	case len(path) == 0:
		dst = append(dst, b.path...)
		if !hasQuery {
			if b.hasQuery {
				dst = appendQuery(dst, b.query, n)
			}
			return dst
		}
	default:
		// The base's directory, already normalised, then the reference's
		// segments, whose ".." may climb into it.
		dst = append(dst, b.path[:lastIndexByte(b.path, '/')]...)
		dst = appendSegments(dst, start, path)
	}
	if hasQuery {
		dst = appendQuery(dst, query, n)
	}
	return dst
}

// appendSegments writes each segment of p, preceded by "/", resolving "."
// and ".." (and their escapes "%2e") as it goes: ".." never climbs above
// pathStart. A backslash separates segments, as in the standard for the
// special schemes. A final dot segment leaves the path ending in "/".
func appendSegments[S text](dst []byte, pathStart int, p S) []byte {
	for {
		i := 0
		for i < len(p) && !isSlash(p[i]) {
			i++
		}
		slash := len(dst)
		dst = append(dst, '/')
		dst = appendEscaped(dst, p[:i], &pathAllowed)
		dots := 0
		switch w := dst[slash+1:]; {
		case len(w) == 1 && w[0] == '.':
			dots = 1
			dst = dst[:slash]
		case len(w) == 2 && w[0] == '.' && w[1] == '.':
			dots = 2
			dst = dst[:slash]
			if j := lastSlash(dst, pathStart); j >= 0 {
				dst = dst[:j]
			}
		}
		if i == len(p) {
			if dots > 0 || len(dst) == pathStart {
				dst = append(dst, '/')
			}
			return dst
		}
		p = p[i+1:]
	}
}

func lastSlash(buf []byte, from int) int {
	for j := len(buf) - 1; j >= from; j-- {
		if buf[j] == '/' {
			return j
		}
	}
	return -1
}

// appendQuery writes "?query": as found when n is nil, else sorted and
// filtered (appendSorted).
func appendQuery[S text](dst []byte, q S, n *Normalizer) []byte {
	if n != nil {
		return appendSorted(dst, q, n)
	}
	dst = append(dst, '?')
	return appendEscaped(dst, q, &queryAllowed)
}

// cutScheme splits "scheme:rest"; ok is false when s starts with no scheme
// (a relative reference, "1a:b" and ":x" among them).
func cutScheme[S text](s S) (scheme, rest S, ok bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case c == ':' && i > 0:
			return s[:i], s[i+1:], true
		default:
			return s[:0], s, false
		}
	}
	return s[:0], s, false
}

// specialScheme names a scheme in lower case when it is one of the
// standard's special schemes, file included; other schemes give "".
func specialScheme[S text](sc S) (string, bool) {
	for _, name := range [...]string{"http", "https", "ws", "wss", "ftp"} {
		if equalFoldASCII(name, sc) {
			return name, true
		}
	}
	if equalFoldASCII("file", sc) {
		return "file", false
	}
	return "", false
}

func lowerASCII[S text](s S) string {
	b := make([]byte, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	return string(b)
}

// trimC0Space strips what the standard strips from both ends: C0 control
// characters and spaces.
func trimC0Space[S text](s S) S {
	i, j := 0, len(s)
	for i < j && s[i] <= ' ' {
		i++
	}
	for j > i && s[j-1] <= ' ' {
		j--
	}
	return s[i:j]
}

func hasTabOrNewline[S text](s S) bool {
	return indexByte(s, '\n') >= 0 || indexByte(s, '\t') >= 0 || indexByte(s, '\r') >= 0
}

func stripTabsAndNewlines[S text](dst []byte, s S) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '\t' && c != '\n' && c != '\r' {
			dst = append(dst, c)
		}
	}
	return dst
}

func isSlash(c byte) bool { return c == '/' || c == '\\' }

// twoSlashes reports whether s starts with two slashes, either way round:
// the authority follows.
func twoSlashes[S text](s S) bool { return len(s) >= 2 && isSlash(s[0]) && isSlash(s[1]) }

func skipSlashes[S text](s S) S {
	i := 0
	for i < len(s) && isSlash(s[i]) {
		i++
	}
	return s[i:]
}

func hasPrefix[S text](s S, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if s[i] != prefix[i] {
			return false
		}
	}
	return true
}

// indexByte is strings.IndexByte or bytes.IndexByte, whose assembly a
// byte loop does not match.
func indexByte[S text](s S, c byte) int {
	switch v := any(s).(type) {
	case string:
		return strings.IndexByte(v, c)
	case []byte:
		return bytes.IndexByte(v, c)
	}
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func lastIndexByte[S text](s S, c byte) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func cutByte[S text](s S, c byte) (before, after S, found bool) {
	if i := indexByte(s, c); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, s[:0], false
}
