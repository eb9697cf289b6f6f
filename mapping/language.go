package mapping

import (
	"strings"

	"github.com/abadojack/whatlanggo"

	"github.com/crawlspace/crawlspace/docfields"
)

// Language detection, for a page or file that declares no language.
//
// whatlanggo (trigrams over 84 languages, no model to load) was chosen
// over lingua-go after measuring both on the translations of the Debian
// Reference (de, en, es, fr, id, it, ja, pt, zh; paragraphs left in English
// in a translation taken out): on 2,000-character texts whatlanggo was
// right 99.5% of the time in 0.7–0.9 ms, lingua-go 100% in 2.6–6.4 ms; on
// paragraphs of at most 120 characters whatlanggo 89.8%, lingua-go 96.2%
// (nine languages loaded). lingua-go holds 13 MiB of models per language
// (988 MiB and 4.7 s to load all 75) and adds over 100 MB to the binary;
// whatlanggo holds nothing beyond its tables. A page's text is rarely as
// short as a paragraph, and a guess whatlanggo itself finds unreliable is
// not used, so the short-text gap costs an empty doc_language, seldom a
// wrong one. docs/fields.md#language has the figures and how they were
// taken.

// detectBytes is how much of the text is read: on the texts measured,
// 1,000 characters were as accurate as 2,000, and 300 lost one text in
// 40; the cost grows with the text (whatlanggo sorts its trigrams).
const detectBytes = 1024

// detector guesses a language among a set.
type detector struct {
	opts whatlanggo.Options
}

// newDetector builds a detector for the ISO 639-1 codes of languages, or
// for every language with such a code when there are none.
func newDetector(languages []string) *detector {
	d := &detector{}
	if len(languages) > 0 {
		d.opts.Whitelist = map[whatlanggo.Lang]bool{}
		for l := range whatlanggo.Langs {
			for _, code := range languages {
				if strings.EqualFold(l.Iso6391(), code) {
					d.opts.Whitelist[l] = true
				}
			}
		}
	}
	return d
}

// guess is the language of text as a lower-case ISO 639-1 code, "" when
// the detector finds it unreliable or the language has no such code.
func (d *detector) guess(text string) string {
	text = cutUTF8(text, detectBytes)
	info := whatlanggo.DetectWithOptions(text, d.opts)
	if !info.IsReliable() {
		return ""
	}
	return info.Lang.Iso6391()
}

// detectLanguage fills doc_language from the title and body when the page
// declared none, and says so in doc_language_detected.
func (x *Extractor) detectLanguage(d *docfields.Document) {
	if d.Language != "" || x.detect == nil {
		return
	}
	text := d.Body
	if len(text) < detectBytes && d.Title != "" {
		text = d.Title + "\n" + text
	}
	if l := x.detect.guess(text); l != "" {
		d.Language, d.LanguageDetected = l, true
	}
}

// detectorCodes are the ISO 639-1 codes the detector can give.
func detectorCodes() []string {
	var out []string
	for l := range whatlanggo.Langs {
		if c := l.Iso6391(); c != "" {
			out = append(out, c)
		}
	}
	return out
}
