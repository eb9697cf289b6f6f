package htmllex

import (
	"bytes"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// Character references, as the HTML Standard's tokenizer decodes them. In
// text (the lexer's Text) a named reference without its ';' is decoded
// whatever follows it: "&sectio" reads "§io". In an attribute value it is
// not, "for historical reasons", when '=' or an ASCII alphanumeric follows
// it, so that "?q=a&section=news" stays a query string. What a reference
// stands for is always html.UnescapeString's answer (the x/net package
// holds the standard's table and its rules for numeric references); when a
// named one is decoded at all in an attribute is decided here.

// commonEntities are the references most pages use; a text with any other
// goes to html.UnescapeString, which knows them all.
var commonEntities = [...]struct{ ref, text string }{
	{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", `"`}, {"&#39;", "'"},
	{"&nbsp;", "\u00a0"}, {"&mdash;", "\u2014"}, {"&ndash;", "\u2013"}, {"&rsaquo;", "\u203a"},
	{"&raquo;", "\u00bb"}, {"&copy;", "\u00a9"}, {"&hellip;", "\u2026"},
}

// commonRef is the common reference s begins with: its text and length,
// or n == 0 for none. Each ends in ';', so text and attributes read it
// alike.
func commonRef(s []byte) (text string, n int) {
	for _, e := range commonEntities {
		if bytes.HasPrefix(s, []byte(e.ref)) {
			return e.text, len(e.ref)
		}
	}
	return "", 0
}

// unescapeCommon decodes text s into dst when its only references are
// common ones; ok is false otherwise. dst must not overlap s.
func unescapeCommon(dst, s []byte) (out []byte, ok bool) {
	for {
		i := bytes.IndexByte(s, '&')
		if i < 0 {
			return append(dst, s...), true
		}
		dst = append(dst, s[:i]...)
		s = s[i:]
		text, n := commonRef(s)
		if n == 0 {
			return dst, false
		}
		dst = append(dst, text...)
		s = s[n:]
	}
}

// AttrIsPlain reports whether an attribute value reads as written: no
// reference, and no CR or NUL, which the input stream's preprocessing and
// the attribute value states replace.
func AttrIsPlain(v []byte) bool {
	for _, c := range v {
		if c == '&' || c == '\r' || c == 0 {
			return false
		}
	}
	return true
}

// AppendAttrValue appends the value of an attribute written as v: line
// breaks normalised to "\n", NUL read as U+FFFD, character references
// decoded by the attribute rules. dst must not overlap v.
func AppendAttrValue(dst, v []byte) []byte {
	for i := 0; i < len(v); {
		switch c := v[i]; c {
		case '&':
			var n int
			dst, n = appendAttrRef(dst, v[i:])
			i += n
		case '\r':
			dst = append(dst, '\n')
			i++
			if i < len(v) && v[i] == '\n' {
				i++
			}
		case 0:
			dst = append(dst, "\uFFFD"...)
			i++
		default:
			j := i + 1
			for j < len(v) && v[j] != '&' && v[j] != '\r' && v[j] != 0 {
				j++
			}
			dst = append(dst, v[i:j]...)
			i = j
		}
	}
	return dst
}

// appendAttrRef appends what the reference at s[0] == '&' of an attribute
// value stands for, and says how many bytes of s it took. Bytes it leaves
// as written are appended as they are.
func appendAttrRef(dst, s []byte) ([]byte, int) {
	if text, n := commonRef(s); n > 0 {
		return append(dst, text...), n
	}
	if len(s) > 1 && s[1] == '#' {
		n := numericRefLen(s)
		if n == 0 {
			return append(dst, '&'), 1
		}
		// Numeric references read the same in text and attributes.
		return append(dst, html.UnescapeString(string(s[:n]))...), n
	}
	n := 1
	for n < len(s) && isAlnum(s[n]) {
		n++
	}
	switch {
	case n == 1:
		return append(dst, '&'), 1
	case n < len(s) && s[n] == ';':
		n++
	case n < len(s) && s[n] == '=':
		// The historical rule: "&copy=2" stays as written.
		return append(dst, s[:n]...), n
	}
	if text, ok := wholeNamedRef(s[:n]); ok {
		return append(dst, text...), n
	}
	// No name of the table, or one that only begins with a name: in an
	// attribute an alphanumeric follows what matched, so it stays as
	// written ("&notin" without its ';', "&sectio").
	return append(dst, s[:n]...), n
}

// wholeNamedRef decodes ref, "&name" or "&name;", when the whole of it is a
// named reference of the standard's table. html.UnescapeString reads text,
// where a reference not in the table may still begin with a legacy name
// ("&notit;" reads "¬it;"): it gives that name's code point followed by the
// rest as written, so at least two code points, three with the ';'. A
// whole name gives one code point, two for some that end in ';'.
func wholeNamedRef(ref []byte) (string, bool) {
	s := string(ref)
	text := html.UnescapeString(s)
	if text == s {
		return "", false
	}
	most := 1
	if ref[len(ref)-1] == ';' {
		most = 2
	}
	return text, utf8.RuneCountInString(text) <= most
}

// numericRefLen is the length of the numeric reference at s ("&#65",
// "&#x41;"), or 0 when s has no digits after "&#" or "&#x".
func numericRefLen(s []byte) int {
	i := 2
	hex := i < len(s) && (s[i] == 'x' || s[i] == 'X')
	if hex {
		i++
	}
	start := i
	for i < len(s) && (isDigit(s[i]) || hex && isHexLetter(s[i])) {
		i++
	}
	if i == start {
		return 0
	}
	if i < len(s) && s[i] == ';' {
		i++
	}
	return i
}

func isDigit(c byte) bool     { return '0' <= c && c <= '9' }
func isHexLetter(c byte) bool { return 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
func isAlnum(c byte) bool     { return isLetter(c) || isDigit(c) }
