package charset

import (
	"testing"
	"unicode/utf8"

	"github.com/crawlspace/crawlspace/internal/hostile"
)

// FuzzDecodeBodyAlwaysGivesUTF8 decodes any body under any declared
// charset, as a server may send them: the text handed to extraction is
// always valid UTF-8, and a charset is always named for it.
func FuzzDecodeBodyAlwaysGivesUTF8(f *testing.F) {
	f.Add([]byte("<meta charset=shift_jis><p>\x82\xa0</p>"), "")
	f.Add([]byte("<p>caf\xc3\xa9</p>"), "utf-16")
	f.Add(hostile.UTF16("<p>hello</p>", true, true), "utf-8")
	f.Add(hostile.UTF16("<p>hello</p>", false, false), "utf-16le")
	f.Add([]byte("\xef\xbb\xbf<p>bom</p>"), "iso-8859-1")
	f.Add([]byte("\xa4\xa2\xff\xfe"), "euc-jp")
	f.Add([]byte("<p>\x80\x81\x82</p>"), "windows-1252")
	f.Add([]byte{0xd8, 0x00, 0x00, 0x41}, "utf-16be")
	f.Add([]byte("<meta http-equiv=content-type content='text/html; charset=gb18030'>\x81\x30"), "x-unknown")
	f.Fuzz(func(t *testing.T, body []byte, charset string) {
		out, used, _ := Decode(body, charset)
		if !utf8.Valid(out) {
			t.Fatalf("decoded as %s into invalid UTF-8 %q", used, out)
		}
		if used == "" {
			t.Fatal("no charset named for the decoded text")
		}
	})
}
