package sitemap

import (
	"bytes"
	"fmt"
	"testing"
)

// urlset50k is a sitemap at the protocol's URL cap, shaped like a
// generator's output (about 9 MB).
func urlset50k() []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">` + "\n")
	for i := range 50000 {
		fmt.Fprintf(&b, "  <url>\n    <loc>https://www.example.com/products/category-%d/item-%d.html</loc>\n"+
			"    <lastmod>2024-05-%02dT10:%02d:00+00:00</lastmod>\n    <changefreq>weekly</changefreq>\n    <priority>0.5</priority>\n  </url>\n",
			i%97, i, 1+i%28, i%60)
	}
	b.WriteString("</urlset>\n")
	return b.Bytes()
}

// benchParse reports MB/s of decompressed input, plain bytes the parser has
// to get through.
func benchParse(b *testing.B, doc []byte, plainSize, wantURLs int) {
	lim := Limits{MaxBytes: 64 << 20}
	b.SetBytes(int64(plainSize))
	b.ReportAllocs()
	for b.Loop() {
		res, err := Parse(bytes.NewReader(doc), "", lim)
		if err != nil || len(res.URLs) != wantURLs {
			b.Fatalf("%d URLs, %v", len(res.URLs), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(wantURLs), "ns/url")
}

func BenchmarkParseURLSet50k(b *testing.B) {
	doc := urlset50k()
	benchParse(b, doc, len(doc), 50000)
}

func BenchmarkParseURLSet50kGzip(b *testing.B) {
	doc := urlset50k()
	benchParse(b, gzipBytes(b, doc), len(doc), 50000)
}

func BenchmarkParseText50k(b *testing.B) {
	var doc bytes.Buffer
	for i := range 50000 {
		fmt.Fprintf(&doc, "https://www.example.com/products/category-%d/item-%d.html\n", i%97, i)
	}
	benchParse(b, doc.Bytes(), doc.Len(), 50000)
}
