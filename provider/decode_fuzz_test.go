package provider

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

// FuzzRetryAfterIsNeverNegativeNorPastRetryMax reads any Retry-After a
// server sends: the wait is never negative, never past retryMax.
func FuzzRetryAfterIsNeverNegativeNorPastRetryMax(f *testing.F) {
	for _, v := range []string{"120", "0", "-5", "Wed, 21 Oct 2015 07:28:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT",
		"99999999999999999999", " 30 ", "1e3", ""} {
		f.Add(v, 3)
	}
	f.Fuzz(func(t *testing.T, v string, attempts int) {
		d := retryAfter(v, attempts)
		if d < 0 || d > retryMax {
			t.Fatalf("retryAfter(%q, %d) = %s, want within [0, %s]", v, attempts, d, retryMax)
		}
	})
}

// A Retry-After of 292 years overflowed into the past, and the host was
// asked again at once: it waits retryMax instead, as for any long wait.
func TestRetryAfterPastAnyDurationWaitsRetryMaxInsteadOfNothing(t *testing.T) {
	for _, v := range []string{"9227000000", "99999999999999999999"} {
		if got := retryAfter(v, 0); got != retryMax {
			t.Errorf("retryAfter(%q) = %s, want %s", v, got, retryMax)
		}
	}
	if got := backoff(-6); got != retryBase {
		t.Errorf("backoff of a damaged count -6 = %s, want %s", got, retryBase)
	}
}
