package mapping

import (
	"bytes"
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

// decodeBody returns the body as UTF-8 (possibly still holding invalid
// sequences, which the text builders repair) and the WHATWG name of the
// encoding used. The order: a byte order mark, the Content-Type charset,
// <meta charset> or http-equiv, then detection for pages that declare
// nothing. A declared legacy encoding loses to UTF-8 when the body is valid
// UTF-8 with multi-byte sequences: servers that label UTF-8 pages
// "iso-8859-1" are common, while legacy text that happens to be valid UTF-8
// is vanishingly rare.
func decodeBody(body []byte, contentTypeCharset string) ([]byte, string) {
	switch {
	case bytes.HasPrefix(body, bomUTF8):
		return body[len(bomUTF8):], "utf-8"
	case bytes.HasPrefix(body, bomUTF16BE):
		return transcode(body, unicode.UTF16(unicode.BigEndian, unicode.UseBOM), "utf-16be")
	case bytes.HasPrefix(body, bomUTF16LE):
		return transcode(body, unicode.UTF16(unicode.LittleEndian, unicode.UseBOM), "utf-16le")
	}
	for i := 0; i < 2; i++ {
		label := contentTypeCharset
		if i == 1 {
			label = prescanCharset(body)
		}
		if label == "" {
			continue
		}
		if isUTF8Label(label) {
			return body, "utf-8"
		}
		if enc, name := lookupEncoding(label); enc != nil {
			if name == "utf-8" || utf8Multibyte(body) {
				return body, "utf-8"
			}
			return transcode(body, enc, name)
		}
	}
	if utf8.Valid(body) {
		return body, "utf-8"
	}
	enc, name := detect(body)
	return transcode(body, enc, name)
}

func isUTF8Label(l string) bool {
	return strings.EqualFold(l, "utf-8") || strings.EqualFold(l, "utf8")
}

// lookupEncoding maps a charset label to an encoding by the WHATWG table,
// so "iso-8859-1" and "latin1" decode as windows-1252, as browsers do.
// UTF-16 labels found inside the document cannot be right (the document
// was readable as ASCII) and mean UTF-8, also as browsers do.
func lookupEncoding(label string) (encoding.Encoding, string) {
	enc, err := htmlindex.Get(label)
	if err != nil {
		return nil, ""
	}
	name, err := htmlindex.Name(enc)
	if err != nil {
		return nil, ""
	}
	switch name {
	case "utf-16be", "utf-16le", "utf-8":
		return encoding.Nop, "utf-8"
	case "replacement":
		return nil, ""
	}
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
// UTF-8. The detector sees the text from just before the first non-ASCII
// byte, because pages often open with kilobytes of ASCII script that would
// otherwise fill its 8 KiB window. Windows-1252 is the fallback, as in
// browsers for most locales.
func detect(body []byte) (encoding.Encoding, string) {
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
				return enc, name
			}
		}
	}
	enc, name := lookupEncoding("windows-1252")
	return enc, name
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
					if c := charsetFromContentType(content); c != "" {
						return c
					}
				}
			case "body", "p", "div", "h1", "h2", "h3", "table", "ul", "main", "article", "section":
				return ""
			}
		}
	}
}

// charsetFromContentType extracts the charset parameter of a Content-Type
// value the lenient way the HTML standard does for meta elements:
// `text/html; charset="utf-8"` and `text/html;charset=utf-8` alike.
func charsetFromContentType(ct string) string {
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
