package provider

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/sink"
)

// benchPage is a page of about 30 KB, the size the bench/ site serves.
func benchPage() []byte {
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><title>bench</title></head><body>")
	for i := 0; b.Len() < 30<<10; i++ {
		fmt.Fprintf(&b, `<p>Paragraph %d of a page of ordinary prose, with a <a href="/p/%d.html">link</a> in it.</p>`, i, i)
	}
	b.WriteString("</body></html>")
	return []byte(b.String())
}

// BenchmarkPageFetch measures a page's fetch through a source's transport
// and collector over loopback, as the worker makes it: plain, and gzip
// encoded as most servers send it.
func BenchmarkPageFetch(b *testing.B) {
	page := benchPage()
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write(page)
	zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path == "/gzip" && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(zipped.Bytes())
			return
		}
		w.Write(page)
	}))
	defer srv.Close()
	dir := b.TempDir()
	cfg, err := config.Parse(filepath.Join(dir, "c.yaml"), fmt.Appendf(nil,
		"state_dir: %s\noutput: {file: %s}\nallow_private_networks: true\nsources:\n  - name: s\n    start_urls: [%q]\n",
		filepath.Join(dir, "state"), filepath.Join(dir, "out.ndjson"), srv.URL+"/"))
	if err != nil {
		b.Fatal(err)
	}
	set, err := rules.Compile(cfg)
	if err != nil {
		b.Fatal(err)
	}
	c, err := New(cfg, set, sink.Opener(b.Context(), cfg), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	src := c.order[0]
	for _, path := range []string{"/plain", "/gzip"} {
		b.Run(path[1:], func(b *testing.B) {
			b.SetBytes(int64(len(page)))
			b.ReportAllocs()
			for b.Loop() {
				res := src.fetch.Page(context.Background(), srv.URL+path, http.Header{})
				if res.Err != nil || len(res.Body) != len(page) {
					b.Fatalf("fetch: %v, %d bytes", res.Err, len(res.Body))
				}
			}
		})
	}
}
