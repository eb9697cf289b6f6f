// Package urlnorm gives every URL crawlspace handles its spelling: the
// same page is queued, compared, fetched and indexed once, and the
// crawl-space rules and robots.txt judge what the site wrote.
//
// Resolution is the WHATWG URL Standard's for its special schemes (http,
// https, ws, wss, ftp), as browsers do it: leading and trailing C0
// controls and spaces stripped and tabs and newlines removed anywhere; "\"
// read as "/"; "http:foo" and "http:/foo" relative to a base of the same
// scheme (naming host foo otherwise); "//host", "///host" and "\\host"
// naming a host; a colon allowed in a relative reference's first segment
// (":x", "1a:b"); dot segments, escaped ones ("%2e") too, removed; hosts
// parsed as the standard says: IPv6 literals compressed, names mapped by
// IDNA (UTS 46) to lower-case punycode and refused when IDNA refuses them
// or they hold a forbidden code point, a name that ends in a number read
// as an IPv4 address in any of its numeric forms (2130706433, 0x7f.1,
// 0177.0.0.1 and 127.1 are 127.0.0.1); a port past 65535 refused, the
// scheme's default port dropped. What the standard refuses is an error
// here too. TestWHATWGURLConformance runs the standard's own tests.
//
// Then, on purpose, three steps, so that a URL has one spelling however it
// was written:
//
//  1. the fragment dropped (it is never sent);
//  2. user information dropped (credentials belong in the config's auth,
//     not in URLs that are logged, stored and indexed);
//  3. percent-encoding normalised: escapes of unreserved characters
//     decoded ("%7E" is "~"), other escapes in upper-case hex, and every
//     byte RFC 3986 does not allow raw where it stands encoded (space,
//     non-ASCII, "<", "|", "[", a "%" that starts no escape as "%25" ...).
//
// That is the URL as found (Found, Resolve, Base): what the crawl-space
// rules and robots.txt judge, and what is requested. The key of a page,
// under which it is stored and indexed (Normalize), takes two steps more:
//
//  4. query parameters stably sorted by name, empty parameters and an
//     empty query dropped, so ?a=1&b=2 and ?b=2&a=1 are one page (servers
//     read parameters by name; repeated ones, a=1&a=2, keep their order);
//  5. the source's query filter (New): the parameters it does not honour
//     dropped.
//
// Filter applies step 5 alone to a URL as found: the URL requested when
// the filter drops a parameter.
//
// Only hierarchical URLs are accepted: mailto:, data:, javascript:, file:
// and relative input (outside Resolve and Base) are errors. Another scheme
// written "scheme://host/..." is spelt alike, so that the crawl-space
// rules, not the normaliser, decide which schemes a source crawls.
//
// Input already spelt as asked is returned as it is, without allocating,
// and Base resolves a page's links without allocating: the caller makes a
// string only of a link it keeps.
package urlnorm

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// MaxLength is the longest URL the crawler keeps. URLs are keys of the
// embedded state store's B-trees, bbolt keys are at most 32,768 bytes
// (bolt.MaxKeySize, which frontier's tests hold it to), and a URL's history
// events add 5 bytes to it; the rest is margin. The crawl space refuses
// longer URLs (url_too_long) whatever max_url_length says, max_url_length
// cannot be set above it, and the state stores refuse them too. It lives
// here, not in the store, so that the packages that judge URLs do not link
// the storage engine.
const MaxLength = 32000

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

// Normalize normalises an absolute URL, keeping every query parameter:
// the key of the page it names when no query filter applies.
func Normalize(raw string) (string, error) { return keepAll.Normalize(raw) }

// Found resolves and normalises an absolute URL as found (the spelling
// steps of the package comment, query parameters in the order written):
// what the crawl-space rules and robots.txt judge.
func Found(raw string) (string, error) { return finish(raw, nil) }

// Resolve resolves ref, a Location header's value, against base, the URL
// that was requested, as browsers do, and normalises the result as found.
// A reference that names no hierarchical URL (mailto:, javascript:) is an
// error, and so is a relative one when base is no URL.
func Resolve(base, ref string) (string, error) {
	b, _ := ParseBase(base)
	var stack [256]byte
	buf, err := appendURL(stack[:0], ref, b.at(), nil)
	if err != nil {
		return "", fmt.Errorf("%w: %q", err, ref)
	}
	return string(buf), nil
}

// Normalize normalises an absolute URL and applies the query filter: the
// key of the page it names, which is stored, compared and indexed.
func (n *Normalizer) Normalize(raw string) (string, error) { return finish(raw, n) }

// finish parses raw, an absolute URL, into its spelling as found (n nil)
// or its key; an input already so spelt is returned as it is, without
// allocating.
func finish(raw string, n *Normalizer) (string, error) {
	var stack [256]byte
	buf, err := appendURL(stack[:0], raw, nil, n)
	if err != nil {
		return "", fmt.Errorf("%w: %q", err, raw)
	}
	if string(buf) == raw {
		return raw, nil
	}
	return string(buf), nil
}

// Filter applies the query filter alone to found, a URL as found: the
// parameters it does not honour (empty ones among them) go, the others
// stay in the order the site wrote them. That is the URL requested; with
// every parameter honoured it is found itself.
func (n *Normalizer) Filter(found string) string {
	qs := strings.IndexByte(found, '?')
	if n.keepAll || qs < 0 {
		return found
	}
	var stack [256]byte
	buf := append(stack[:0], found[:qs]...)
	sep := byte('?')
	for p := range strings.SplitSeq(found[qs+1:], "&") {
		name, _, _ := strings.Cut(p, "=")
		if keeps(n, name) {
			buf = append(append(buf, sep), p...)
			sep = '&'
		}
	}
	if string(buf) == found {
		return found
	}
	return string(buf)
}

// appendSorted writes "?query", dropping empty and filtered parameters and
// sorting the rest stably by name; it writes nothing when none remain.
func appendSorted[S text](buf []byte, q S, n *Normalizer) []byte {
	type param struct{ start, end, keyEnd int }
	var stack [16]param
	params := stack[:0]
	qstart := len(buf)
	buf = append(buf, '?')
	sorted := true
	for len(q) > 0 {
		p := q
		if i := indexByte(q, '&'); i >= 0 {
			p, q = q[:i], q[i+1:]
		} else {
			q = q[:0]
		}
		if len(p) == 0 {
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
		if !keeps(n, buf[s:keyEnd]) {
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

// keeps reports whether n honours the parameter called key.
func keeps[S text](n *Normalizer, key S) bool {
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

func equalFoldASCII[S text](s string, b S) bool {
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
