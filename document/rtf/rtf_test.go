package rtf

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/crawlspace/crawlspace/document"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func read(t testing.TB, data []byte) *document.Content {
	t.Helper()
	c, err := Reader{}.Read(context.Background(), data, document.Limits{})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return c
}

// recall is the share of the reference's distinct words that the body has.
func recall(body, reference string) float64 {
	words := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			m[w] = true
		}
		return m
	}
	have, want := words(body), words(reference)
	n := 0
	for w := range want {
		if have[w] {
			n++
		}
	}
	return float64(n) / float64(max(len(want), 1))
}

func reason(t *testing.T, err error) string {
	t.Helper()
	var de *document.Error
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is not a *document.Error", err, err)
	}
	return de.Reason
}

func TestLibreOfficeRTFGivesInfoHeadingTableLinksAndEveryScript(t *testing.T) {
	c := read(t, fixture(t, "report.rtf"))
	if c.Title != "Multilingual search: a field report" || c.Subject != "Search in several scripts" {
		t.Errorf("Title, Subject = %q, %q", c.Title, c.Subject)
	}
	if !slices.Equal(c.Authors, []string{"Ada Lovelace"}) || !slices.Equal(c.Keywords, []string{"search", "Unicode", "RTF"}) {
		t.Errorf("Authors, Keywords = %q, %q", c.Authors, c.Keywords)
	}
	if want := time.Date(2024, 3, 5, 9, 30, 0, 0, time.UTC); !c.Created.Equal(want) {
		t.Errorf("Created = %v, want %v", c.Created, want)
	}
	if want := time.Date(2025, 6, 17, 14, 45, 0, 0, time.UTC); !c.Modified.Equal(want) {
		t.Errorf("Modified = %v, want %v", c.Modified, want)
	}
	if c.Heading != "Searching across scripts" {
		t.Errorf("Heading = %q, want the \\outlinelevel0 paragraph", c.Heading)
	}
	if want := []string{"https://www.unicode.org/reports/tr29/", "https://www.gnu.org/software/libc/manual/"}; !slices.Equal(c.Links, want) {
		t.Errorf("Links = %q, want %q", c.Links, want)
	}
	for _, want := range []string{
		"Grüße aus Köln, naïve café, Ångström.",
		"Русский текст: ключевое слово и мягкий знак.",
		"Ελληνικά: αναζήτηση εγγράφων.",
		"日本語: 文書を検索する。",
		"Emoji: 🔍 done.",
		"\nCyrillic 340 0.97\n",
	} {
		if !strings.Contains(c.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, c.Body)
		}
	}
	if strings.Contains(c.Body, "?") || strings.Contains(c.Body, "Times New Roman") {
		t.Errorf("body holds \\uN fallbacks or font names:\n%s", c.Body)
	}
	if r := recall(c.Body, string(fixture(t, "report.txt"))); r < 1 {
		t.Errorf("word recall against LibreOffice's text export = %.3f, want 1", r)
	}
}

func TestPandocRTFGivesHeadingsLinksAndText(t *testing.T) {
	c := read(t, fixture(t, "git-readme.rtf"))
	if r := recall(c.Body, string(fixture(t, "git-readme.txt"))); r < 0.99 {
		t.Errorf("word recall against pandoc's plain text = %.3f, want >= 0.99", r)
	}
	if c.Heading == "" || !strings.HasPrefix(c.Body, "Git - fast, scalable") {
		t.Errorf("Heading %q, body starts %.60q", c.Heading, c.Body)
	}
	if len(c.Links) < 5 || !slices.Contains(c.Links, "https://lore.kernel.org/git/") {
		t.Errorf("Links = %q: want the README's links, lore.kernel.org among them", c.Links)
	}
}

func TestEnscriptRawLatin1TextDecodesAsWindows1252(t *testing.T) {
	c := read(t, fixture(t, "copyright.rtf"))
	ref := string(fixture(t, "copyright.txt"))
	if r := recall(c.Body, ref); r < 1 {
		t.Errorf("word recall against the UTF-8 original = %.3f, want 1", r)
	}
	for _, want := range []string{"Niels Möller", "Torbjörn Granlund"} {
		if !strings.Contains(c.Body, want) {
			t.Errorf("body lacks %q", want)
		}
	}
	// enscript ends every line with \line: each a line of the body, as in the file.
	if got, want := strings.Count(c.Body, "\n"), strings.Count(strings.TrimSpace(ref), "\n")-strings.Count(ref, "\n\n"); got < want*9/10 {
		t.Errorf("body has %d line breaks, want about %d (one per non-empty line)", got, want)
	}
}

func TestCodePages(t *testing.T) {
	for _, tc := range []struct{ name, rtf, want string }{
		{"ansicpg1251", `{\rtf1\ansi\ansicpg1251 \'cf\'f0\'e8\'e2\'e5\'f2, \'ec\'e8\'f0!}`, "Привет, мир!"},
		{"fcharset204 font in a 1252 document", `{\rtf1\ansi\ansicpg1252{\fonttbl{\f0\fcharset0 Arial;}{\f1\fcharset204 Arial CYR;}}\f0 caf\'e9 {\f1 \'cf\'f0\'e8\'e2\'e5\'f2} caf\'e9}`, "café Привет café"},
		{"ansicpg932 double-byte", `{\rtf1\ansi\ansicpg932 \'93\'fa\'96\'7b\'8c\'ea}`, "日本語"},
		{"uc2 skips two fallbacks", `{\rtf1\uc2 a\u8364\'80\'80b}`, "a€b"},
		{"uc0 skips none", `{\rtf1\uc0 \u8364 b}`, "€b"},
		{"fallback ends with the group", `{\rtf1 {\u8364}x}`, "€x"},
		{"negative u", `{\rtf1 \u-3913?}`, "\uf0b7"},
		{"mac", `{\rtf1\mac \'8a}`, "ä"},
		{"escapes", `{\rtf1 a\{b\}c\\d\~e\_f\-g\emdash h\tab i}`, "a{b}c\\d e\u2011fg\u2014h i"},
		{"bin skipped", "{\\rtf1 a\\bin3 }}}b}", "ab"},
		{"a destination word after text is no destination", `{\rtf1 {a\title b}}`, "ab"},
		{"unknown starred destination", `{\rtf1 a{\*\somethingnew secret}b}`, "ab"},
		{"known unstarred destinations", `{\rtf1{\colortbl;\red0;}{\stylesheet{\s0 Normal;}}{\header head}{\footer foot}{\pict 0a0b}{\object x}a}`, "a"},
		{"upr keeps the unicode copy", `{\rtf1{\info{\upr{\title ASCII}{\*\ud{\title \u1055?}}}}x}`, "x"},
		{"par and line", `{\rtf1 one\par two\line three\par\par}`, "one\ntwo\nthree"},
		{"table row on one line", `{\rtf1\trowd\cellx1\cellx2\pard\intbl a\par b\cell c\cell\row\pard after}`, "a b c\nafter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := read(t, []byte(tc.rtf)).Body; got != tc.want {
				t.Errorf("body = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestInfoUprTitleIsTheUnicodeCopy(t *testing.T) {
	c := read(t, []byte(`{\rtf1{\info{\upr{\title ?????}{\*\ud{\title \u1055\'3f\u1086\'3f}}}{\nofpages12}{\doccomm A comment}}x}`))
	if c.Title != "По" || c.Pages != 12 || c.Subject != "A comment" {
		t.Errorf("Title %q, Pages %d, Subject %q; want По, 12 and the comment as subject", c.Title, c.Pages, c.Subject)
	}
}

func TestHyperlinkFieldForms(t *testing.T) {
	// Field codes escape a backslash as \\, and RTF escapes each again: a UNC path's \\server
	// is eight backslashes in the file. Line ends in RTF are no spaces: the fields are spaced.
	c := read(t, []byte(`{\rtf1
{\field{\*\fldinst HYPERLINK "https://a.example/x?y=1" \\o "tip"}{\fldrslt A}} 
{\field{\*\fldinst{HYPERLINK  \\l "bookmark" }}{\fldrslt B}} 
{\field{\*\fldinst {HYPERLINK https://b.example/}}{\fldrslt C}} 
{\field{\*\fldinst HYPERLINK "\\\\\\\\server\\\\share\\\\doc.rtf"}{\fldrslt D}} 
{\field{\*\fldinst PAGE}{\fldrslt 3}} 
{\field{\*\fldinst HYPERLINK "https://a.example/x?y=1"}{\fldrslt again}}}`))
	want := []string{"https://a.example/x?y=1", "https://b.example/", `\\server\share\doc.rtf`}
	if !slices.Equal(c.Links, want) {
		t.Errorf("Links = %q, want %q", c.Links, want)
	}
	if c.Body != "A B C D 3 again" {
		t.Errorf("Body = %q: field results are text", c.Body)
	}
}

func TestDeflangIsTheLanguage(t *testing.T) {
	if c := read(t, []byte(`{\rtf1\deflang2057 x}`)); c.Language != "en-GB" {
		t.Errorf("Language = %q, want en-GB", c.Language)
	}
}

func TestNotRTFIsCorrupt(t *testing.T) {
	_, err := Reader{}.Read(context.Background(), []byte("%PDF-1.4 not rtf"), document.Limits{})
	if r := reason(t, err); r != document.ReasonCorrupt {
		t.Errorf("reason %q, want %q", r, document.ReasonCorrupt)
	}
}

func TestNestingPastTheBoundIsCorruptNotACrash(t *testing.T) {
	data := []byte(`{\rtf1 ` + strings.Repeat("{", 100000) + "x")
	_, err := Reader{}.Read(context.Background(), data, document.Limits{})
	if r := reason(t, err); r != document.ReasonCorrupt {
		t.Errorf("reason %q (%v), want %q", r, err, document.ReasonCorrupt)
	}
}

func TestTruncatedFileGivesTheTextBeforeTheCut(t *testing.T) {
	data := fixture(t, "report.rtf")
	c := read(t, data[:len(data)*2/3])
	if c.Title == "" || !strings.Contains(c.Body, "Searching across scripts") {
		t.Errorf("a file cut short lost what came before the cut: title %q, body %.80q", c.Title, c.Body)
	}
}

func TestBodyStopsAtMaxText(t *testing.T) {
	c, err := Reader{}.Read(context.Background(), fixture(t, "copyright.rtf"), document.Limits{MaxText: 999})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Truncated || len(c.Body) > 999 || !utf8.ValidString(c.Body) {
		t.Errorf("Truncated %v, %d bytes", c.Truncated, len(c.Body))
	}
}

func TestEndedContextIsATimeout(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Reader{}.Read(ctx, fixture(t, "copyright.rtf"), document.Limits{})
	if r := reason(t, err); r != document.ReasonTimeout {
		t.Errorf("reason %q, want %q", r, document.ReasonTimeout)
	}
}

func FuzzRead(f *testing.F) {
	for _, name := range []string{"report.rtf", "git-readme.rtf", "copyright.rtf"} {
		data := fixture(f, name)
		// The first kilobytes carry the header and destinations; whole files slow the fuzzer's
		// minimizing.
		f.Add(data[:min(len(data), 4096)])
	}
	f.Add([]byte(`{\rtf1{\info{\upr{\title a}{\*\ud{\title \u-1\'3f}}}}{\field{\*\fldinst HYPERLINK "x}}\bin99999`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Reader{}.Read(context.Background(), data, document.Limits{MaxText: 2000})
		if err != nil {
			var de *document.Error
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a *document.Error", err)
			}
			return
		}
		if len(c.Body) > 2000 || !utf8.ValidString(c.Body) || strings.Contains(c.Body, "\n\n") {
			t.Fatalf("body over its limit, invalid UTF-8 or with an empty line: %q", c.Body)
		}
		for _, s := range append([]string{c.Title, c.Subject, c.Heading}, c.Links...) {
			if len(s) > 4*maxField {
				t.Fatalf("a property of %d bytes", len(s))
			}
		}
	})
}

func BenchmarkReadCopyright(b *testing.B) {
	data := fixture(b, "copyright.rtf")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := (Reader{}).Read(context.Background(), data, document.Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
