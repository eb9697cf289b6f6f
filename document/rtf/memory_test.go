package rtf

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/text/encoding/japanese"

	"github.com/crawlspace/crawlspace/document"
)

// allocated is how many bytes the read of data allocated: what it costs,
// whatever the garbage collector gave back meanwhile.
func allocated(t *testing.T, data []byte) (uint64, *document.Content) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c, err := Reader{}.Read(context.Background(), data, document.Limits{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	return after.TotalAlloc - before.TotalAlloc, c
}

// One run of 64 MiB of text without a control word, what
// fetch.max_document_bytes lets through and a gzip Content-Encoding
// sends as 64 KB, is read up to the body's limit and costs a few
// megabytes, not several times the run.
func TestARunOfMegabytesCostsTheBodyNotTheRun(t *testing.T) {
	data := []byte(`{\rtf1\ansi ` + strings.Repeat("a", 64<<20) + `}`)
	spent, c := allocated(t, data)
	t.Logf("a run of 64 MiB: %d MiB allocated", spent>>20)
	if !c.Truncated || len(c.Body) != document.DefaultMaxText {
		t.Errorf("body of %d bytes, truncated %v; want the body's limit", len(c.Body), c.Truncated)
	}
	if spent > 32<<20 {
		t.Errorf("the read allocated %d MiB", spent>>20)
	}
}

// A font table of 700,000 fonts, each with a code page, keeps no more of
// them than maxFonts.
func TestAFontTableOfHundredsOfThousandsCostsLittle(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{\rtf1\ansi{\fonttbl`)
	for i := 0; b.Len() < 16<<20; i++ {
		b.WriteString(`{\f` + strconv.Itoa(i) + `\fcharset204 F;}`)
	}
	b.WriteString(`}text}`)
	spent, c := allocated(t, []byte(b.String()))
	t.Logf("a font table of 16 MiB: %d MiB allocated", spent>>20)
	if c.Body != "text" || spent > 16<<20 {
		t.Errorf("body %q, %d MiB allocated", c.Body, spent>>20)
	}
}

// A run of Shift_JIS text decoded as it comes keeps each double-byte
// character whole where the run is cut, whichever byte the cut falls on.
func TestARunDecodedAsItComesKeepsDoubleByteCharactersWhole(t *testing.T) {
	text := strings.Repeat("日本語のテキスト", maxPend/8)
	sjis, err := japanese.ShiftJIS.NewEncoder().String(text)
	if err != nil {
		t.Fatal(err)
	}
	// Each byte as \'hh, as writers send 8-bit text: a trail byte may be
	// a brace or a backslash.
	var escaped strings.Builder
	for i := range len(sjis) {
		fmt.Fprintf(&escaped, `\'%02x`, sjis[i])
	}
	// Sixteen bytes a repeat: without a lead the cuts fall between
	// characters, with one inside them.
	for _, lead := range []string{"", "a"} {
		data := []byte(`{\rtf1\ansi\ansicpg932 ` + lead + escaped.String() + `}`)
		c, err := Reader{}.Read(context.Background(), data, document.Limits{MaxText: 4 * len(text)})
		if err != nil {
			t.Fatal(err)
		}
		if c.Body != lead+text {
			i := 0
			for i < min(len(c.Body), len(lead+text)) && c.Body[i] == (lead + text)[i] {
				i++
			}
			t.Errorf("lead %q: the body differs from the text at byte %d: %.30q", lead, i, c.Body[i:])
		}
	}
}
