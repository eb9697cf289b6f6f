package mapping

import (
	"unicode"
	"unicode/utf8"
)

// Separators between pieces of text, weakest first. A stronger one pending
// wins over a weaker one.
const (
	sepNone  uint8 = iota
	sepSoft        // an element edge that may or may not separate words
	sepSpace       // whitespace in the text, a table cell edge
	sepLine        // a block edge: paragraph, list item, heading, br
)

// textBuf builds whitespace-normalised text. Runs of whitespace become one
// space, block edges one newline, nothing leads or trails, and the result is
// valid UTF-8 without control characters. With max > 0 it stops at max bytes,
// cut on a character boundary, and records that in full.
type textBuf struct {
	b         []byte
	max       int
	full      bool
	lineBreak bool // false folds sepLine into a space (titles, headings)
	pre       bool // inside <pre>: a newline in the text is a line break
	pending   uint8
	last      rune // last rune written, for soft separators
}

func (t *textBuf) reset(max int, lineBreak bool) {
	t.b = t.b[:0]
	t.max = max
	t.full = false
	t.lineBreak = lineBreak
	t.pre = false
	t.pending = sepNone
	t.last = 0
}

func (t *textBuf) sep(k uint8) {
	if k > t.pending {
		t.pending = k
	}
}

// write appends text, normalising whitespace.
func (t *textBuf) write(s []byte) {
	if t.full {
		return
	}
	run := -1 // start of the current run of visible characters
	var first, last rune
	for i := 0; i < len(s); {
		c := s[i]
		if c > ' ' && c < 0x7f {
			if run < 0 {
				run, first = i, rune(c)
			}
			// A run goes on over single spaces between visible ASCII
			// characters, so ordinary prose is copied a phrase at a time.
			j := i + 1
			for j < len(s) {
				if c := s[j]; c > ' ' && c < 0x7f {
					j++
				} else if c == ' ' && j+1 < len(s) && s[j+1] > ' ' && s[j+1] < 0x7f {
					j += 2
				} else {
					break
				}
			}
			last = rune(s[j-1])
			i = j
			continue
		}
		k, size := sepNone, 1
		var r rune
		if c < utf8.RuneSelf {
			switch {
			case c == '\n' && t.pre:
				k = sepLine
			case c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
				k = sepSpace
			}
			// Other control characters are dropped.
		} else {
			r, size = utf8.DecodeRune(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				if run >= 0 {
					t.put(s[run:i], first, last)
					run = -1
				}
				t.put(replacementChar, utf8.RuneError, utf8.RuneError)
				i++
				continue
			case unicode.IsSpace(r):
				k = sepSpace
			case !invisible(r):
				if run < 0 {
					run, first = i, r
				}
				last = r
				i += size
				continue
			}
		}
		if run >= 0 {
			t.put(s[run:i], first, last)
			run = -1
		}
		t.sep(k)
		i += size
	}
	if run >= 0 {
		t.put(s[run:], first, last)
	}
}

var replacementChar = []byte("\uFFFD")

// invisible runes carry no text: C1 controls, soft hyphens, zero-width
// spaces and joiners used as word-break hints, byte order marks.
func invisible(r rune) bool {
	return r < 0xa0 || r == 0xad || r == 0x200b || r == 0x2060 || r == 0xfeff
}

// put appends one run of visible characters, preceded by the pending
// separator.
func (t *textBuf) put(run []byte, first, last rune) {
	if t.full || len(run) == 0 {
		return
	}
	var sep byte
	if len(t.b) > 0 {
		switch t.pending {
		case sepLine:
			sep = ' '
			if t.lineBreak {
				sep = '\n'
			}
		case sepSpace:
			sep = ' '
		case sepSoft:
			if !attachesLeft(first) && !attachesRight(t.last) {
				sep = ' '
			}
		}
	}
	t.pending = sepNone
	n := len(run)
	if sep != 0 {
		n++
	}
	if t.max > 0 && len(t.b)+n > t.max {
		room := t.max - len(t.b)
		if sep != 0 {
			room--
		}
		for room > 0 && room < len(run) && !utf8.RuneStart(run[room]) {
			room--
		}
		for room > 0 && run[room-1] == ' ' {
			room-- // a run may hold single spaces; none may end the text
		}
		if room > 0 {
			if sep != 0 {
				t.b = append(t.b, sep)
			}
			t.b = append(t.b, run[:room]...)
		}
		t.full = true
		return
	}
	if sep != 0 {
		t.b = append(t.b, sep)
	}
	t.b = append(t.b, run...)
	t.last = last
}

// attachesLeft is punctuation that belongs to the word before it, so an
// element edge before it is no word break: "<a>here</a>." stays "here.".
func attachesLeft(r rune) bool {
	switch r {
	case '.', ',', ';', ':', '!', '?', ')', ']', '}', '%', '\'', '"', '’', '”', '»', '…':
		return true
	}
	return false
}

// attachesRight is punctuation that belongs to the word after it.
func attachesRight(r rune) bool {
	switch r {
	case '(', '[', '{', '\'', '"', '‘', '“', '«', '/', '#', '@', '$', '€', '£':
		return true
	}
	return false
}

// normalize returns s with whitespace normalised, as one line.
func (t *textBuf) normalize(s []byte) string {
	t.reset(0, false)
	t.write(s)
	return string(t.b)
}
