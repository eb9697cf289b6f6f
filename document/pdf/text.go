package pdf

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/crawlspace/crawlspace/document"
)

// ligatures are the presentation forms a font's ToUnicode map may give
// for a ligature glyph; a search for "file" must find "ﬁle".
var ligatures = strings.NewReplacer(
	"ﬀ", "ff", "ﬁ", "fi", "ﬂ", "fl", "ﬃ", "ffi", "ﬄ", "ffl", "ﬅ", "st", "ﬆ", "st",
	// PDFium writes U+FFFE where it took a hyphen at a line end for a
	// break in a word, and has already joined the two lines: dropping it
	// rejoins the word, as pdftotext does. U+0002 is the same mark in
	// older PDFium builds; a soft hyphen is invisible.
	"\ufffe", "", "\u0002", "", "\u00ad", "",
)

// shortLine is the share of a page's longest line under which a line ends
// its paragraph: the last line of a paragraph, a heading, a list item.
const shortLine = 0.7

// writePage adds a page's text, as PDFium gives it (lines in reading order
// ending with CR LF), to body: the lines of a paragraph joined with a
// space, a paragraph's end and the page's end as a Break. PDFium does not
// tell paragraphs apart; a line much shorter than the page's longest is
// taken for the last of its paragraph, which is cheap and right for most
// running text.
func writePage(body *document.Text, text string) {
	text = ligatures.Replace(text)
	lines := strings.FieldsFunc(text, func(r rune) bool { return r == '\r' || r == '\n' })
	longest := 0
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
		longest = max(longest, utf8.RuneCountInString(lines[i]))
	}
	for i, l := range lines {
		if body.Full() {
			return
		}
		if l == "" {
			body.Break()
			continue
		}
		body.WriteString(l)
		if i+1 == len(lines) || float64(utf8.RuneCountInString(l)) < shortLine*float64(longest) {
			body.Break()
			continue
		}
		last, _ := utf8.DecodeLastRuneInString(l)
		next, _ := utf8.DecodeRuneInString(lines[i+1])
		switch {
		case noSpaces(last) && noSpaces(next):
			// Chinese and Japanese lines join without a space.
		case last == '-' && unicode.IsLetter(next) && len(l) > 1 && endsInLetter(l[:len(l)-1]):
			// A hyphen PDFium kept belongs to the word ("well-known").
		default:
			body.Space()
		}
	}
	body.Break()
}

func endsInLetter(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return unicode.IsLetter(r)
}

// noSpaces says r belongs to a script written without spaces between
// words.
func noSpaces(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar) ||
		(r >= 0x3000 && r <= 0x303f) || (r >= 0xff00 && r <= 0xffef)
}
