package htmllex

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/crawlspace/crawlspace/internal/benchpage"
)

// tokens lists a page's tokens as the parser sees them: type, raw bytes,
// the text of text and comment tokens, and the attributes of start tags,
// each name as the Tokenizer gives it and its value exactly.
func tokens(next func() html.TokenType, raw, text func() []byte, attrs func() string) []string {
	var out []string
	for len(out) < 100000 {
		tt := next()
		if tt == html.ErrorToken {
			return out
		}
		s := fmt.Sprintf("%v raw=%q", tt, raw())
		switch tt {
		case html.TextToken, html.CommentToken:
			s += fmt.Sprintf(" text=%q", text())
		case html.StartTagToken, html.SelfClosingTagToken:
			s += " attrs=" + attrs()
		}
		out = append(out, s)
	}
	return out
}

func tokenizerTokens(page []byte) []string {
	z := html.NewTokenizer(bytes.NewReader(page))
	attrs := func() string {
		var b strings.Builder
		for more := true; more; {
			var k, v []byte
			if k, v, more = z.TagAttr(); k == nil {
				break
			}
			fmt.Fprintf(&b, "[%q=%q]", k, v)
		}
		return b.String()
	}
	return tokens(z.Next, z.Raw, z.Text, attrs)
}

// lexerTokens are the lexer's tokens with the attributes a caller reads
// from each start tag (ParseAttrs, and each value decoded).
func lexerTokens(page []byte) []string {
	var z Lexer
	z.Reset(page)
	attrs := func() string {
		var b strings.Builder
		raw := z.Raw()
		for _, a := range ParseAttrs(raw, nil) {
			fmt.Fprintf(&b, "[%q=%q]", tokenizerKey(a.Name(raw)), value(raw, a))
		}
		return b.String()
	}
	return tokens(z.Next, z.Raw, z.Text, attrs)
}

// tokenizerKey is an attribute name as the Tokenizer gives it: ASCII
// letters lower-cased, NUL read as U+FFFD.
func tokenizerKey(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = LowerASCII(c)
	}
	return bytes.ReplaceAll(out, []byte{0}, []byte("\uFFFD"))
}

// value is attribute a of the start tag raw as a caller reads it.
func value(raw []byte, a Attr) []byte {
	if v := a.RawValue(raw); AttrIsPlain(v) {
		return v
	}
	return AppendAttrValue(nil, a.RawValue(raw))
}

func compareTokens(t *testing.T, name string, page []byte) {
	t.Helper()
	want, got := tokenizerTokens(page), lexerTokens(page)
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Errorf("%s: token %d:\n lexer     %s\n tokenizer %s", name, i, g, w)
			return
		}
	}
}

func TestLexerGivesTheTokenizersTokensOnEveryGoldenPage(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("..", "testdata", "pages", "*.html"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no golden pages: %v", err)
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		compareTokens(t, filepath.Base(p), b)
	}
	compareTokens(t, "benchpage", benchpage.HTML())
}

var lexerCases = []string{
	"", "<", "a<", "</", "a</", "<!", "<!-", "<!--", "<!-->", "<!--->", "<!---->", "<!-- a -- b -->",
	"<!-- a --!> b", "<!-- a --!", "<!-- a --", "<!-- a -", "<!--a--!-b-->", "<?xml version=1?>x",
	"</>x", "</3>x", "</ a>x", "<!DOCTYPE html>x", "<!doctype>", "<![CDATA[x>y]]>", "a < b > c",
	"<a href='x>y' title=\"a>b\" c=d>t</a >", "<a b=>c", "<a =b>c", "<a b = 'c' / >d", "<br/>", "<br / >",
	"<a href=x/>", "<a\nhref\n=\n'x'\n>", "<p>a&amp;b&lt;c&notit; &#x41;&#65</p>", "a\r\nb\rc\n", "a\r\n&amp;\rb&lt;", "&amp&ampx&rsaquo&#x41;",
	"<title>a &amp; <b>b</b></title>x", "<textarea>a&lt;</textarea>", "<style>a</b>&amp;</style >x",
	"<script>a</script>b", "<script>a</scriptx></script>b", "<script>a<!-- b </script> c",
	"<script>a<!-- <script> </script> c --> d</script>e", "<script><!--></script>x", "<script/>a</script>b",
	"<SCRIPT>a</Script>b", "<plaintext>a</plaintext>b", "<xmp><b></xmp>", "<iframe><p>x</iframe>y",
	"<noscript><p>x</noscript>", "<title>unclosed", "<a href='unclosed", "<a b", "<a\x00b>c\x00d",
	"<!--\x00-->", "<style>\x00</style>", "<div<p>x", "<a/b/c>", "<p>x</p/>", "<ab-c d_e=1>",
}

func TestLexerGivesTheTokenizersTokensOnEdgeCases(t *testing.T) {
	for _, c := range lexerCases {
		compareTokens(t, fmt.Sprintf("%q", c), []byte(c))
	}
}

// attrSeeds are tags whose attribute values hold references, in each
// kind of quoting.
func attrSeeds() []string {
	var out []string
	for _, c := range attrCases {
		out = append(out, `<a href="`+c.raw+`" title='`+c.raw+`' data-x=`+c.raw+`>x</a>`)
	}
	return append(out, `<img src=/a?b=1&reg=2&amp;c=&#x80 alt="&sect&sect;&not=&amp"><meta content="&#0;&#xD800;&#1114112;&#xFDD0;">`,
		"<a HREF='&NOTIN;' href=\"x\" \x00k=\"&not\x00\">", "<a b=\"\r\n&\r#x41;\">",
		"<a k=1 \u212a=2 s=3 \u017f=4 \u00c9=5 \u00e9=6>", "<br \u212a=x/ k=y/>")
}

func TestLexerAndParserGiveTheTokenizersAttributeValues(t *testing.T) {
	for _, c := range attrSeeds() {
		compareTokens(t, fmt.Sprintf("%q", c), []byte(c))
	}
}

func FuzzLexerAgainstTokenizer(f *testing.F) {
	for _, c := range lexerCases {
		f.Add([]byte(c))
	}
	for _, c := range attrSeeds() {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		compareTokens(t, "fuzz", page)
	})
}

func BenchmarkLexer(b *testing.B) {
	page := benchpage.HTML()
	b.SetBytes(int64(len(page)))
	var z Lexer
	for b.Loop() {
		z.Reset(page)
		for z.Next() != html.ErrorToken {
			_ = z.Text()
		}
	}
}

func BenchmarkTokenizer(b *testing.B) {
	page := benchpage.HTML()
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		z := html.NewTokenizer(bytes.NewReader(page))
		for z.Next() != html.ErrorToken {
			_ = z.Text()
		}
	}
}
