package document

import (
	"strings"
	"testing"
)

func TestTextNormalisesSpaceAndBreaksBlocksWithoutEmptyLines(t *testing.T) {
	x := NewText(0)
	x.Break()
	x.WriteString("  Annual\t\treport ")
	x.WriteString("2024\n")
	x.Break()
	x.Break()
	x.WriteString("cell one")
	x.Space()
	x.WriteString("cell two")
	x.Break()
	if got, want := x.String(), "Annual report 2024\ncell one cell two"; got != want {
		t.Fatalf("text = %q, want %q", got, want)
	}
	if x.Truncated() {
		t.Fatal("a short text is not truncated")
	}
}

func TestTextStopsAtItsLimitOnACharacterBoundary(t *testing.T) {
	x := NewText(10)
	x.WriteString("ééééé" + "é") // 12 bytes
	if got := x.String(); got != "ééééé" || !x.Truncated() || !x.Full() {
		t.Fatalf("text = %q truncated=%v, want five é and truncated", got, x.Truncated())
	}
	x.WriteString("more")
	if strings.Contains(x.String(), "more") {
		t.Fatal("text written after the limit was kept")
	}
}

func TestTextReplacesInvalidUTF8(t *testing.T) {
	x := NewText(0)
	x.WriteString("a\xffb")
	if got := x.String(); got != "a\uFFFDb" {
		t.Fatalf("text = %q, want a U+FFFD between a and b", got)
	}
}

func TestTextWriteBytesIsWriteString(t *testing.T) {
	for _, s := range []string{"  Annual\t\treport ", "a\xffb\xe2\x82", "ééééé é", "x\x00y\n\nz"} {
		for _, max := range []int{0, 5} {
			a, b := NewText(max), NewText(max)
			a.WriteString(s)
			b.WriteBytes([]byte(s))
			if a.String() != b.String() || a.Truncated() != b.Truncated() {
				t.Errorf("%q at %d: WriteBytes gave %q (truncated %v), WriteString %q (%v)",
					s, max, b.String(), b.Truncated(), a.String(), a.Truncated())
			}
		}
	}
}
