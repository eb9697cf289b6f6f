// Package wordmatch scores an extracted text against a reference text
// (poppler's pdftotext): the measures document/pdf's tests assert and
// bench/pdfcompare reports.
package wordmatch

import (
	"regexp"
	"strings"
	"unicode"
)

var wordRE = regexp.MustCompile(`[\p{L}\p{N}]+`)

// Words are s's runs of letters and digits, lower-cased, but a Han,
// Hiragana or Katakana character is a word of its own: Chinese and
// Japanese put no spaces between words, so a run would span a phrase and
// end wherever the reference happened to break a line, and the measure
// would score line breaks. A ligature character (U+FB00..U+FB06) is a
// letter that matches nothing in a decomposed text.
func Words(s string) []string {
	var b strings.Builder
	for _, r := range s {
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana) {
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return wordRE.FindAllString(b.String(), -1)
}

// Recall is the share of ref's words that text has, as bags: a word twice
// in ref must be twice in text to count twice.
func Recall(ref, text []string) float64 {
	if len(ref) == 0 {
		return 1
	}
	bag := map[string]int{}
	for _, w := range text {
		bag[w]++
	}
	hit := 0
	for _, w := range ref {
		if bag[w] > 0 {
			bag[w]--
			hit++
		}
	}
	return float64(hit) / float64(len(ref))
}

// Order is the share of ref's word bigrams (pairs of consecutive words)
// found among text's, as bags: words glued together, columns interleaved
// or lines shuffled lower it where Recall does not notice.
func Order(ref, text []string) float64 {
	if len(ref) < 2 {
		return 1
	}
	bi := map[[2]string]int{}
	for i := 1; i < len(text); i++ {
		bi[[2]string{text[i-1], text[i]}]++
	}
	hit := 0
	for i := 1; i < len(ref); i++ {
		k := [2]string{ref[i-1], ref[i]}
		if bi[k] > 0 {
			bi[k]--
			hit++
		}
	}
	return float64(hit) / float64(len(ref)-1)
}
