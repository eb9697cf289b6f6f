package document

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text builds a body the way every reader should: runs of white space
// become one space, a block ends with one line break, no line is empty,
// invalid UTF-8 becomes U+FFFD, and the text stops at its byte limit on a
// character boundary. Readers stop reading once Full says so.
type Text struct {
	b         strings.Builder
	max       int
	space     bool // a space is owed before the next word
	truncated bool
}

// NewText is a Text of at most max bytes.
func NewText(max int) *Text {
	if max <= 0 {
		max = DefaultMaxText
	}
	return &Text{max: max}
}

// WriteString adds s to the current block.
func (t *Text) WriteString(s string) {
	for _, r := range s {
		if t.truncated {
			return
		}
		t.add(r)
	}
}

// WriteBytes adds b to the current block, as WriteString does, without
// a string copy of b: a reader's text run may be megabytes of which the
// body keeps a few.
func (t *Text) WriteBytes(b []byte) {
	for len(b) > 0 && !t.truncated {
		r, n := utf8.DecodeRune(b)
		b = b[n:]
		t.add(r)
	}
}

func (t *Text) add(r rune) {
	if unicode.IsSpace(r) || r == 0 {
		t.space = t.b.Len() > 0 && !t.atLineStart()
		return
	}
	if r == utf8.RuneError {
		r = unicode.ReplacementChar
	}
	if t.space {
		t.put(' ')
		t.space = false
	}
	t.put(r)
}

// Space ends a word: what follows is separated from it, as a table cell
// is from the next.
func (t *Text) Space() {
	if t.b.Len() > 0 && !t.atLineStart() {
		t.space = true
	}
}

// Break ends the current block.
func (t *Text) Break() {
	t.space = false
	if t.b.Len() > 0 && !t.atLineStart() && !t.truncated {
		t.put('\n')
	}
}

// Full says the limit was reached: the rest of the file need not be read.
func (t *Text) Full() bool { return t.truncated }

// Len is the bytes written so far.
func (t *Text) Len() int { return t.b.Len() }

// String is the text without a trailing line break.
func (t *Text) String() string { return strings.TrimRight(t.b.String(), "\n") }

// Truncated says text was dropped at the limit.
func (t *Text) Truncated() bool { return t.truncated }

func (t *Text) atLineStart() bool {
	s := t.b.String()
	return s[len(s)-1] == '\n'
}

func (t *Text) put(r rune) {
	if t.b.Len()+utf8.RuneLen(r) > t.max {
		t.truncated = true
		return
	}
	t.b.WriteRune(r)
}
