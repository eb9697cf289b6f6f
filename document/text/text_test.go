package text

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/crawlspace/crawlspace/document"
)

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func body(t testing.TB, r Reader, data []byte) *document.Content {
	t.Helper()
	c, err := r.Read(context.Background(), data, document.Limits{})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return c
}

// encoded lists each fixture in a legacy or UTF-16 encoding, the charset a server would declare
// for it, its UTF-8 original (made by scripts/testdocs-text) and words only a right decoding gives.
var encoded = []struct {
	file, charset, reference string
	words                    []string
}{
	{"copyright.windows-1252.txt", "windows-1252", "copyright.utf-8.txt", []string{"Niels Möller", "Torbjörn", "D´Silva", "©"}},
	{"apropos-ja.shift_jis.txt", "Shift_JIS", "apropos-ja.utf-8.txt", []string{"マニュアルページの名前と要約文を検索する"}},
	{"apropos-ru.koi8-r.txt", "KOI8-R", "apropos-ru.utf-8.txt", []string{"ключевое слово"}},
	{"apropos-ru.utf-16.txt", "utf-16", "apropos-ru.utf-8.txt", []string{"ключевое слово"}},
}

func TestDeclaredCharsetDecodesToTheSameBodyAsTheUTF8Original(t *testing.T) {
	for _, tc := range encoded {
		t.Run(tc.file, func(t *testing.T) {
			want := body(t, Reader{ContentType: "text/plain; charset=utf-8"}, read(t, tc.reference)).Body
			got := body(t, Reader{ContentType: "text/plain; charset=" + tc.charset}, read(t, tc.file)).Body
			if got != want {
				t.Errorf("body of %s declared %s differs from its UTF-8 original's:\n got %.300q\nwant %.300q", tc.file, tc.charset, got, want)
			}
			for _, w := range tc.words {
				if !strings.Contains(got, w) {
					t.Errorf("body lacks %q", w)
				}
			}
		})
	}
}

func TestUndeclaredCharsetIsDetected(t *testing.T) {
	for _, tc := range encoded {
		t.Run(tc.file, func(t *testing.T) {
			want := body(t, Reader{}, read(t, tc.reference)).Body
			got := body(t, Reader{ContentType: "text/plain"}, read(t, tc.file)).Body
			if got != want {
				t.Errorf("body of %s without a charset differs from its UTF-8 original's:\n got %.300q\nwant %.300q", tc.file, got, want)
			}
		})
	}
}

func TestUTF8OriginalsKeepEveryWordOfTheFile(t *testing.T) {
	for _, name := range []string{"copyright.utf-8.txt", "apropos-ru.utf-8.txt"} {
		raw := read(t, name)
		got := strings.Fields(body(t, Reader{}, raw).Body)
		want := strings.Fields(string(raw))
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: the body's words are not the file's words in order", name)
		}
	}
}

func TestBlankLinesSeparateParagraphsAndWrappedLinesJoin(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"one\ntwo\n\nthree\n", "one two\nthree"},
		{"  indented\r\n\r\n\r\nwindows\r\nline\r\n", "indented\nwindows line"},
		{"old\rmac\r\rfile", "old mac\nfile"},
		{"page one\fpage two", "page one\npage two"},
		{"\n\n \t\n", ""},
	} {
		if got := body(t, Reader{}, []byte(tc.in)).Body; got != tc.want {
			t.Errorf("body of %q = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestWrappedJapaneseLinesJoinWithoutASpace(t *testing.T) {
	got := body(t, Reader{ContentType: "text/plain; charset=shift_jis"}, read(t, "apropos-ja.shift_jis.txt")).Body
	// In the file "apropos はそ" ends one line and "のマニュアルページ" starts the next.
	if want := "apropos はそのマニュアルページの要約内にある"; !strings.Contains(got, want) {
		t.Errorf("body lacks %q, the words across a line break", want)
	}
}

func TestPlainTextHasNoTitleAuthorOrLinks(t *testing.T) {
	c := body(t, Reader{}, []byte("Title-like first line\n\nSee https://example.org/ for more.\n"))
	if c.Title != "" || c.Heading != "" || len(c.Authors) != 0 || len(c.Links) != 0 || c.Pages != 0 {
		t.Errorf("plain text gave metadata: %+v", c)
	}
}

func TestBodyStopsAtMaxTextOnACharacterBoundary(t *testing.T) {
	c, err := Reader{}.Read(context.Background(), read(t, "apropos-ru.utf-8.txt"), document.Limits{MaxText: 1001})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Truncated || len(c.Body) > 1001 || !utf8.ValidString(c.Body) {
		t.Errorf("truncated=%v, %d bytes, valid UTF-8 %v; want truncated, <= 1001 bytes, valid", c.Truncated, len(c.Body), utf8.ValidString(c.Body))
	}
}

func TestEndedContextIsATimeout(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Reader{}.Read(ctx, read(t, "copyright.utf-8.txt"), document.Limits{})
	var de *document.Error
	if !errors.As(err, &de) || de.Reason != document.ReasonTimeout {
		t.Errorf("Read with an ended context: %v, want reason %q", err, document.ReasonTimeout)
	}
}

func FuzzRead(f *testing.F) {
	for _, tc := range encoded {
		// The first kilobytes carry every feature of a fixture, and whole files make the
		// fuzzer's minimizing of each new input take a minute.
		data := read(f, tc.file)
		f.Add(data[:min(len(data), 2048)], "text/plain; charset="+tc.charset)
	}
	f.Add([]byte("a\r\n\fb\rc"), "text/plain")
	f.Fuzz(func(t *testing.T, data []byte, ct string) {
		c, err := Reader{ContentType: ct}.Read(context.Background(), data, document.Limits{MaxText: 4096})
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if !utf8.ValidString(c.Body) || len(c.Body) > 4096 || strings.Contains(c.Body, "\n\n") {
			t.Fatalf("body not valid UTF-8, over its limit or with an empty line: %q", c.Body)
		}
	})
}

func BenchmarkReadKOI8R(b *testing.B) {
	data := read(b, "apropos-ru.koi8-r.txt")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := (Reader{ContentType: "text/plain; charset=koi8-r"}).Read(context.Background(), data, document.Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
