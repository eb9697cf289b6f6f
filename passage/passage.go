// Package passage cuts a document into the passages that are embedded and
// searched: along its own structure first (a page's sections under their
// headings, a PDF's pages, a presentation's slides, a spreadsheet's
// sheets), then, where a part is longer than the passage size, into
// windows of whole words that overlap, ending at a line or a sentence
// where one is near.
//
// Sizes are counted in tokens the way BERT's basic tokenizer counts them
// before it splits words into pieces: a run of letters or digits is one
// token, every other visible character one more, and a CJK character one
// each. An embedding model's own tokenizer counts somewhat more, for the
// rare words it splits (docs/semantic.md gives the measured ratio).
package passage

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/crawlspace/crawlspace/docfields"
)

// Options say how a document is cut and what of it is embedded.
type Options struct {
	// MaxTokens is the size of a passage; Overlap the tokens a window
	// repeats of the one before it.
	MaxTokens int
	Overlap   int
	// MaxPassages bounds the passages of one document; the text past it
	// is not embedded.
	MaxPassages int
	// Title and Headings put the document's title and the passage's
	// heading path before its text in what is embedded.
	Title    bool
	Headings bool
	// Fingerprint names the model and everything else that makes the same
	// text embed differently: it is part of every passage's hash.
	Fingerprint string
}

// Version changes whenever Split cuts the same text differently: it is
// part of the fingerprint of an index, so passages are cut again.
const Version = 1

// part is one stretch of the body under one heading path and on one page.
type part struct {
	text     string
	headings []string
	anchor   string
	page     int
}

// Split cuts d's body into passages, in body order, each with its text,
// heading path, URL and hash; vectors are left to the caller. The second
// result is the passages left out past MaxPassages.
func Split(d *docfields.Document, o Options) ([]docfields.Passage, int) {
	var out []docfields.Passage
	dropped := 0
	for _, pt := range parts(d) {
		for _, text := range windows(pt.text, o.MaxTokens, o.Overlap) {
			if o.MaxPassages > 0 && len(out) >= o.MaxPassages {
				dropped++
				continue
			}
			p := docfields.Passage{Text: text, Headings: pt.headings, URL: link(d, pt.anchor, pt.page), Page: pt.page}
			p.Hash = Hash(Embedded(d.Title, &p, o), o.Fingerprint)
			out = append(out, p)
		}
	}
	return out, dropped
}

// Embedded is what is sent to the model for passage p of a document
// titled title: the title and the heading path, as o asks, on lines before
// the passage's text. A heading that repeats the title is left out.
func Embedded(title string, p *docfields.Passage, o Options) string {
	var b strings.Builder
	if o.Title && title != "" {
		b.WriteString(title)
		b.WriteByte('\n')
	}
	if o.Headings {
		n := 0
		for _, h := range p.Headings {
			if o.Title && h == title {
				continue
			}
			if n > 0 {
				b.WriteString(" > ")
			}
			b.WriteString(h)
			n++
		}
		if n > 0 {
			b.WriteByte('\n')
		}
	}
	b.WriteString(p.Text)
	return b.String()
}

// Hash is a passage's content hash: what is embedded, and how.
func Hash(embedded, fingerprint string) string {
	h := sha256.New()
	h.Write([]byte(fingerprint))
	h.Write([]byte{0})
	h.Write([]byte(embedded))
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// link is the URL of a passage: the document's, with the section's anchor,
// or for a PDF #page=N, which PDF viewers open at that page.
func link(d *docfields.Document, anchor string, page int) string {
	switch {
	case anchor != "":
		return d.URL + "#" + (&url.URL{Fragment: anchor}).EscapedFragment()
	case page > 0 && d.ContentType == "application/pdf":
		return d.URL + "#page=" + strconv.Itoa(page)
	}
	return d.URL
}

// parts cuts the body at its sections. The text before the first section
// is a part without headings; a part is left out when nothing but its
// heading is in it.
func parts(d *docfields.Document) []part {
	body := d.Body
	var out []part
	var path []docfields.Section
	cur := part{}
	start := 0
	emit := func(end int) {
		text := strings.TrimSpace(body[start:end])
		if len(path) > 0 && path[len(path)-1].Offset == start {
			// The heading's own line opens the part: the path carries it.
			text = strings.TrimSpace(strings.TrimPrefix(text, path[len(path)-1].Title))
		}
		if text != "" {
			cur.text = text
			out = append(out, cur)
		}
	}
	for _, s := range d.Sections {
		if s.Offset < start || s.Offset >= len(body) {
			continue
		}
		emit(s.Offset)
		start = s.Offset
		if s.Page > 0 {
			cur.page = s.Page
		}
		if s.Level > 0 {
			for len(path) > 0 && path[len(path)-1].Level >= s.Level {
				path = path[:len(path)-1]
			}
			path = append(path, s)
		}
		// A page without a heading keeps the path it is under; its anchor
		// is its page.
		cur = part{page: cur.page, anchor: s.Anchor, headings: headings(path)}
	}
	emit(len(body))
	return out
}

// headings is the titles of a path, without the permalink signs documentation
// generators put at the end of headings.
func headings(path []docfields.Section) []string {
	if len(path) == 0 {
		return nil
	}
	out := make([]string, 0, len(path))
	for _, s := range path {
		t := strings.TrimSpace(strings.TrimRight(s.Title, "¶# \u00a0"))
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}

// Tokens counts the tokens of s.
func Tokens(s string) int {
	n := 0
	for _, w := range strings.Fields(s) {
		n += wordTokens(w)
	}
	return n
}

// wordTokens counts the tokens of one word (no white space in it).
func wordTokens(w string) int {
	n := 0
	inRun := false
	for _, r := range w {
		switch {
		case unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r):
			n++
			inRun = false
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			if !inRun {
				n++
				inRun = true
			}
		default:
			n++
			inRun = false
		}
	}
	return n
}

// windows cuts text into pieces of at most max tokens of whole words, each
// starting overlap tokens before the end of the one before. A piece ends
// at a line's or a sentence's end when one is in its last quarter. A word
// longer than max is a piece of its own.
func windows(text string, max, overlap int) []string {
	if max <= 0 || Tokens(text) <= max {
		return []string{text}
	}
	type word struct {
		start, end int // bytes of text
		tokens     int
		stop       bool // ends a line or a sentence
	}
	var words []word
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if unicode.IsSpace(r) {
			if r == '\n' && len(words) > 0 {
				words[len(words)-1].stop = true
			}
			i += size
			continue
		}
		j := i
		for j < len(text) {
			r, size := utf8.DecodeRuneInString(text[j:])
			if unicode.IsSpace(r) {
				break
			}
			j += size
		}
		w := text[i:j]
		last, _ := utf8.DecodeLastRuneInString(w)
		words = append(words, word{start: i, end: j, tokens: wordTokens(w), stop: last == '.' || last == '!' || last == '?' || last == ':'})
		i = j
	}
	var out []string
	for first := 0; first < len(words); {
		// The words that fit, and the last good place to end among them.
		end, sum, cut := first, 0, -1
		for end < len(words) && (end == first || sum+words[end].tokens <= max) {
			sum += words[end].tokens
			if words[end].stop && sum >= max*3/4 {
				cut = end + 1
			}
			end++
		}
		if end < len(words) && cut > first {
			end = cut
		}
		out = append(out, text[words[first].start:words[end-1].end])
		if end >= len(words) {
			break
		}
		// The next window repeats the last overlap tokens, whole words.
		next, back := end, 0
		for next-1 > first && back+words[next-1].tokens <= overlap {
			next--
			back += words[next].tokens
		}
		first = next
	}
	return out
}
