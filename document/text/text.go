// Package text reads plain text files (text/plain and its kin) as documents:
// the bytes decoded to UTF-8 by the rules pages follow, paragraphs as blocks.
package text

import (
	"bytes"
	"context"
	"unicode"
	"unicode/utf8"

	"github.com/crawlspace/crawlspace/charset"
	"github.com/crawlspace/crawlspace/document"
)

// Reader reads one plain text file. A Reader is a value: the crawler makes one per response, with
// that response's Content-Type, whose charset parameter the decoding needs.
type Reader struct {
	// ContentType is the response's Content-Type header ("text/plain; charset=koi8-r"); "" or one
	// without a charset leaves the encoding to the byte order mark and detection.
	ContentType string
}

// ForContentType is the reader of one response, whose charset parameter the decoding needs.
func (r Reader) ForContentType(contentType string) document.Reader {
	return Reader{ContentType: contentType}
}

// checkEvery is how many lines pass between looks at ctx: decoding is linear and cheap, so this
// only has to keep a huge file from outliving its deadline by much.
const checkEvery = 4096

// Read decodes data and returns its text with paragraphs (runs of lines between blank lines) as
// blocks. Plain text has no title, author, date or links of its own: the crawler names the
// document after its file, and bare URLs in the text are not followed.
func (r Reader) Read(ctx context.Context, data []byte, lim document.Limits) (c *document.Content, err error) {
	lim = lim.WithDefaults()
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, document.Errorf(document.ReasonCorrupt, "text reader panic: %v", p)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, &document.Error{Reason: document.ReasonTimeout, Err: err}
	}
	decoded, used, warning := charset.Decode(data, charset.OfContentType(r.ContentType))
	body := document.NewText(lim.MaxText)
	inPara := false
	var last rune // the last character written in the current paragraph
	for n := 0; len(decoded) > 0 && !body.Full(); n++ {
		if n%checkEvery == checkEvery-1 {
			if err := ctx.Err(); err != nil {
				return nil, &document.Error{Reason: document.ReasonTimeout, Err: err}
			}
		}
		var line []byte
		line, decoded = nextLine(decoded)
		line = bytes.TrimFunc(line, unicode.IsSpace)
		if len(line) == 0 {
			if inPara {
				body.Break()
				inPara = false
			}
			continue
		}
		if inPara {
			first, _ := utf8.DecodeRune(line)
			// A line break inside CJK text is not a word break: the lines of a wrapped Japanese
			// paragraph join without a space, as a reader would read them.
			if !(unbroken(last) && unbroken(first)) {
				body.Space()
			}
		}
		body.WriteString(string(line))
		last, _ = utf8.DecodeLastRune(line)
		inPara = true
	}
	return &document.Content{Body: body.String(), Truncated: body.Truncated(), Charset: used, CharsetWarning: warning}, nil
}

// nextLine splits off one line ended by \n, \r\n, \r (old Mac files) or a form feed, which
// separates pages and so ends a paragraph: it counts as a blank line of its own.
func nextLine(b []byte) (line, rest []byte) {
	i := bytes.IndexAny(b, "\n\r\f")
	if i < 0 {
		return b, nil
	}
	switch {
	case b[i] == '\f':
		if i > 0 {
			return b[:i], b[i:] // the form feed comes back as an empty line next time
		}
		return nil, b[1:]
	case b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n':
		return b[:i], b[i+2:]
	}
	return b[:i], b[i+1:]
}

// unbroken says r belongs to a script written without spaces between words.
func unbroken(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar) ||
		// CJK punctuation and full-width forms (、。「」ー…) sit between such words too.
		r >= 0x3000 && r <= 0x303f || r >= 0xff00 && r <= 0xffef || r == 0x30fc
}
