package office

import (
	"archive/zip"
	"context"
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
