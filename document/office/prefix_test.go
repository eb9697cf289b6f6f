package office

import (
	"os"
	"path/filepath"
	"testing"
)

// A download's kind is told from its first 8 KB, as the fetcher sees them
// before the body has come: every fixture LibreOffice made is recognised.
func TestTheKindOfEveryFixtureIsToldFromItsFirstBytes(t *testing.T) {
	for file, want := range map[string]Kind{"text.docx": DOCX, "sheets.xlsx": XLSX, "slides.pptx": PPTX,
		"text.odt": ODT, "sheets.ods": ODS, "slides.odp": ODP} {
		b, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := DetectPrefix(b[:min(len(b), 8192)]); !ok || got != want {
			t.Errorf("%s: DetectPrefix = %q, %v; want %q", file, got, ok, want)
		}
	}
	if _, ok := DetectPrefix([]byte("PK\x03\x04 too short")); ok {
		t.Error("a truncated header was given a kind")
	}
	if _, ok := DetectPrefix([]byte("<!doctype html>")); ok {
		t.Error("an HTML page was given a kind")
	}
}

func FuzzDetectPrefix(f *testing.F) {
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, b []byte) { DetectPrefix(b) })
}
