package fetch

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/internal/hostile"
)

// counted counts the bytes read from beneath a decoder.
type counted struct {
	r io.Reader
	n int64
}

func (c *counted) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func decodeWith(encoding string, raw io.Reader, limit int64) ([]byte, error) {
	b := &decodedBody{raw: io.NopCloser(raw), limit: limit}
	b.layers, b.unknown = contentCodings(encoding)
	return io.ReadAll(b)
}

func gzipOf(t *testing.T, p []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(p)
	w.Close()
	return buf.Bytes()
}

func TestDecodedBodyOfExactlyTheLimitIsWholeAndOneByteMoreIsTooLarge(t *testing.T) {
	const limit = 1000
	for _, enc := range []string{"", "gzip", "x-gzip", "gzip, identity"} {
		for _, size := range []int{limit, limit + 1} {
			body := bytes.Repeat([]byte("a"), size)
			raw := body
			if enc != "" {
				raw = gzipOf(t, body)
			}
			got, err := decodeWith(enc, bytes.NewReader(raw), limit)
			var tl *tooLargeError
			switch {
			case size == limit && (err != nil || !bytes.Equal(got, body)):
				t.Errorf("%q, %d bytes: got %d bytes, err %v; want it whole", enc, size, len(got), err)
			case size > limit && (!errors.As(err, &tl) || len(got) != limit):
				t.Errorf("%q, %d bytes: got %d bytes, err %v; want %d and too large", enc, size, len(got), err, limit)
			}
		}
	}
}

func TestDecodedBodyStopsABombAfterTheLimitHavingReadLittleOfIt(t *testing.T) {
	const limit = 1 << 20
	for _, enc := range []string{"gzip", "gzip, gzip", "deflate"} {
		bomb := &hostile.Bomb{Size: 1 << 30, Encoding: enc}
		body, err := bomb.Body()
		if err != nil {
			t.Fatal(err)
		}
		raw := &counted{r: bytes.NewReader(body)}
		got, err := decodeWith(enc, raw, limit)
		var tl *tooLargeError
		if !errors.As(err, &tl) || len(got) != limit {
			t.Errorf("%s: %d bytes, err %v; want %d and too large", enc, len(got), err, limit)
		}
		// A mebibyte of zeros takes about a kilobyte of deflate.
		if raw.n > 64<<10 {
			t.Errorf("%s: read %d of the bomb's %d compressed bytes to decode %d", enc, raw.n, len(body), limit)
		}
	}
}

func TestDecodedBodyCapsTheCompressedBytesOfAStreamThatDecodesToNothing(t *testing.T) {
	const limit = 1000
	// A gzip member of empty stored blocks: input without output, forever.
	var stream bytes.Buffer
	stream.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	for range 100000 {
		stream.Write([]byte{0, 0, 0, 0xff, 0xff})
	}
	raw := &counted{r: &stream}
	got, err := decodeWith("gzip", raw, limit)
	var tl *tooLargeError
	if !errors.As(err, &tl) || len(got) != 0 {
		t.Errorf("got %d bytes, err %v; want none and too large", len(got), err)
	}
	if inCap := int64(2*limit + 64<<10); raw.n > inCap+8<<10 {
		t.Errorf("read %d compressed bytes, past the cap of %d", raw.n, inCap)
	}
}

func TestDecodedBodyInACodingItIsNotInIsAnEncodingError(t *testing.T) {
	cases := map[string]string{"gzip": "<html>plain</html>", "deflate": "\xff\xff\xff\xff", "br": "\x1b\x03\x00"}
	for enc, body := range cases {
		_, err := decodeWith(enc, strings.NewReader(body), 1000)
		var ee *encodingError
		if !errors.As(err, &ee) || ee.coding != enc {
			t.Errorf("%s over %q: err %v, want an encoding error", enc, body, err)
		}
		if reason, temporary := Classify(err); reason != "content_encoding" || temporary {
			t.Errorf("%s: classified %s (temporary %v), want content_encoding for good", enc, reason, temporary)
		}
	}
}

func TestDecodedBodyReadsRawDeflateAndZlibAndAnEmptyBodyInAnyCoding(t *testing.T) {
	page := []byte("<html><title>t</title></html>")
	var raw bytes.Buffer
	w, _ := flate.NewWriter(&raw, flate.DefaultCompression)
	w.Write(page)
	w.Close()
	if got, err := decodeWith("deflate", &raw, 1000); err != nil || !bytes.Equal(got, page) {
		t.Errorf("raw deflate: %q, %v", got, err)
	}
	for _, enc := range []string{"gzip", "deflate", "gzip, gzip"} {
		if got, err := decodeWith(enc, strings.NewReader(""), 1000); err != nil || len(got) != 0 {
			t.Errorf("empty body in %s: %q, %v", enc, got, err)
		}
	}
}

func TestDecodedBodyUnzipsWhatATypeOrPathCallsGzipOnlyWhenItIsGzip(t *testing.T) {
	page := []byte("<html>page</html>")
	for _, raw := range [][]byte{gzipOf(t, page), page} {
		b := &decodedBody{raw: io.NopCloser(bytes.NewReader(raw)), limit: 1000, sniff: true}
		if got, err := io.ReadAll(b); err != nil || !bytes.Equal(got, page) {
			t.Errorf("sniffed %q: %q, %v", raw[:4], got, err)
		}
	}
}
