package hostile

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// decodeAll undoes the layers the bomb's Content-Encoding and Layers name,
// outermost first, and counts the zeros at the bottom.
func decodeAll(t *testing.T, body []byte, layers []string) int64 {
	t.Helper()
	var r io.Reader = bytes.NewReader(body)
	for i := len(layers) - 1; i >= 0; i-- {
		var err error
		if layers[i] == "gzip" {
			r, err = gzip.NewReader(r)
		} else {
			r, err = zlib.NewReader(r)
		}
		if err != nil {
			t.Fatalf("layer %d (%s): %v", i, layers[i], err)
		}
	}
	buf := make([]byte, 1<<20)
	var n int64
	for {
		k, err := r.Read(buf)
		if bytes.ContainsFunc(buf[:k], func(c rune) bool { return c != 0 }) {
			t.Fatal("the bomb decodes to something other than zeros")
		}
		n += int64(k)
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			t.Fatalf("after %d bytes: %v", n, err)
		}
	}
}

func TestBombDecodesToExactlyItsSizeInZerosThroughEveryEncodingAndChecksum(t *testing.T) {
	const size = 3<<20 + 12345
	cases := []struct {
		encoding string
		layers   int
		want     []string
	}{
		{"gzip", 0, []string{"gzip"}},
		{"x-gzip", 0, []string{"gzip"}},
		{"gzip, identity", 0, []string{"gzip"}},
		{"gzip, gzip", 0, []string{"gzip", "gzip"}},
		{"deflate", 0, []string{"deflate"}},
		{"", 1, []string{"gzip"}},
		{"gzip", 1, []string{"gzip", "gzip"}},
	}
	for _, c := range cases {
		b := &Bomb{Size: size, Encoding: c.encoding, Layers: c.layers}
		body, err := b.Body()
		if err != nil {
			t.Fatal(err)
		}
		if got := decodeAll(t, body, c.want); got != size {
			t.Errorf("%q with %d layers decodes to %d bytes, want %d", c.encoding, c.layers, got, size)
		}
		if len(body) > size/500 {
			t.Errorf("%q with %d layers: %d compressed bytes for %d, not a bomb", c.encoding, c.layers, len(body), size)
		}
	}
}

func TestBombServesItsCompressedBodyWithTheHeadersItClaims(t *testing.T) {
	b := &Bomb{Size: 1 << 20, Encoding: "x-gzip"}
	srv := httptest.NewServer(b)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body, _ := b.Body()
	if resp.Header.Get("Content-Encoding") != "x-gzip" || !bytes.Equal(raw, body) {
		t.Errorf("served %d bytes with Content-Encoding %q", len(raw), resp.Header.Get("Content-Encoding"))
	}
	if b.Requests() != 1 || b.Written() != int64(len(body)) {
		t.Errorf("meter: %d requests, %d bytes; want 1 and %d", b.Requests(), b.Written(), len(body))
	}
}

func TestRedirectsLeadThroughEveryHopToTheTargetOrRoundForever(t *testing.T) {
	mux := http.NewServeMux()
	chain := &Redirects{Hops: 7, To: "/end"}
	loop := &Redirects{Hops: 2, Loop: true}
	mux.Handle("/chain", chain)
	mux.Handle("/loop", loop)
	mux.HandleFunc("/end", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "end") })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	var hops int
	client := &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
		hops = len(via)
		if len(via) >= 20 {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := client.Get(srv.URL + "/chain")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/end" || hops != 7 || chain.Requests() != 7 {
		t.Errorf("chain ended at %s after %d hops and %d requests, want /end after 7", resp.Request.URL.Path, hops, chain.Requests())
	}
	resp, err = client.Get(srv.URL + "/loop")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || loop.Requests() != 20 {
		t.Errorf("loop: status %d after %d requests, want 302 after 20", resp.StatusCode, loop.Requests())
	}
}

func TestDripSendsItsHeadAtOnceThenOneByteAtATime(t *testing.T) {
	// The head arrives whole before the first tick: with an hour between
	// ticks nothing else can come with it, however slow the reader.
	slow := &Drip{Head: "<html>", Every: time.Hour, Total: 16}
	srv := httptest.NewServer(slow)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 0, 64)
	for len(head) < len("<html>") {
		buf := make([]byte, 64)
		n, err := resp.Body.Read(buf)
		head = append(head, buf[:n]...)
		if err != nil {
			break
		}
	}
	resp.Body.Close()
	if string(head) != "<html>" {
		t.Errorf("before the first tick the drip sent %q, want its head", head)
	}

	// Then a byte a tick, to Total.
	d := &Drip{Head: "<html>", Every: time.Millisecond, Total: 16}
	srv2 := httptest.NewServer(d)
	defer srv2.Close()
	resp, err = http.Get(srv2.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "<html>"+strings.Repeat(" ", 10) || d.Written() != 16 {
		t.Errorf("read %q, drip wrote %d; want the head and 10 spaces, 16 bytes", body, d.Written())
	}
}

func TestUTF16EncodesEitherByteOrderWithOrWithoutABOM(t *testing.T) {
	if got := UTF16("<é", false, true); !bytes.Equal(got, []byte{0xff, 0xfe, '<', 0, 0xe9, 0}) {
		t.Errorf("little-endian with BOM: % x", got)
	}
	if got := UTF16("<", true, false); !bytes.Equal(got, []byte{0, '<'}) {
		t.Errorf("big-endian: % x", got)
	}
}
