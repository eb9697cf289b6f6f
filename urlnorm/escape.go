package urlnorm

import "strings"

// Character classes of RFC 3986.
var (
	unreserved   [256]bool // ALPHA DIGIT - . _ ~
	pathAllowed  [256]bool // pchar: unreserved, sub-delims, ":" and "@"
	queryAllowed [256]bool // pchar, "/" and "?", but not "'"
	// pathQueryAllowed is what a hand-written pattern may hold raw
	// before its query: a path's characters, "/" and "?".
	pathQueryAllowed [256]bool
)

func init() {
	for c := 'a'; c <= 'z'; c++ {
		unreserved[c], unreserved[c-'a'+'A'] = true, true
	}
	for c := '0'; c <= '9'; c++ {
		unreserved[c] = true
	}
	for _, c := range "-._~" {
		unreserved[c] = true
	}
	pathAllowed = unreserved
	for _, c := range "!$&'()*+,;=:@" {
		pathAllowed[c] = true
	}
	queryAllowed = pathAllowed
	queryAllowed['/'], queryAllowed['?'] = true, true
	// The URL Standard escapes "'" in the query of a special URL.
	queryAllowed['\''] = false
	pathQueryAllowed = queryAllowed
	pathQueryAllowed['\''] = true
}

const upperHex = "0123456789ABCDEF"

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// appendEscaped writes s with its percent-encoding normalised: escapes of
// unreserved characters decoded, other escapes upper-cased, a "%" that
// starts no escape and every byte not allowed raw encoded.
func appendEscaped[S text](buf []byte, s S, allowed *[256]bool) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if allowed[c] {
			buf = append(buf, c)
			continue
		}
		if c == '%' && i+2 < len(s) {
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				v := hi<<4 | lo
				if unreserved[v] {
					buf = append(buf, v)
				} else {
					buf = append(buf, '%', upperHex[hi], upperHex[lo])
				}
				i += 2
				continue
			}
		}
		buf = append(buf, '%', upperHex[c>>4], upperHex[c&15])
	}
	return buf
}

func escapeComponent(s string, allowed *[256]bool) string {
	var stack [128]byte
	b := appendEscaped(stack[:0], s, allowed)
	if string(b) == s {
		return s
	}
	return string(b)
}

// Escape normalises the percent-encoding of a piece of URL written by hand
// (an include pattern, a prefix rule, a crawl rule value) the way Normalize
// treats paths and queries, so it compares equal to the same text in a
// normalised URL: "/my docs/café" becomes "/my%20docs/caf%C3%A9". Reserved
// characters ("/", "?", "&", "=", ":", ...) stay as written, and so does a
// bracketed IPv6 host after "//"; a "'" is escaped after the first "?",
// as in a URL's query.
func Escape(s string) string {
	var stack [128]byte
	b := stack[:0]
	allowed := &pathQueryAllowed
	for s != "" {
		i := strings.Index(s, "//[")
		if i < 0 {
			b = appendPattern(b, s, &allowed)
			break
		}
		b = appendPattern(b, s[:i+2], &allowed)
		s = s[i+2:]
		j := strings.IndexByte(s, ']')
		if j < 0 {
			j = len(s) - 1
		}
		b = append(b, s[:j+1]...)
		s = s[j+1:]
	}
	return string(b)
}

// appendPattern escapes s with *allowed, switching to the query's set at
// the first "?".
func appendPattern(b []byte, s string, allowed **[256]bool) []byte {
	if *allowed == &pathQueryAllowed {
		if i := strings.IndexByte(s, '?'); i >= 0 {
			b = appendEscaped(b, s[:i+1], *allowed)
			s, *allowed = s[i+1:], &queryAllowed
		}
	}
	return appendEscaped(b, s, *allowed)
}
