// Package charset reads a body in any encoding as UTF-8, by the rules
// browsers follow for pages: a byte order mark, the Content-Type charset,
// a <meta> declaration, then detection; and finds the charset a
// Content-Type value names.
package charset

import (
	"bytes"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/saintfish/chardet"
	"golang.org/x/net/html"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/unicode"
)

// prescanBytes bounds the search for <meta charset>. The HTML standard says
// 1024; real pages put long comments and scripts first, so we look further
// but stop where the body starts.
const prescanBytes = 8192

var (
	bomUTF8    = []byte{0xef, 0xbb, 0xbf}
	bomUTF16BE = []byte{0xfe, 0xff}
	bomUTF16LE = []byte{0xff, 0xfe}
)

// Decode returns the body as UTF-8 (possibly still holding invalid
// sequences, which the text builders repair), the WHATWG name of the
// encoding used and, when the bytes contradicted a declared charset, a
// warning that says so. The order: a byte order mark, the Content-Type
// charset, <meta charset> or http-equiv, then detection for pages that
// declare nothing. A declaration the bytes contradict falls back to what
// the bytes are: a BOM wins over any declaration (as in browsers); a
// declared legacy encoding loses to UTF-8 when the body is valid UTF-8
// with multi-byte sequences (servers that label UTF-8 pages "iso-8859-1"
// are common, legacy text that happens to be valid UTF-8 is vanishingly
// rare); a declared UTF-16 whose bytes are not UTF-16 (a UTF-8 page
// labelled utf-16) is read as undeclared; and bytes invalid in the
// declared encoding are read as detected when the detector is confident.
func Decode(body []byte, contentTypeCharset string) (out []byte, used, warning string) {
	if n, name := bomOf(body); n > 0 {
		out, used = decodeBOM(body, n, name)
		if declared := labelName(contentTypeCharset); declared != "" && declared != name {
			warning = fmt.Sprintf("the byte order mark says %s, Content-Type says charset=%s: read as %s", name, contentTypeCharset, used)
		}
		return out, used, warning
	}
	if contentTypeCharset != "" {
		if out, used, warning, ok := decodeDeclared(body, contentTypeCharset, "Content-Type", true); ok {
			return out, used, warning
		}
	}
	if label := prescanCharset(body); label != "" {
		if out, used, warning, ok := decodeDeclared(body, label, "<meta>", false); ok {
			return out, used, warning
		}
	}
	out, used = decodeUndeclared(body)
	return out, used, ""
}

// minConfidence is the detector's confidence (0-100) at which its guess
// overrides a declared multi-byte encoding whose bytes are invalid in it:
// Shift_JIS text labelled EUC-JP scores 100, while a guess of 50 or less is
// a single-byte encoding's, which cannot account for bytes a multi-byte
// decoder rejected better than the declaration.
const minConfidence = 60

// bomOf returns the length and encoding of a byte order mark at the start
// of body, 0 when there is none.
func bomOf(body []byte) (int, string) {
	switch {
	case bytes.HasPrefix(body, bomUTF8):
		return len(bomUTF8), "utf-8"
	case bytes.HasPrefix(body, bomUTF16BE):
		return len(bomUTF16BE), "utf-16be"
	case bytes.HasPrefix(body, bomUTF16LE):
		return len(bomUTF16LE), "utf-16le"
	}
	return 0, ""
}

func decodeBOM(body []byte, n int, name string) ([]byte, string) {
	switch name {
	case "utf-16be":
		return transcode(body[n:], unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM), name)
	case "utf-16le":
		return transcode(body[n:], unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), name)
	}
	return body[n:], name
}

// decodeDeclared decodes body in the encoding label names, or in what the
// bytes are when they contradict it, with a warning then; ok is false for a
// label that names no encoding, which is then ignored. A UTF-16 label is
// believed in a Content-Type only: inside the document it cannot be right
// (the document was readable as ASCII) and means UTF-8, as in browsers.
func decodeDeclared(body []byte, label, where string, header bool) (out []byte, used, warning string, ok bool) {
	name := labelName(label)
	if name == "" {
		return nil, "", "", false
	}
	said := func(format string, args ...any) string {
		return fmt.Sprintf("%s says charset=%s, ", where, label) + fmt.Sprintf(format, args...)
	}
	switch {
	case name == "utf-16le" || name == "utf-16be":
		if !header {
			out, used, warning = decodeUTF8(body, said)
			return out, used, warning, true
		}
		other := "utf-16le"
		if name == other {
			other = "utf-16be"
		}
		switch {
		case plausibleUTF16(body, name == "utf-16be"):
			out, used = transcode(body, utf16Named(name), name)
		case plausibleUTF16(body, other == "utf-16be"):
			out, used = transcode(body, utf16Named(other), other)
			warning = said("the bytes are %s: read as %s", strings.ToUpper(other), used)
		default:
			out, used = decodeUndeclared(body)
			warning = said("the bytes are not UTF-16: read as %s", used)
		}
		return out, used, warning, true
	case name == "utf-8":
		out, used, warning = decodeUTF8(body, said)
		return out, used, warning, true
	}
	if utf8Multibyte(body) {
		return body, "utf-8", said("the bytes are UTF-8: read as utf-8"), true
	}
	enc, _ := lookupEncoding(label)
	out, used = transcode(body, enc, name)
	if invalid := bytes.Count(out, replacement) - bytes.Count(body, replacement); invalid > 0 {
		if enc, gname, conf := guess(body); conf >= minConfidence && gname != name {
			if alt, alsoUsed := transcode(body, enc, gname); bytes.Count(alt, replacement)-bytes.Count(body, replacement) < invalid {
				out, used = alt, alsoUsed
				warning = said("%d characters are invalid in it: read as %s (detected, confidence %d)", invalid, used, conf)
			}
		}
	}
	return out, used, warning, true
}

// decodeUTF8 reads a body declared UTF-8: as it is, unless its non-ASCII
// bytes hold not one valid UTF-8 sequence and the detected encoding reads
// every one of them, which makes it legacy text. A page with valid
// sequences and a stray invalid byte stays UTF-8, the byte repaired.
func decodeUTF8(body []byte, said func(string, ...any) string) ([]byte, string, string) {
	if utf8.Valid(body) || hasUTF8Multibyte(body) {
		return body, "utf-8", ""
	}
	enc, name, conf := guess(body)
	out, used := transcode(body, enc, name)
	if bytes.Count(out, replacement) > bytes.Count(body, replacement) {
		return body, "utf-8", ""
	}
	return out, used, said("the bytes are not UTF-8: read as %s (detected, confidence %d)", used, conf)
}

// hasUTF8Multibyte reports whether b holds at least one valid multi-byte
// UTF-8 sequence.
func hasUTF8Multibyte(b []byte) bool {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			return true
		}
		i += size
	}
	return false
}

// decodeUndeclared reads a body whose charset is unknown: UTF-8 when it is
// valid UTF-8, else as detected.
func decodeUndeclared(body []byte) ([]byte, string) {
	if utf8.Valid(body) {
		return body, "utf-8"
	}
	enc, name := detect(body)
	return transcode(body, enc, name)
}

// replacement is U+FFFD in UTF-8: what decoders put for bytes they cannot map.
var replacement = []byte("\uFFFD")

// labelName is the WHATWG name of the encoding label names, "" when it
// names none (or only the replacement encoding).
func labelName(label string) string {
	switch {
	case label == "":
		return ""
	case strings.EqualFold(label, "utf-8"), strings.EqualFold(label, "utf8"):
		return "utf-8" // nearly every page: no table lookup
	}
	enc, err := htmlindex.Get(label)
	if err != nil {
		return ""
	}
	name, err := htmlindex.Name(enc)
	if err != nil || name == "replacement" {
		return ""
	}
	return name
}

func utf16Named(name string) encoding.Encoding {
	if name == "utf-16be" {
		return unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)
	}
	return unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)
}

// utf16Window is how much of a body plausibleUTF16 looks at.
const utf16Window = 4096

// plausibleUTF16 reports whether body reads as UTF-16 HTML in the byte
// order given: no unpaired surrogate, and markup's ASCII, code units whose
// high byte is zero, in at least one unit of sixteen. Text in any
// ASCII-compatible encoding has no zero bytes, so read as UTF-16 it has no
// such units at all.
func plausibleUTF16(body []byte, bigEndian bool) bool {
	if len(body) > utf16Window {
		body = body[:utf16Window]
	}
	units, ascii := 0, 0
	pendingHigh := false
	for i := 0; i+1 < len(body); i += 2 {
		hi, lo := body[i+1], body[i]
		if bigEndian {
			hi, lo = lo, hi
		}
		u := uint16(hi)<<8 | uint16(lo)
		switch {
		case u >= 0xd800 && u < 0xdc00:
			if pendingHigh {
				return false
			}
			pendingHigh = true
		case u >= 0xdc00 && u < 0xe000:
			if !pendingHigh {
				return false
			}
			pendingHigh = false
		default:
			if pendingHigh {
				return false
			}
			if hi == 0 && lo != 0 {
				ascii++
			}
		}
		units++
	}
	return units > 0 && ascii*16 >= units
}

// lookupEncoding maps a charset label to an encoding by the WHATWG table,
// so "iso-8859-1" and "latin1" decode as windows-1252, as browsers do.
// UTF-16 labels mean UTF-8 here: decodeDeclared decides UTF-16 itself.
func lookupEncoding(label string) (encoding.Encoding, string) {
	name := labelName(label)
	switch name {
	case "":
		return nil, ""
	case "utf-16be", "utf-16le", "utf-8":
		return encoding.Nop, "utf-8"
	}
	enc, _ := htmlindex.Get(label)
	return enc, name
}

// utf8Multibyte reports whether b is valid UTF-8 with at least one
// non-ASCII character.
func utf8Multibyte(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return utf8.Valid(b)
		}
	}
	return false
}

func transcode(body []byte, enc encoding.Encoding, name string) ([]byte, string) {
	if enc == encoding.Nop {
		return body, name
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		// Decoders replace what they cannot map; an error here means
		// a broken decoder state, and raw bytes repaired later beat
		// losing the page.
		return body, "utf-8"
	}
	return out, name
}

// detect guesses the encoding of a page that declares none and is not
// UTF-8. Windows-1252 is the fallback, as in browsers for most locales.
func detect(body []byte) (encoding.Encoding, string) {
	enc, name, _ := guess(body)
	return enc, name
}

// guess is the detector's most confident encoding other than UTF-8, with
// its confidence (0-100); windows-1252 with confidence 0 when it has none.
// The detector sees the text from just before the first non-ASCII byte,
// because pages often open with kilobytes of ASCII script that would
// otherwise fill its 8 KiB window.
func guess(body []byte) (encoding.Encoding, string, int) {
	start := 0
	for i, c := range body {
		if c >= utf8.RuneSelf {
			start = i
			break
		}
	}
	if j := bytes.LastIndexByte(body[:start], '>'); j >= 0 {
		start = j + 1
	} else {
		start = 0
	}
	if all, err := chardet.NewHtmlDetector().DetectAll(body[start:]); err == nil {
		r := bestGuess(all)
		for _, label := range []string{r.Charset, strings.ReplaceAll(r.Charset, "-", "")} {
			if enc, name := lookupEncoding(label); enc != nil && name != "utf-8" {
				return enc, name, r.Confidence
			}
		}
	}
	enc, name := lookupEncoding("windows-1252")
	return enc, name, 0
}

// bestGuess picks the detector's most confident guess. The detector runs
// its recognizers concurrently and sorts their results unstably, so guesses
// of equal confidence come back in any order (Latin-1 text scores the same
// as ISO-8859-1 and windows-1254, say); the tie goes to the browsers'
// fallback, windows-1252 and its subset ISO-8859-1, then to the first name,
// so a page decodes the same way every time.
func bestGuess(all []chardet.Result) chardet.Result {
	best := all[0]
	for _, r := range all[1:] {
		if r.Confidence != best.Confidence {
			break
		}
		if latin1(r.Charset) != latin1(best.Charset) {
			if latin1(r.Charset) {
				best = r
			}
			continue
		}
		if r.Charset < best.Charset {
			best = r
		}
	}
	return best
}

func latin1(charset string) bool {
	return strings.EqualFold(charset, "windows-1252") || strings.EqualFold(charset, "ISO-8859-1")
}

// prescanCharset finds the charset a <meta> in the head declares, skipping
// comments and stopping at the first element that belongs to the body.
func prescanCharset(body []byte) string {
	if len(body) > prescanBytes {
		body = body[:prescanBytes]
	}
	if !containsFold(body, "charset") {
		return ""
	}
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			switch string(name) {
			case "meta":
				if !hasAttr {
					continue
				}
				var charset, httpEquiv, content string
				for more := true; more; {
					var k, v []byte
					k, v, more = z.TagAttr()
					switch string(k) {
					case "charset":
						charset = string(v)
					case "http-equiv":
						httpEquiv = string(v)
					case "content":
						content = string(v)
					}
				}
				if c := strings.TrimSpace(charset); c != "" {
					return c
				}
				if strings.EqualFold(strings.TrimSpace(httpEquiv), "content-type") {
					if c := lenientCharset(content); c != "" {
						return c
					}
				}
			case "body", "p", "div", "h1", "h2", "h3", "table", "ul", "main", "article", "section":
				return ""
			}
		}
	}
}

// lenientCharset extracts the charset parameter of a Content-Type
// value the lenient way the HTML standard does for meta elements:
// `text/html; charset="utf-8"` and `text/html;charset=utf-8` alike.
func lenientCharset(ct string) string {
	lower := strings.ToLower(ct)
	for i := 0; ; {
		j := strings.Index(lower[i:], "charset")
		if j < 0 {
			return ""
		}
		k := i + j + len("charset")
		for k < len(ct) && (ct[k] == ' ' || ct[k] == '\t') {
			k++
		}
		if k >= len(ct) || ct[k] != '=' {
			i = k
			continue
		}
		k++
		for k < len(ct) && (ct[k] == ' ' || ct[k] == '\t') {
			k++
		}
		if k >= len(ct) {
			return ""
		}
		if q := ct[k]; q == '"' || q == '\'' {
			end := strings.IndexByte(ct[k+1:], q)
			if end < 0 {
				return ""
			}
			return strings.TrimSpace(ct[k+1 : k+1+end])
		}
		end := k
		for end < len(ct) && ct[end] != ';' && ct[end] != ' ' && ct[end] != '\t' {
			end++
		}
		return ct[k:end]
	}
}

// containsFold reports whether b contains the lower-case ASCII word w in
// any case.
func containsFold(b []byte, w string) bool {
	for i := 0; i+len(w) <= len(b); i++ {
		j := 0
		for ; j < len(w); j++ {
			c := b[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != w[j] {
				break
			}
		}
		if j == len(w) {
			return true
		}
	}
	return false
}

// OfContentType is the charset parameter of a Content-Type value, ""
// when it names none.
func OfContentType(ct string) string {
	if !strings.Contains(ct, ";") {
		return ""
	}
	_, params, err := mime.ParseMediaType(ct)
	if err != nil {
		// Lenient fallback for values such as "text/html;;charset=x".
		return lenientCharset(ct)
	}
	return strings.TrimSpace(params["charset"])
}
