package mapping

import (
	"bytes"
	"net/http"
	"net/url"
	"testing"

	"github.com/crawlspace/crawlspace/internal/benchpage"
)

func BenchmarkExtract(b *testing.B) {
	cfg := loadConfig(b, `extra_fields: {extra_category: keyword}
sources:
  - name: bench
    start_urls: ["https://intranet.example.test/"]
    extraction:
      remove_elements: [header, footer, nav, aside]
      meta_mappings: ["category:extra_category"]
`)
	x := New(cfg, &cfg.Sources[0])
	body := benchpage.HTML()
	u, _ := url.Parse("https://intranet.example.test/guides/planning/quarterly.html")
	page := Page{URL: u, Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}, Body: body, Source: "bench"}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	var res *Result
	var err error
	for b.Loop() {
		if res, err = x.Extract(page); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(body)), "page-bytes")
	b.ReportMetric(float64(len(res.Links)), "links")
}

// BenchmarkExtractFields is BenchmarkExtract's page with what issue 17
// added at work: language detection (the page's lang removed), JSON-LD
// read into the defaults and a mapping, and extraction rules with
// selectors (the page parsed a second time into a tree).
func BenchmarkExtractFields(b *testing.B) {
	base := benchpage.HTML()
	undeclared := bytes.Replace(base, []byte(` lang="en"`), nil, 1)
	withLD := bytes.Replace(undeclared, []byte("</head>"), []byte(`<script type="application/ld+json">{"@context":"https://schema.org","@type":"Article","headline":"Quarterly planning","dateModified":"2025-01-02","author":{"@type":"Person","name":"Planning office"}}</script></head>`), 1)
	for _, bc := range []struct {
		name, extraction string
		body             []byte
	}{
		{"language", "", undeclared},
		{"language-of-3", `      languages: [en, de, fr]
`, undeclared},
		{"language+jsonld", `      structured_data_mappings: ["Article.headline:extra_category"]
`, withLD},
		{"language+jsonld+selectors", `      structured_data_mappings: ["Article.headline:extra_category"]
      rules:
        - include: [/guides/]
          fields:
            - {field: extra_category, selector: "h2", values: all}
            - {field: extra_category, selector: "a[href^='/about/']", attribute: href}
`, withLD},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := loadConfig(b, `extra_fields: {extra_category: keyword}
sources:
  - name: bench
    start_urls: ["https://intranet.example.test/"]
    extraction:
      remove_elements: [header, footer, nav, aside]
      meta_mappings: ["category:extra_category"]
`+bc.extraction)
			x := New(cfg, &cfg.Sources[0])
			u, _ := url.Parse("https://intranet.example.test/guides/planning/quarterly.html")
			page := Page{URL: u, Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}, Body: bc.body, Source: "bench"}
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				res, err := x.Extract(page)
				if err != nil {
					b.Fatal(err)
				}
				if res.Doc.Language == "" {
					b.Fatal("no language detected")
				}
			}
		})
	}
}
