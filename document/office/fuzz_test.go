package office

import (
	"archive/zip"
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/document"
)

var kinds = []Kind{DOCX, XLSX, PPTX, ODT, ODS, ODP}

// FuzzRead feeds every reader and Detect. The seeds are the fixtures as
// LibreOffice wrote them and stored uncompressed, so that mutations reach
// the XML rather than break the deflate streams. Run it with a short
// -fuzzminimizetime (e.g. 200x): minimizing a 30 KB input for the default
// 60s stalls the fuzzer after every new input.
func FuzzRead(f *testing.F) {
	for i, fx := range fixtures {
		data := fixture(f, fx.file)
		f.Add(data, uint8(i))
		f.Add(rewrite(f, data, zip.Store, nil), uint8(i))
	}
	f.Add(fixture(f, "encrypted.odt"), uint8(3))
	f.Add(fixture(f, "encrypted.docx"), uint8(0))
	f.Add(cfb("Root Entry", "EncryptionInfo", "EncryptedPackage"), uint8(0))
	lim := document.Limits{MaxText: 1 << 16, MaxUnpacked: 8 << 20, MaxEntries: 200}
	f.Fuzz(func(t *testing.T, data []byte, k uint8) {
		Detect(data)
		c, err := NewReader(kinds[int(k)%len(kinds)]).Read(context.Background(), data, lim)
		if err != nil {
			if document.ReasonOf(err) == document.ReasonFailed {
				t.Fatalf("an error without a reason: %v", err)
			}
			return
		}
		if len(c.Body) > lim.MaxText {
			t.Fatalf("body of %d bytes past MaxText", len(c.Body))
		}
	})
}

func BenchmarkRead(b *testing.B) {
	for _, fx := range fixtures {
		data := fixture(b, fx.file)
		r := NewReader(fx.kind)
		b.Run(fx.file, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Read(context.Background(), data, document.Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadLarge reads each fixture with its body repeated to a few MB
// of XML, where the per-file cost (styles, relationships) no longer
// dominates. SetBytes is the unpacked size of all entries: the zip of a
// repeated body is tiny, so its own size says little.
func BenchmarkReadLarge(b *testing.B) {
	grow := map[Kind][3]string{ // part, repeat what lies between these two
		DOCX: {"word/document.xml", "<w:body>", "<w:sectPr"},
		XLSX: {"xl/worksheets/sheet1.xml", "<sheetData>", "</sheetData>"},
		PPTX: {"ppt/slides/slide1.xml", "</p:grpSpPr>", "</p:spTree>"},
		ODT:  {"content.xml", "</text:sequence-decls>", "</office:text>"},
		ODS:  {"content.xml", "<office:spreadsheet>", "</office:spreadsheet>"},
		ODP:  {"content.xml", "<office:presentation>", "</office:presentation>"},
	}
	for _, fx := range fixtures {
		g := grow[fx.kind]
		data := rewrite(b, fixture(b, fx.file), zip.Deflate, map[string]func(string) string{
			g[0]: func(s string) string {
				i, j := strings.Index(s, g[1]), strings.Index(s, g[2])
				if i < 0 || j < i {
					b.Fatalf("%s: no %s...%s", fx.file, g[1], g[2])
				}
				i += len(g[1])
				return s[:i] + strings.Repeat(s[i:j], (4<<20)/(j-i+1)) + s[j:]
			},
		})
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			b.Fatal(err)
		}
		var unpacked int64
		for _, f := range zr.File {
			unpacked += int64(f.UncompressedSize64)
		}
		r := NewReader(fx.kind)
		lim := document.Limits{MaxText: 256 << 20}
		b.Run(fx.file, func(b *testing.B) {
			b.SetBytes(unpacked)
			b.ReportAllocs()
			for b.Loop() {
				c, err := r.Read(context.Background(), data, lim)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(len(c.Body)), "body-bytes")
			}
		})
	}
}
