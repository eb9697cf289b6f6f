package htmllex

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// attrCases are attribute values as written and the value the HTML
// Standard's tokenizer gives them ("character reference state" and "named
// character reference state", with the attribute rule: a named reference
// not ending in ';' stays as written when '=' or an ASCII alphanumeric
// follows it).
var attrCases = []struct{ raw, want string }{
	// Query strings whose parameter names begin with a legacy name.
	{"/search?q=a&section=news", "/search?q=a&section=news"},
	{"/list?a=1&region=eu", "/list?a=1&region=eu"},
	{"?a=1&param=2", "?a=1&param=2"},
	{"?a=1&notify=yes", "?a=1&notify=yes"},
	{"?a=1&copy=2", "?a=1&copy=2"},
	{"?a=1&times=3", "?a=1&times=3"},
	{"?a=1&not=2", "?a=1&not=2"},
	{"?a=1&Aacute=2", "?a=1&Aacute=2"},
	{"?a=1&lang=de", "?a=1&lang=de"},
	{"&sect", "§"},
	{"&sectio", "&sectio"},
	{"&sect;ion", "§ion"},
	{"&noti;", "&noti;"},
	{"&notin", "&notin"},
	{"&notin;", "∉"},
	{"&copy", "©"},
	{"&copy.", "©."},
	{"&copy;x", "©x"},
	{"&copyx", "&copyx"},
	{"&COPY", "©"},
	{"&AMP", "&"},
	{"&amp=", "&amp="},
	{"&lang;", "⟨"},
	{"&lang", "&lang"},
	{"&frac12", "½"},
	{"&frac123", "&frac123"},
	{"&NotEqualTilde;", "≂̸"},
	{"&fjlig;", "fj"},
	{"&nosuch;", "&nosuch;"},
	// The common cases, and no decoding twice.
	{"a&amp;b&lt;c&gt;d&quot;e&#39;f&nbsp;g", "a&b<c>d\"e'f\u00a0g"},
	{"&amp;sect;", "&sect;"},
	{"?x=1&amp;section=2", "?x=1&section=2"},
	// Numeric references: the replacement table for 0x80-0x9F, the
	// replacement character for 0, surrogates and past 0x10FFFF;
	// noncharacters and controls kept.
	{"&#x3f;", "?"},
	{"&#63", "?"},
	{"&#65x", "Ax"},
	{"&#x80;", "€"},
	{"&#128;", "€"},
	{"&#x81;", "\u0081"},
	{"&#x9F;", "Ÿ"},
	{"&#0;", "\ufffd"},
	{"&#xD800;", "\ufffd"},
	{"&#xDFFF;", "\ufffd"},
	{"&#x110000;", "\ufffd"},
	{"&#99999999999;", "\ufffd"},
	{"&#xFDD0;", "\ufdd0"},
	{"&#x10FFFF;", "\U0010ffff"},
	{"&#x1;", "\x01"},
	{"&#13;", "\r"},
	{"&#x;", "&#x;"},
	{"&#;", "&#;"},
	{"&#xg", "&#xg"},
	{"&#", "&#"},
	// A bare ampersand.
	{"&", "&"},
	{"&;", "&;"},
	{"a & b", "a & b"},
	{"&=", "&="},
	// Newlines normalised and NUL replaced, as the input stream is.
	{"a\r\nb\rc", "a\nb\nc"},
	{"a\x00b", "a\ufffdb"},
}

// tokenizerAttr is the value golang.org/x/net/html's Tokenizer gives the
// first attribute of the first tag of page.
func tokenizerAttr(page string) (string, bool) {
	z := html.NewTokenizer(strings.NewReader(page))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return "", false
		case html.StartTagToken, html.SelfClosingTagToken:
			t := z.Token()
			if len(t.Attr) == 0 {
				return "", false
			}
			return t.Attr[0].Val, true
		}
	}
}

func TestAttributeValuesDecodeCharacterReferencesAsTheHTMLStandardSays(t *testing.T) {
	for _, c := range attrCases {
		for _, tag := range []string{`<a href="` + c.raw + `">`, `<a href='` + c.raw + `'>`} {
			// The expectations are the standard's; the Tokenizer implements
			// the same rules, so it must agree with them too.
			if tv, _ := tokenizerAttr(tag); tv != c.want {
				t.Errorf("%q: the x/net Tokenizer gives %q, the test expects %q", tag, tv, c.want)
			}
			if got, ok := firstTagAttr(tag, "href"); !ok || got != c.want {
				t.Errorf("%q: href = %q, want %q", tag, got, c.want)
			}
		}
	}
}
