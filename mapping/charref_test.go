package mapping

import (
	"slices"
	"strings"
	"testing"
)

// Character references through the extractor: the lexer decodes them
// (package htmllex, whose tests hold the standard's cases); these check
// that the page mapping reads text and every attribute by the right rules.

func TestTextKeepsTheTextRulesForReferencesWithoutASemicolon(t *testing.T) {
	x := newExtractor(t, nil)
	// In text a legacy name is decoded whatever follows it; only in an
	// attribute does '=' or an alphanumeric keep it as written.
	res := extract(t, x, "http://h.test/", `<title>&sectio &copy=</title><p>a&sectio &notit; &copy=1 &AMPx &#x80;</p>`+
		`<a href="/p?a=1&sectio=2&copy=3">x</a>`)
	if want := "§io ©="; res.Doc.Title != want {
		t.Errorf("title %q, want %q", res.Doc.Title, want)
	}
	if want := "a§io ¬it; ©=1 &x €"; !strings.HasPrefix(res.Doc.Body, want) {
		t.Errorf("body %q, want it to begin %q", res.Doc.Body, want)
	}
	if got, want := linkURLs(res), []string{"http://h.test/p?a=1&sectio=2&copy=3"}; !slices.Equal(got, want) {
		t.Errorf("links %q, want %q", got, want)
	}
}

func linkURLs(res *Result) []string {
	var out []string
	for _, l := range res.Links {
		out = append(out, l.URL)
	}
	return out
}

// Every attribute the extractor reads is decoded by the attribute rules:
// links of each kind, the canonical, <base>, a refresh target, metadata,
// rel, and the values extraction rules and microdata or RDFa read from the
// page's tree.
func TestEveryAttributeTheExtractorReadsIsDecodedAsAnAttribute(t *testing.T) {
	x := extractorFor(t, `extra_fields: {extra_link: keyword, extra_name: keyword, extra_url: keyword, extra_cat: keyword, extra_data: keyword}
sources:
  - name: s
    start_urls: ["http://s.test/"]
    extraction:
      meta_mappings: ["category:extra_cat"]
      structured_data_mappings: ["Product.name:extra_name", "Product.url:extra_url"]
      rules:
        - fields:
            - {field: extra_link, selector: "a.more", attribute: href, values: all}
            - {field: extra_data, selector: "[data-ref]", attribute: data-ref, values: all}
`)
	res := extract(t, x, "http://s.test/dir/page.html", `<html><head>
<base href="/b&region=eu/">
<link rel="canonical" href="/c?a=1&section=2">
<meta http-equiv="refresh" content="5; url=/r?a=1&not=2">
<meta name="description" content="Rates &sect=2 &amp; more &copy 2024 &reg;">
<meta name="category" content="a&times=b">
</head><body>
<a href="/l?a=1&param=2" rel="no&#102;ollow">l</a>
<a class="more" href="/m?a=1&notify=yes&amp;b=&#x41;">m</a>
<area href="area?a=1&copy=2">
<iframe src="/i?a=1&reg=2"></iframe>
<p data-ref="x&lang=y">d</p>
<div itemscope itemtype="https://schema.org/Product">
  <meta itemprop="name" content="Kettle &sectio">
  <a itemprop="url" href="/k?a=1&region=eu">k</a>
</div>
</body></html>`)
	d := res.Doc
	if want := "http://s.test/c?a=1&section=2"; res.Canonical != want {
		t.Errorf("canonical %q, want %q", res.Canonical, want)
	}
	if want := "Rates &sect=2 & more © 2024 ®"; d.Description != want {
		t.Errorf("description %q, want %q", d.Description, want)
	}
	wantLinks := map[string]string{
		"http://s.test/r?a=1&not=2":                 "meta",
		"http://s.test/l?a=1&param=2":               "a",
		"http://s.test/m?a=1&notify=yes&b=A":        "a",
		"http://s.test/b&region=eu/area?a=1&copy=2": "area",
		"http://s.test/i?a=1&reg=2":                 "iframe",
		"http://s.test/k?a=1&region=eu":             "a",
	}
	for _, l := range res.Links {
		if tag, ok := wantLinks[l.URL]; !ok || tag != l.Tag {
			t.Errorf("link %q (%s) not expected", l.URL, l.Tag)
		}
		delete(wantLinks, l.URL)
		if l.URL == "http://s.test/l?a=1&param=2" && !l.NoFollow {
			t.Errorf("%s: rel=\"no&#102;ollow\" not read as nofollow", l.URL)
		}
	}
	for u := range wantLinks {
		t.Errorf("link %q not found", u)
	}
	for f, want := range map[string][]string{
		"extra_link": {"/m?a=1&notify=yes&b=A"},
		"extra_data": {"x&lang=y"},
		"extra_cat":  {"a&times=b"},
		"extra_name": {"Kettle &sectio"},
		"extra_url":  {"/k?a=1&region=eu"},
	} {
		if got := d.Extra[f]; !slices.Equal(got, want) {
			t.Errorf("%s = %q, want %q", f, got, want)
		}
	}
}
