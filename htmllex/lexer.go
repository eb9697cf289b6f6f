// Package htmllex splits an HTML page held in memory into the tokens of
// golang.org/x/net/html's Tokenizer, several times faster: a Lexer for the
// tokens, ParseAttrs for the attributes of a start tag as spans of its
// bytes, and AppendAttrValue for an attribute value decoded as the HTML
// Standard's tokenizer decodes it (character references, line breaks, NUL).
package htmllex

import (
	"bytes"

	"golang.org/x/net/html"
)

// Lexer splits a page into tokens, as golang.org/x/net/html's Tokenizer
// does, over a byte slice already in memory. A caller reads the attributes
// of a tag from its raw bytes (ParseAttrs), so the lexer only finds where each tag ends (minding quoted
// values); that, and looking for '<' with IndexByte instead of reading a
// byte at a time, makes it several times faster than the Tokenizer, which
// copies and records every attribute of every tag. Character references in
// text are decoded by the Tokenizer's own html.UnescapeString, only in text
// that has an '&'; attribute values have rules of their own (charref.go).
//
// lexer_test.go checks it token for token against the Tokenizer on the
// golden pages and under fuzzing.
type Lexer struct {
	buf    []byte
	pos    int
	raw    []byte // the last token's bytes as written
	data   []byte // its text (TextToken, CommentToken), undecoded
	rawTag string // after a raw text element's start tag: its name
	// textIsRaw: the last text came from a raw text element, so entities
	// stay as written (script, style…; not title or textarea).
	textIsRaw bool
	// convertNUL: in raw text and comments a NUL reads as U+FFFD.
	convertNUL bool
	out, dec   []byte // text with newlines normalised, and decoded: reused
}

// Reset starts reading page b; nil lets the lexer drop the last page,
// keeping its buffers.
func (z *Lexer) Reset(b []byte) {
	*z = Lexer{buf: b, out: z.out[:0], dec: z.dec[:0]}
}

// Raw returns the last token as written in the page.
func (z *Lexer) Raw() []byte { return z.raw }

// NextIsNotRawText says the start tag just read does not begin raw text
// (<style> inside <svg>, say).
func (z *Lexer) NextIsNotRawText() { z.rawTag = "" }

// Text returns the text of the last text or comment token, with newlines
// normalised and, outside raw text, entities decoded. It is valid until
// the next call to Next.
func (z *Lexer) Text() []byte {
	s := z.data
	if bytes.IndexByte(s, '\r') >= 0 {
		z.out = append(z.out[:0], s...)
		s = crlfToLF(z.out)
	}
	if z.convertNUL && bytes.IndexByte(s, 0) >= 0 {
		s = bytes.ReplaceAll(s, []byte{0}, []byte("\uFFFD"))
	}
	if !z.textIsRaw && bytes.IndexByte(s, '&') >= 0 {
		if dec, ok := unescapeCommon(z.dec[:0], s); ok {
			z.dec = dec
			return dec
		}
		return []byte(html.UnescapeString(string(s)))
	}
	return s
}

// crlfToLF turns "\r\n" and a lone "\r" into "\n" in place.
func crlfToLF(b []byte) []byte {
	w := 0
	for r := 0; r < len(b); r++ {
		c := b[r]
		if c == '\r' {
			c = '\n'
			if r+1 < len(b) && b[r+1] == '\n' {
				r++
			}
		}
		b[w] = c
		w++
	}
	return b[:w]
}

// Next reads the next token.
func (z *Lexer) Next() html.TokenType {
	start := z.pos
	z.textIsRaw, z.convertNUL = false, false
	if z.rawTag != "" {
		tag := z.rawTag
		z.rawTag = ""
		end := len(z.buf)
		switch tag {
		case "plaintext":
		case "script":
			end = scriptEnd(z.buf, start)
		default:
			end = rawEnd(z.buf, start, tag)
		}
		if end > start {
			z.pos = end
			z.raw, z.data = z.buf[start:end], z.buf[start:end]
			z.textIsRaw = tag != "textarea" && tag != "title"
			z.convertNUL = true
			return html.TextToken
		}
	}
	b := z.buf
	for i := start; ; {
		j := bytes.IndexByte(b[i:], '<')
		if j < 0 || i+j+1 >= len(b) {
			break // the rest is text (a '<' at the very end too)
		}
		i += j
		c := b[i+1]
		if !isLetter(c) && c != '/' && c != '!' && c != '?' {
			i++ // a '<' that begins no markup is text
			continue
		}
		if i > start {
			z.pos = i
			z.raw, z.data = b[start:i], b[start:i]
			return html.TextToken
		}
		return z.markup(i, c)
	}
	if start < len(b) {
		z.pos = len(b)
		z.raw, z.data = b[start:], b[start:]
		return html.TextToken
	}
	z.raw, z.data = nil, nil
	return html.ErrorToken
}

// markup reads the tag, comment or declaration starting at b[i] == '<',
// whose next byte is c.
func (z *Lexer) markup(i int, c byte) html.TokenType {
	b := z.buf
	switch {
	case isLetter(c):
		nameEnd, end := tagEnd(b, i+1, nil)
		if end < 0 {
			return z.eof()
		}
		z.token(i, end, nil)
		z.rawTag = rawTextElement(b[i+1 : nameEnd])
		if b[end-2] == '/' {
			// Not when the '/' ends an unquoted value (<a href=x/>): the
			// Tokenizer's test, on the last attribute it keeps.
			var t attrTrack
			tagEnd(b, i+1, &t)
			if t.lastValEnd < 0 || t.lastValEnd-1 != end-2 {
				return html.SelfClosingTagToken
			}
		}
		return html.StartTagToken
	case c == '/':
		if i+2 >= len(b) {
			// "</" at the end of the page is text.
			z.token(i, len(b), b[i:])
			z.convertNUL = false
			return html.TextToken
		}
		switch d := b[i+2]; {
		case d == '>':
			// "</>" is no token at all; an empty comment stands for it.
			z.token(i, i+3, b[i+3:i+3])
			return html.CommentToken
		case isLetter(d):
			_, end := tagEnd(b, i+2, nil)
			if end < 0 {
				return z.eof()
			}
			z.token(i, end, nil)
			return html.EndTagToken
		}
		return z.bogusComment(i, i+2)
	case c == '?':
		return z.bogusComment(i, i+1)
	}
	// "<!": a comment, a doctype or a bogus comment.
	if bytes.HasPrefix(b[i+2:], []byte("--")) {
		dataStart := i + 4
		dataEnd, end := commentEnd(b, dataStart)
		z.token(i, end, b[dataStart:dataEnd])
		return html.CommentToken
	}
	if len(b)-(i+2) >= 7 && bytes.EqualFold(b[i+2:i+9], []byte("doctype")) {
		dataEnd, end := closeAngle(b, i+9)
		z.token(i, end, b[i+9:dataEnd])
		return html.DoctypeToken
	}
	return z.bogusComment(i, i+2)
}

func (z *Lexer) token(start, end int, data []byte) {
	z.pos = end
	z.raw, z.data = z.buf[start:end], data
	z.convertNUL = data != nil // comments and doctypes
}

func (z *Lexer) bogusComment(start, dataStart int) html.TokenType {
	dataEnd, end := closeAngle(z.buf, dataStart)
	z.token(start, end, z.buf[dataStart:dataEnd])
	return html.CommentToken
}

// eof ends the page inside an unfinished tag, which is dropped.
func (z *Lexer) eof() html.TokenType {
	z.pos = len(z.buf)
	z.raw, z.data = nil, nil
	return html.ErrorToken
}

// closeAngle finds the '>' ending a bogus comment or doctype from i:
// the data's end and the token's; at the end of the page both are len(b).
func closeAngle(b []byte, i int) (dataEnd, end int) {
	if j := bytes.IndexByte(b[i:], '>'); j >= 0 {
		return i + j, i + j + 1
	}
	return len(b), len(b)
}

// commentEnd finds the end of a comment whose data starts at i (after
// "<!--"): "-->" or "--!>", and "<!-->" or "<!--->" for an empty comment.
// An unclosed comment runs to the end of the page.
func commentEnd(b []byte, i int) (dataEnd, end int) {
	dashes := 0
	beginning := true
	for k := i; k < len(b); k++ {
		switch b[k] {
		case '-':
			dashes++
			continue
		case '>':
			if dashes >= 2 || beginning {
				return max(k-2, i), k + 1
			}
		case '!':
			if dashes >= 2 && k+1 < len(b) {
				switch b[k+1] {
				case '>':
					return max(k-2, i), k + 2
				case '-':
					k++
					dashes, beginning = 1, false
					continue
				}
			}
		}
		dashes, beginning = 0, false
	}
	// Unclosed: the data runs to the end of the page, less the start of a
	// closing it did not finish.
	data := b[i:]
	switch {
	case bytes.HasSuffix(data, []byte("--!")):
		return len(b) - 3, len(b)
	case bytes.HasSuffix(data, []byte("--")):
		return len(b) - 2, len(b)
	case bytes.HasSuffix(data, []byte("-")):
		return len(b) - 1, len(b)
	}
	return len(b), len(b)
}

// attrTrack follows the attributes the Tokenizer keeps (a non-empty name
// not seen before in the tag) for the one question that needs them.
type attrTrack struct {
	keys       [][]byte
	lastValEnd int // where the value of the last kept attribute ends; -1: none
}

func (t *attrTrack) attr(key []byte, valEnd int) {
	if len(key) == 0 {
		return
	}
	for _, k := range t.keys {
		if EqualFoldASCII(k, key) {
			return
		}
	}
	t.keys = append(t.keys, key)
	t.lastValEnd = valEnd
}

// tagEnd scans a tag whose name starts at i: where the name ends, and the
// index after the closing '>', or -1 when the page ends first. It follows
// the Tokenizer's attribute states, so a '>' inside a quoted value does not
// end the tag. With t set it records the attributes.
func tagEnd(b []byte, i int, t *attrTrack) (nameEnd, end int) {
	if t != nil {
		t.lastValEnd = -1
	}
	n := len(b)
	for i < n && !IsSpace(b[i]) && b[i] != '/' && b[i] != '>' {
		i++
	}
	nameEnd = i
	for {
		for i < n && IsSpace(b[i]) {
			i++
		}
		if i >= n {
			return nameEnd, -1
		}
		if b[i] == '>' {
			return nameEnd, i + 1
		}
		// An attribute name; '=' is part of it only as its first byte.
		k := i
		for i < n {
			c := b[i]
			if c == '=' && i == k {
				i++
				continue
			}
			if IsSpace(c) || c == '/' || c == '>' || c == '=' {
				break
			}
			i++
		}
		key := b[k:i]
		valEnd := i // no value: it ends where the name does
		for i < n && IsSpace(b[i]) {
			i++
		}
		if i >= n {
			return nameEnd, -1
		}
		switch b[i] {
		case '/':
			i++
			t.record(key, valEnd)
			continue
		case '=':
		default:
			t.record(key, valEnd)
			continue
		}
		i++
		for i < n && IsSpace(b[i]) {
			i++
		}
		if i >= n {
			return nameEnd, -1
		}
		switch q := b[i]; q {
		case '>':
		case '"', '\'':
			j := bytes.IndexByte(b[i+1:], q)
			if j < 0 {
				return nameEnd, -1
			}
			valEnd = i + 1 + j
			i += j + 2
		default:
			for i < n && !IsSpace(b[i]) && b[i] != '>' {
				i++
			}
			valEnd = i
		}
		t.record(key, valEnd)
	}
}

func (t *attrTrack) record(key []byte, valEnd int) {
	if t != nil {
		t.attr(key, valEnd)
	}
}

// rawEnd finds where the raw text of element tag, starting at i, ends:
// before "</tag" followed by a space, '/' or '>', or at the end of the page.
func rawEnd(b []byte, i int, tag string) int {
	for {
		j := bytes.Index(b[i:], []byte("</"))
		if j < 0 {
			return len(b)
		}
		i += j
		if endTagAt(b, i, tag) {
			return i
		}
		i += 2
	}
}

// endTagAt reports whether "</tag" and a space, '/' or '>' start at b[i].
func endTagAt(b []byte, i int, tag string) bool {
	k := i + 2 + len(tag)
	return k < len(b) && b[i+1] == '/' && bytes.EqualFold(b[i+2:k], []byte(tag)) && isEndTagDelim(b[k])
}

// scriptEnd is rawEnd for <script>, with the script data escape states of
// the HTML standard: inside "<!--", a "<script" starts a nested part that
// only "-->" or "</script" leaves, so a </script> within it does not end
// the element.
func scriptEnd(b []byte, i int) int {
	const (
		data = iota
		escaped
		doubleEscaped
	)
	state := data
	for k := i; k < len(b); k++ {
		switch b[k] {
		case '<':
			switch {
			case state == data && bytes.HasPrefix(b[k+1:], []byte("!--")):
				// Its dashes may already close it again ("<!-->").
				state = escaped
				k++
			case state != doubleEscaped && endTagAt(b, k, "script"):
				return k
			case state == doubleEscaped && endTagAt(b, k, "script"):
				state = escaped
				k += 7
			case state == escaped && startTagAt(b, k, "script"):
				state = doubleEscaped
				k += 6
			}
		case '-':
			if state != data && bytes.HasPrefix(b[k:], []byte("-->")) {
				state = data
				k += 2
			}
		}
	}
	return len(b)
}

// startTagAt reports whether "<tag" and a space, '/' or '>' start at b[i].
func startTagAt(b []byte, i int, tag string) bool {
	k := i + 1 + len(tag)
	return k < len(b) && bytes.EqualFold(b[i+1:k], []byte(tag)) && isEndTagDelim(b[k])
}

func isEndTagDelim(c byte) bool { return IsSpace(c) || c == '/' || c == '>' }

// IsSpace reports whether c is ASCII whitespace as HTML defines it.
func IsSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' }

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// rawTextElements begin raw text or RCDATA for the Tokenizer.
var rawTextElements = []string{"iframe", "noembed", "noframes", "noscript", "plaintext", "script", "style", "textarea", "title", "xmp"}

// rawTextElement returns the lower-case name of a start tag that begins
// raw text, or "".
func rawTextElement(name []byte) string {
	if len(name) < 3 || len(name) > 9 {
		return ""
	}
	for _, e := range rawTextElements {
		if bytes.EqualFold(name, []byte(e)) {
			return e
		}
	}
	return ""
}
