package sitemap

import (
	"net/url"

	"github.com/crawlspace/crawlspace/urlnorm"
)

// isAbsHTTP reports whether s is usable as written: an absolute http or
// https URL with a host, no white space or control characters, and no
// longer than maxURLLen. It is a cheap gate, not a validator: the caller
// normalises every URL, which rejects what slips through (a bad port, a
// malformed IPv6 literal). Raw non-ASCII is allowed, since sitemaps in the
// wild often carry unescaped IRIs and normalising escapes them.
func isAbsHTTP[T string | []byte](s T) bool {
	if len(s) > maxURLLen {
		return false
	}
	var rest T
	switch {
	case hasPrefixFold(s, "http://"):
		rest = s[len("http://"):]
	case hasPrefixFold(s, "https://"):
		rest = s[len("https://"):]
	default:
		return false
	}
	host := -1 // start of the host in rest, after any user information
	end := len(rest)
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if c <= ' ' || c == 0x7f {
			return false
		}
		if end == len(rest) {
			switch c {
			case '/', '?', '#':
				end = i
			case '@':
				host = i
			}
		}
	}
	return end > host+1 && rest[host+1] != ':'
}

func hasPrefixFold[T string | []byte](s T, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// resolve returns s, trimmed, as an absolute http(s) URL: as written when
// it is one, else resolved against base (when not nil) the way a page's
// links are.
func resolve(base *url.URL, s []byte) (string, bool) {
	s = trimSpace(s)
	if isAbsHTTP(s) {
		return string(s), true
	}
	if base == nil || len(s) == 0 || len(s) > maxURLLen {
		return "", false
	}
	b := urlnorm.NewBase(base)
	abs, ok := b.AppendResolved(nil, s)
	if !ok || !isAbsHTTP(abs) {
		return "", false
	}
	return string(abs), true
}

// parseBase parses s as an absolute http(s) base URL, or returns nil.
func parseBase(s string) *url.URL {
	if !isAbsHTTP(s) {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil
	}
	return u
}

// trimSpace trims XML white space (and the form feed and vertical tab a
// text file may carry); unlike bytes.TrimSpace it leaves non-ASCII alone.
func trimSpace(s []byte) []byte {
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
