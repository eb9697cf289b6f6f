package fetch

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"errors"
	"io"
	"testing"

	"github.com/crawlspace/crawlspace/internal/hostile"
)

// FuzzDecodedBodyNeverPassesItsLimit feeds the decoding layer every body and
// Content-Encoding a server could send: it must never hand over more than
// its limit, never panic, and fail only as too large, as not in its coding,
// or as cut short.
func FuzzDecodedBodyNeverPassesItsLimit(f *testing.F) {
	var deflated, zlibbed bytes.Buffer
	fw, _ := flate.NewWriter(&deflated, flate.BestCompression)
	fw.Write(bytes.Repeat([]byte("<p>deflate</p>"), 100))
	fw.Close()
	zw := zlib.NewWriter(&zlibbed)
	zw.Write([]byte("<title>zlib</title>"))
	zw.Close()
	f.Add("gzip", false, uint16(4096), hostile.GzipZeros(1<<20))
	f.Add("x-gzip, identity", false, uint16(100), hostile.GzipZeros(200))
	f.Add("gzip, gzip", false, uint16(64), append(hostile.GzipZeros(10), 0x1f, 0x8b))
	f.Add("deflate", false, uint16(2000), deflated.Bytes())
	f.Add("deflate", false, uint16(2000), zlibbed.Bytes())
	f.Add("", true, uint16(512), hostile.GzipZeros(5000))
	f.Add("", true, uint16(512), []byte("<html>not gzip at all</html>"))
	f.Add("br", false, uint16(512), []byte{0x0b, 0x02, 0x80})
	f.Add("identity", false, uint16(3), []byte("four"))
	f.Fuzz(func(t *testing.T, encoding string, sniff bool, limit uint16, raw []byte) {
		lim := int64(limit) + 1
		b := &decodedBody{raw: io.NopCloser(bytes.NewReader(raw)), limit: lim, sniff: sniff}
		b.layers, b.unknown = contentCodings(encoding)
		out, err := io.ReadAll(b)
		if int64(len(out)) > lim {
			t.Fatalf("decoded %d bytes past the limit of %d", len(out), lim)
		}
		var tooLarge *tooLargeError
		var notCoded *encodingError
		switch {
		case err == nil, errors.As(err, &tooLarge), errors.As(err, &notCoded), errors.Is(err, io.ErrUnexpectedEOF):
		default:
			t.Fatalf("read failed with %T %v", err, err)
		}
		if len(b.layers) == 0 && b.unknown == "" && !sniff {
			// Nothing to undo: the body passes as it came, up to the limit.
			want := raw[:min(int64(len(raw)), lim)]
			if !bytes.Equal(out, want) {
				t.Fatalf("identity body changed: %q, want %q", out, want)
			}
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
