package hostile

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// Bomb serves a compression bomb: a body of Size zero bytes, compressed
// about a thousand to one, so a few megabytes on the wire decode to
// gigabytes. The compressed body is built once per Bomb, without ever
// holding the decoded bytes.
//
// Encoding is the Content-Encoding header as sent ("gzip", "x-gzip",
// "gzip, identity", "gzip, gzip", "deflate"; "" sends none): each gzip or
// x-gzip token is a gzip layer and each deflate token a zlib layer, applied
// in the order listed, so the body is what the header says. Layers adds
// that many gzip layers beneath the Content-Encoding ones, which belong to
// the content itself, as in a sitemap.xml.gz or a body whose Content-Type
// says gzip. ContentType defaults to "text/html; charset=utf-8".
type Bomb struct {
	Size        int64
	Encoding    string
	Layers      int
	ContentType string
	Meter

	once sync.Once
	body []byte
	err  error
}

// Body is the compressed body the bomb serves.
func (b *Bomb) Body() ([]byte, error) {
	b.once.Do(func() { b.body, b.err = b.build() })
	return b.body, b.err
}

func (b *Bomb) build() ([]byte, error) {
	tokens := encodingTokens(b.Encoding)
	layers := make([]string, 0, b.Layers+len(tokens))
	for range b.Layers {
		layers = append(layers, "gzip")
	}
	layers = append(layers, tokens...)
	if len(layers) == 0 {
		return nil, fmt.Errorf("hostile: a bomb of %d zeros needs an encoding or a layer", b.Size)
	}
	var body []byte
	switch layers[0] {
	case "gzip":
		body = GzipZeros(b.Size)
	case "deflate":
		body = zlibZeros(b.Size)
	}
	for _, l := range layers[1:] {
		var buf bytes.Buffer
		var w interface {
			Write([]byte) (int, error)
			Close() error
		}
		if l == "gzip" {
			w, _ = gzip.NewWriterLevel(&buf, gzip.BestCompression)
		} else {
			w, _ = zlib.NewWriterLevel(&buf, zlib.BestCompression)
		}
		w.Write(body)
		w.Close()
		body = buf.Bytes()
	}
	return body, nil
}

// encodingTokens reads a Content-Encoding value into its layers, dropping
// identity.
func encodingTokens(v string) []string {
	var out []string
	for t := range strings.SplitSeq(v, ",") {
		switch strings.ToLower(strings.TrimSpace(t)) {
		case "gzip", "x-gzip":
			out = append(out, "gzip")
		case "deflate":
			out = append(out, "deflate")
		}
	}
	return out
}

func (b *Bomb) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := b.Body()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	cw := b.count(w)
	ct := b.ContentType
	if ct == "" {
		ct = "text/html; charset=utf-8"
	}
	w.Header().Set("Content-Type", ct)
	if b.Encoding != "" {
		w.Header().Set("Content-Encoding", b.Encoding)
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	const chunk = 32 << 10
	for len(body) > 0 {
		n := min(chunk, len(body))
		if _, err := cw.Write(body[:n]); err != nil {
			return // the client hung up, as it should
		}
		body = body[n:]
	}
}

// zeroRuns are the raw deflate runs of n zeros and their CRC-32, by n,
// each built once: the CRC of gigabytes is most of a bomb's cost, and a
// test serves many bombs of one size.
var zeroRuns sync.Map // int64 -> *zeroRun

type zeroRun struct {
	once sync.Once
	body []byte
	crc  uint32
}

// zeros is the raw deflate run of n zeros and its CRC-32; callers copy
// the body, never change it.
func zeros(n int64) ([]byte, uint32) {
	v, _ := zeroRuns.LoadOrStore(n, &zeroRun{})
	r := v.(*zeroRun)
	r.once.Do(func() { r.body, r.crc, _ = deflateRun("", "\x00", int(n), "") })
	return r.body, r.crc
}

// GzipZeros is a valid gzip stream (RFC 1952) that decodes to n zeros.
func GzipZeros(n int64) []byte {
	body, crc := zeros(n)
	out := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 0xff}
	out = append(out, body...)
	out = binary.LittleEndian.AppendUint32(out, crc)
	return binary.LittleEndian.AppendUint32(out, uint32(n))
}

// zlibZeros is a zlib stream (RFC 1950, what HTTP calls deflate) of n zeros.
func zlibZeros(n int64) []byte {
	body, _ := zeros(n)
	out := []byte{0x78, 0xda}
	out = append(out, body...)
	// Adler-32 of zeros: the sum a stays 1, so b is n.
	return binary.BigEndian.AppendUint32(out, uint32(n%65521)<<16|1)
}
