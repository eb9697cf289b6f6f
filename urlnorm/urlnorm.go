// Package urlnorm gives every URL crawlspace handles one spelling, so the
// same page is queued, compared, fetched and indexed once.
//
// A normalised URL is absolute and pure ASCII:
//
//   - scheme and host lower-case, internationalised host names in punycode,
//     IPv6 literals in their canonical compressed form, a host that ends in
//     a number as its dotted IPv4 address (2130706433, 0x7f.1 and 127.1 are
//     127.0.0.1);
//   - user information dropped (credentials belong in the config's auth,
//     not in URLs that are logged, stored and indexed);
//   - the scheme's default port dropped, an empty port dropped;
//   - an empty path written "/", dot segments resolved (RFC 3986 5.2.4);
//   - percent-encoding normalised: escapes of unreserved characters decoded,
//     other escapes in upper-case hex, characters a URL may not carry raw
//     (space, non-ASCII bytes, "<", a stray "%", ...) encoded;
//   - query parameters stably sorted by name, empty parameters and an empty
//     query dropped, and optionally filtered (see New);
//   - the fragment removed.
//
// Sorting query parameters makes ?a=1&b=2 and ?b=2&a=1 one URL. Servers read
// parameters by name, so the order almost never changes the page; repeated
// parameters (a=1&a=2) keep their relative order, since that one can matter.
//
// Only hierarchical URLs ("scheme://host...") are accepted: mailto:, data:,
// javascript: and relative input (except through Resolve) are errors, as are
// bad hosts and ports. Any scheme is accepted so the crawl-space rules, not
// the normaliser, decide which schemes a source crawls.
//
// Input that is already normalised is returned as is, without allocating.
//
// Resolving a reference against a base URL is done here too, two ways:
// Base resolves the links of a page, a sitemap or a feed as net/url does,
// without normalising (what is kept is normalised later, once), and
// Resolve resolves and normalises one reference in a single pass, for a
// redirect's Location.
package urlnorm

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Errors returned (wrapped) for input that cannot be normalised.
var (
	ErrEmpty    = errors.New("empty URL")
	ErrRelative = errors.New("not an absolute URL")
	ErrOpaque   = errors.New("not a hierarchical URL (scheme://host/...)")
	ErrHost     = errors.New("invalid host")
	ErrPort     = errors.New("invalid port")
)

// Normalizer normalises URLs and applies a query filter.
type Normalizer struct {
	keepAll bool
	honored []string
}

var keepAll = &Normalizer{keepAll: true}

// New returns a Normalizer that keeps only the honored query parameters and
// drops the others, which ends endless calendars (?year=2018&month=11&day=8)
// while keeping what names a page (?id=12345). "*" keeps every parameter; an
// empty list drops them all. Names compare case-insensitively, as the
// web frameworks that read them mostly do.
func New(honored []string) *Normalizer {
	n := &Normalizer{}
	for _, h := range honored {
		if h == "*" {
			return &Normalizer{keepAll: true}
		}
		if h != "" {
			n.honored = append(n.honored, escapeComponent(h, &queryAllowed))
		}
	}
	return n
}

// Normalize normalises an absolute URL, keeping every query parameter.
func Normalize(raw string) (string, error) { return keepAll.Normalize(raw) }

// Resolve resolves a link found on the page at base and normalises the
// result, keeping every query parameter.
func Resolve(base *url.URL, ref string) (string, error) { return keepAll.Resolve(base, ref) }

// Normalize normalises an absolute URL and applies the query filter.
func (n *Normalizer) Normalize(raw string) (string, error) {
	s, cleaned := clean(raw)
	if s == "" {
		return "", ErrEmpty
	}
	scheme, rest, ok := splitScheme(s)
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrRelative, raw)
	}
	if !strings.HasPrefix(rest, "//") {
		return "", fmt.Errorf("%w: %q", ErrOpaque, raw)
	}
	var stack [256]byte
	buf, err := n.build(stack[:0], scheme, rest[2:])
	if err != nil {
		return "", fmt.Errorf("%w: %q", err, raw)
	}
	if !cleaned && string(buf) == raw {
		return raw, nil
	}
	return string(buf), nil
}

// Resolve resolves ref against base (RFC 3986 section 5.2) and normalises the
// result. Links that are not hierarchical URLs (mailto:, javascript:) are
// errors, so callers skip them.
func (n *Normalizer) Resolve(base *url.URL, ref string) (string, error) {
	s, _ := clean(ref)
	if _, _, ok := splitScheme(s); ok {
		return n.Normalize(s)
	}
	if base == nil || base.Scheme == "" || base.Host == "" {
		return "", fmt.Errorf("%w: %q has no absolute base", ErrRelative, ref)
	}
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	scheme := lowerScheme(base.Scheme)
	var stack [256]byte
	buf := stack[:0]
	var err error
	switch {
	case strings.HasPrefix(s, "//"):
		buf, err = n.build(buf, scheme, s[2:])
	default:
		buf = append(buf, scheme...)
		buf = append(buf, "://"...)
		buf, err = appendHost(buf, scheme, base.Host)
		if err != nil {
			break
		}
		path, query, hasQuery := s, "", false
		if i := strings.IndexByte(s, '?'); i >= 0 {
			path, query, hasQuery = s[:i], s[i+1:], true
		}
		switch {
		case strings.HasPrefix(path, "/") || strings.HasPrefix(path, "\\"):
			buf = appendPath(buf, "", path, false)
		case path == "":
			buf = appendPath(buf, "", base.EscapedPath(), false)
			if !hasQuery {
				query, hasQuery = base.RawQuery, base.RawQuery != "" || base.ForceQuery
			}
		default:
			dir := base.EscapedPath()
			if i := strings.LastIndexByte(dir, '/'); i >= 0 {
				dir = dir[:i]
			} else {
				dir = ""
			}
			buf = appendPath(buf, dir, path, true)
		}
		if hasQuery {
			buf = n.appendQuery(buf, query)
		}
	}
	if err != nil {
		return "", fmt.Errorf("%w: %q", err, ref)
	}
	return string(buf), nil
}

// build writes the normalised form of scheme "://" rest, rest being what
// follows the "//".
func (n *Normalizer) build(buf []byte, scheme, rest string) ([]byte, error) {
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest = rest[:i]
	}
	end := 0
	for end < len(rest) && rest[end] != '/' && rest[end] != '?' && rest[end] != '\\' {
		end++
	}
	authority := rest[:end]
	rest = rest[end:]
	buf = append(buf, scheme...)
	buf = append(buf, "://"...)
	buf, err := appendHost(buf, scheme, authority)
	if err != nil {
		return buf, err
	}
	path, query, hasQuery := rest, "", false
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		path, query, hasQuery = rest[:i], rest[i+1:], true
	}
	buf = appendPath(buf, "", path, false)
	if hasQuery {
		buf = n.appendQuery(buf, query)
	}
	return buf, nil
}

// clean strips what browsers strip from a link before parsing it: leading
// and trailing spaces and control characters, and tabs and newlines anywhere.
func clean(s string) (string, bool) {
	for s != "" && s[0] <= ' ' {
		s = s[1:]
	}
	for s != "" && s[len(s)-1] <= ' ' {
		s = s[:len(s)-1]
	}
	if strings.IndexByte(s, '\t') >= 0 || strings.IndexByte(s, '\n') >= 0 || strings.IndexByte(s, '\r') >= 0 {
		return strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s), true
	}
	return s, false
}

// splitScheme splits "scheme:rest", lower-casing the scheme only when it must.
func splitScheme(s string) (scheme, rest string, ok bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case ('0' <= c && c <= '9') || c == '+' || c == '-' || c == '.':
			if i == 0 {
				return "", "", false
			}
		case c == ':':
			if i == 0 {
				return "", "", false
			}
			return lowerScheme(s[:i]), s[i+1:], true
		default:
			return "", "", false
		}
	}
	return "", "", false
}

// lowerScheme lower-cases a scheme, without allocating for the usual ones.
func lowerScheme(s string) string {
	for _, known := range [...]string{"http", "https"} {
		if strings.EqualFold(s, known) {
			return known
		}
	}
	return strings.ToLower(s)
}

// DefaultPort is the port a URL of scheme uses when it names none, or "".
func DefaultPort(scheme string) string {
	switch scheme {
	case "http", "ws":
		return "80"
	case "https", "wss":
		return "443"
	case "ftp":
		return "21"
	}
	return ""
}

// appendHost writes the normalised host and port of an authority.
func appendHost(buf []byte, scheme, authority string) ([]byte, error) {
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	host, port := authority, ""
	if strings.HasPrefix(host, "[") {
		end := strings.IndexByte(host, ']')
		if end < 0 {
			return buf, ErrHost
		}
		host, port = authority[1:end], authority[end+1:]
		if port != "" && port[0] != ':' {
			return buf, ErrHost
		}
		addr, err := netip.ParseAddr(host)
		if err != nil || !addr.Is6() || addr.Zone() != "" {
			return buf, ErrHost
		}
		buf = append(buf, '[')
		buf = addr.AppendTo(buf)
		buf = append(buf, ']')
	} else {
		if i := strings.LastIndexByte(host, ':'); i >= 0 {
			host, port = authority[:i], authority[i:]
		}
		var err error
		if buf, err = appendHostName(buf, host); err != nil {
			return buf, err
		}
	}
	if port == "" || port == ":" {
		return buf, nil
	}
	port = port[1:]
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return buf, ErrPort
		}
	}
	p, err := strconv.Atoi(port)
	if err != nil || p > 65535 || p == 0 {
		return buf, ErrPort
	}
	if len(port) > 1 && port[0] == '0' {
		port = strconv.Itoa(p)
	}
	if port == DefaultPort(scheme) {
		return buf, nil
	}
	buf = append(buf, ':')
	return append(buf, port...), nil
}

// appendHostName writes a lower-case ASCII host name. Escapes and non-ASCII
// (internationalised names) go through IDNA's lookup mapping to punycode; a
// host that ends in a number is written as its dotted IPv4 address
// (ipv4.go).
func appendHostName(buf []byte, host string) ([]byte, error) {
	if host == "" {
		return buf, ErrHost
	}
	plain := true
	for i := 0; i < len(host); i++ {
		if c := host[i]; c == '%' || c >= 0x80 {
			plain = false
			break
		}
	}
	if !plain {
		h, err := url.PathUnescape(host)
		if err != nil || !utf8.ValidString(h) {
			return buf, ErrHost
		}
		if h, err = idna.Lookup.ToASCII(h); err != nil || h == "" {
			return buf, ErrHost
		}
		host = h
	}
	start := len(buf)
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.', c == '_':
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		default:
			return buf[:start], ErrHost
		}
		buf = append(buf, c)
	}
	if bytes.Contains(buf[start:], []byte("xn--")) {
		// Punycode written by hand must decode to a valid name.
		h, err := idna.Lookup.ToASCII(string(buf[start:]))
		if err != nil || h != string(buf[start:]) {
			return buf[:start], ErrHost
		}
	}
	// Most hosts end in a letter past f: one comparison rules them out.
	if host := buf[start:]; mayEndInNumber(host[len(host)-1]) && endsInNumber(string(host)) {
		addr, ok := parseIPv4(string(host))
		if !ok {
			return buf[:start], ErrHost
		}
		if dotted := appendIPv4(buf[len(buf):], addr); !bytes.Equal(dotted, host) {
			buf = append(buf[:start], dotted...)
		}
	}
	return buf, nil
}

// appendPath writes the normalised path. For an absolute path, rel starts
// with "/" and dir is unused. When merge is set the path is dir + "/" + rel,
// a relative reference joined to its base's directory without building the
// joined string.
func appendPath(buf []byte, dir, rel string, merge bool) []byte {
	start := len(buf)
	var last bool
	switch {
	case merge:
		if dir != "" {
			buf, _ = appendSegments(buf, start, dir[1:])
		}
		buf, last = appendSegments(buf, start, rel)
	case rel != "":
		buf, last = appendSegments(buf, start, rel[1:])
	}
	if last || len(buf) == start {
		buf = append(buf, '/')
	}
	return buf
}

// appendSegments writes each segment of p, preceded by "/", resolving "."
// and ".." as it goes. A backslash separates segments as in browsers. It
// reports whether the path must end with "/" because its final segment was
// a dot segment.
func appendSegments(buf []byte, pathStart int, p string) ([]byte, bool) {
	for {
		seg := p
		i := 0
		for i < len(p) && p[i] != '/' && p[i] != '\\' {
			i++
		}
		if i < len(p) {
			seg, p = p[:i], p[i+1:]
		} else {
			i = -1
		}
		slash := len(buf)
		buf = append(buf, '/')
		buf = appendEscaped(buf, seg, &pathAllowed)
		dots := 0
		switch w := buf[slash+1:]; {
		case len(w) == 1 && w[0] == '.':
			dots = 1
			buf = buf[:slash]
		case len(w) == 2 && w[0] == '.' && w[1] == '.':
			dots = 2
			buf = buf[:slash]
			if j := lastSlash(buf, pathStart); j >= 0 {
				buf = buf[:j]
			}
		}
		if i < 0 {
			return buf, dots > 0
		}
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

// appendQuery writes "?query", dropping empty and filtered parameters and
// sorting the rest stably by name; it writes nothing when none remain.
func (n *Normalizer) appendQuery(buf []byte, q string) []byte {
	type param struct{ start, end, keyEnd int }
	var stack [16]param
	params := stack[:0]
	qstart := len(buf)
	buf = append(buf, '?')
	sorted := true
	for q != "" {
		p := q
		if i := strings.IndexByte(q, '&'); i >= 0 {
			p, q = q[:i], q[i+1:]
		} else {
			q = ""
		}
		if p == "" {
			continue
		}
		mark := len(buf)
		if len(params) > 0 {
			buf = append(buf, '&')
		}
		s := len(buf)
		buf = appendEscaped(buf, p, &queryAllowed)
		keyEnd := len(buf)
		if i := bytes.IndexByte(buf[s:], '='); i >= 0 {
			keyEnd = s + i
		}
		if !n.keeps(buf[s:keyEnd]) {
			buf = buf[:mark]
			continue
		}
		if len(params) > 0 {
			prev := params[len(params)-1]
			if bytes.Compare(buf[s:keyEnd], buf[prev.start:prev.keyEnd]) < 0 {
				sorted = false
			}
		}
		params = append(params, param{s, len(buf), keyEnd})
	}
	if len(params) == 0 {
		return buf[:qstart]
	}
	if sorted {
		return buf
	}
	// Insertion sort is stable and query strings are short.
	key := func(p param) []byte { return buf[p.start:p.keyEnd] }
	for i := 1; i < len(params); i++ {
		for j := i; j > 0 && bytes.Compare(key(params[j]), key(params[j-1])) < 0; j-- {
			params[j], params[j-1] = params[j-1], params[j]
		}
	}
	// The parameters are read from a copy while the sorted query is
	// written over them.
	var tmpStack [256]byte
	tmp := append(tmpStack[:0], buf[qstart:]...)
	out := buf[:qstart+1]
	for i, p := range params {
		if i > 0 {
			out = append(out, '&')
		}
		out = append(out, tmp[p.start-qstart:p.end-qstart]...)
	}
	return out
}

func (n *Normalizer) keeps(key []byte) bool {
	if n.keepAll {
		return true
	}
	for _, h := range n.honored {
		if equalFoldASCII(h, key) {
			return true
		}
	}
	return false
}

func equalFoldASCII(s string, b []byte) bool {
	if len(s) != len(b) {
		return false
	}
	for i := 0; i < len(s); i++ {
		x, y := s[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
