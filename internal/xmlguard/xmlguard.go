// Package xmlguard bounds the input one token of an encoding/xml Decoder
// may take. The decoder holds a token whole while it reads it, in a buffer
// that doubles as it grows, and builds a start tag's attributes at several
// times the bytes they took: whatever one token may span is what one read
// may cost, however small the stream was before it was decompressed.
package xmlguard

import "io"

// Reader is the stream a Decoder reads: it fails a read with its error
// once the token being decoded has taken more than its bound. Mark must be
// called before each Token. The decoder reads through a 4 KiB buffer
// that may hold the token's first bytes before Mark, and a read may end
// 4 KiB past the bound: a token is cut at most 8 KiB past it.
type Reader struct {
	r    io.Reader
	max  int64
	err  error
	n    int64 // bytes read so far
	mark int64 // n when the current token began
}

// New is a Reader of r that allows a token max bytes and then fails with
// err.
func New(r io.Reader, max int64, err error) *Reader {
	return &Reader{r: r, max: max, err: err}
}

// Mark says that a token begins.
func (g *Reader) Mark() { g.mark = g.n }

func (g *Reader) Read(b []byte) (int, error) {
	if g.n-g.mark > g.max {
		return 0, g.err
	}
	n, err := g.r.Read(b)
	g.n += int64(n)
	return n, err
}
