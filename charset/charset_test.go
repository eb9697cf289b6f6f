package charset

import (
	"strings"
	"testing"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"

	"github.com/crawlspace/crawlspace/internal/hostile"
)

func TestDeclaredCharsetIsBelievedUnlessTheBytesContradictIt(t *testing.T) {
	const text = "Les élèves sont allés à l'école ; déjà vu, très précis, où êtes-vous ? Ça va, merci beaucoup."
	html := "<!doctype html><html><head><title>t</title></head><body><p>" + text + "</p></body></html>"
	latin1, _ := charmap.Windows1252.NewEncoder().String(html)
	const jaText = "これは日本語のテキストです。東京都の天気は晴れです。"
	sjis, _ := japanese.ShiftJIS.NewEncoder().String("<html><body><p>" + jaText + "</p></body></html>")
	cases := []struct {
		name, charset string
		body          []byte
		want, used    string
		warned        bool
	}{
		{"utf-8 as declared", "utf-8", []byte(html), text, "utf-8", false},
		{"utf-16 as declared", "utf-16", hostile.UTF16(html, false, false), text, "utf-16le", false},
		{"utf-16be as declared", "utf-16be", hostile.UTF16(html, true, false), text, "utf-16be", false},
		{"utf-8 bytes declared utf-16", "utf-16", []byte(html), text, "utf-8", true},
		{"latin-1 bytes declared utf-16", "utf-16", []byte(latin1), text, "windows-1252", true},
		{"utf-16be bytes declared utf-16le", "utf-16le", hostile.UTF16(html, true, false), text, "utf-16be", true},
		{"BOM over another declaration", "iso-8859-1", hostile.UTF16(html, true, true), text, "utf-16be", true},
		{"UTF-8 BOM over windows-1252", "windows-1252", append([]byte("\xef\xbb\xbf"), html...), text, "utf-8", true},
		{"BOM agreeing with utf-16", "utf-16", hostile.UTF16(html, false, true), text, "utf-16le", false},
		{"windows-1252 bytes declared utf-8", "utf-8", []byte(latin1), text, "windows-1252", true},
		{"one stray byte declared utf-8", "utf-8", []byte("<p>déjà caf\xe9</p>"), "déjà caf\ufffd", "utf-8", false},
		{"one latin-1 byte declared utf-8", "utf-8", []byte("<p>caf\xe9</p>"), "café", "windows-1252", true},
		{"shift_jis bytes declared euc-jp", "euc-jp", []byte(sjis), jaText, "shift_jis", true},
		{"utf-8 bytes declared iso-8859-1", "iso-8859-1", []byte(html), text, "utf-8", true},
		{"latin-1 as declared", "iso-8859-1", []byte(latin1), text, "windows-1252", false},
		{"an unknown label is ignored", "x-no-such", []byte(html), text, "utf-8", false},
	}
	for _, c := range cases {
		out, used, warning := Decode(c.body, c.charset)
		if used != c.used || !strings.Contains(strings.ToValidUTF8(string(out), "\ufffd"), c.want) {
			t.Errorf("%s: read as %s, want %s; text %q", c.name, used, c.used, out)
		}
		if (warning != "") != c.warned {
			t.Errorf("%s: warning %q, want one: %v", c.name, warning, c.warned)
		}
		if warning != "" && !strings.Contains(warning, "charset="+c.charset) {
			t.Errorf("%s: warning %q does not name the declaration", c.name, warning)
		}
	}
}

func TestUTF16DeclaredInsideTheDocumentMeansUTF8WithoutAWarning(t *testing.T) {
	page := []byte(`<html><head><meta charset="utf-16"><title>é</title></head></html>`)
	out, used, warning := Decode(page, "")
	if used != "utf-8" || string(out) != string(page) || warning != "" {
		t.Errorf("read as %s with warning %q", used, warning)
	}
}

func TestUTF16IsPlausibleOnlyWithMarkupUnitsAndPairedSurrogates(t *testing.T) {
	cases := []struct {
		name      string
		body      []byte
		bigEndian bool
		want      bool
	}{
		{"little-endian markup", hostile.UTF16("<p>日本</p>", false, false), false, true},
		{"big-endian markup", hostile.UTF16("<p>日本</p>", true, false), true, true},
		{"the other byte order", hostile.UTF16("<p>日本</p>", true, false), false, false},
		{"a pair of surrogates", hostile.UTF16("<p>\U0001F600</p>", false, false), false, true},
		{"a lone high surrogate", []byte("\x00\xd8<\x00p\x00"), false, false},
		{"a lone low surrogate", []byte("<\x00\x00\xdcp\x00"), false, false},
		{"ASCII", []byte("<html><body>text</body></html>"), false, false},
		{"empty", nil, false, false},
	}
	for _, c := range cases {
		if got := plausibleUTF16(c.body, c.bigEndian); got != c.want {
			t.Errorf("%s: plausible %v, want %v", c.name, got, c.want)
		}
	}
}

func TestContentTypeCharsetParsing(t *testing.T) {
	for in, want := range map[string]string{
		"":                                   "",
		"text/plain":                         "",
		"text/plain; charset=KOI8-R":         "KOI8-R",
		`text/plain; charset="shift_jis"`:    "shift_jis",
		"text/plain;charset=utf-8;":          "utf-8",
		"text/plain; format=flowed; charset": "",
	} {
		if got := OfContentType(in); got != want {
			t.Errorf("OfContentType(%q) = %q, want %q", in, got, want)
		}
	}
}
