package provider_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
)

// fieldsSite serves pages that exercise extraction rules, structured data
// and language detection.
func fieldsSite(t *testing.T) *httptest.Server {
	pages := map[string]string{
		"/": `<html lang="en"><title>Home</title><a href="/news/2025/rates.html">rates</a> <a href="/de/start.html">de</a>
<a href="/item/7">item</a>`,
		"/news/2025/rates.html": `<html lang="en"><title>Rates</title>
<script type="application/ld+json">{"@context":"https://schema.org","@type":"NewsArticle","headline":"Rates rise",
 "dateModified":"2025-02-03T04:05:06Z","author":{"@type":"Person","name":"Ann Lee"},"description":"Why rates rose."}</script>
<p class="byline">By Ann Lee</p><p>The bank raised its rates.</p>`,
		"/de/start.html": `<title>Start</title><p>Die Bundesregierung hat am Mittwoch einen Gesetzentwurf beschlossen, der die Bürger bei den
Energiekosten entlasten soll. Die Maßnahmen gelten ab dem kommenden Jahr und betreffen vor allem Familien.</p>`,
		"/item/7": `<html lang="en"><title>Kettle</title><p class="price">twelve</p><p>A kettle.</p>`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestExtractionRulesStructuredDataAndDetectedLanguageReachTheIndex(t *testing.T) {
	t.Parallel()
	esURL, index, site := estest.URL(t), estest.Index(t), fieldsSite(t)
	cfg := crawltest.Config(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0}
allow_private_networks: true
extra_fields: {extra_byline: keyword, extra_year: integer, extra_headline: text, extra_price: double}
sources:
  - name: s
    start_urls: [%q]
    extraction:
      structured_data_mappings: ["NewsArticle.headline:extra_headline"]
      rules:
        - include: [/news/]
          fields:
            - {field: extra_byline, selector: .byline}
            - {field: extra_year, url: "/news/(\\d{4})/"}
        - include: [/item/]
          fields:
            - {field: extra_price, selector: .price}
`, esURL, index, site.URL+"/"))
	report := crawl(t, cfg)
	if got := report.Total.Reasons["field_unparsed"]; got != 1 {
		t.Errorf("report counts %d field_unparsed, want 1 (the item's price): %+v", got, report.Total.Reasons)
	}
	docs := searchAll(t, esURL, index)
	news := docs[docfields.ID(site.URL+"/news/2025/rates.html")]
	if news == nil {
		t.Fatalf("the news page is not indexed; index holds %d documents", len(docs))
	}
	for f, want := range map[string][]string{"extra_byline": {"By Ann Lee"}, "extra_year": {"2025"}, "extra_headline": {"Rates rise"}} {
		if got := news.Extra[f]; !slices.Equal(got, want) {
			t.Errorf("news %s = %q, want %q", f, got, want)
		}
	}
	if news.Description != "Why rates rose." || !slices.Equal(news.Author, []string{"Ann Lee"}) ||
		news.Modified.Format("2006-01-02T15:04:05Z") != "2025-02-03T04:05:06Z" {
		t.Errorf("news defaults from JSON-LD: %q %q %v", news.Description, news.Author, news.Modified)
	}
	if news.Language != "en" || news.LanguageDetected {
		t.Errorf("news declares en: language %q detected=%v", news.Language, news.LanguageDetected)
	}
	de := docs[docfields.ID(site.URL+"/de/start.html")]
	if de == nil || de.Language != "de" || !de.LanguageDetected {
		t.Errorf("the German page declaring nothing: %+v", de)
	}
	item := docs[docfields.ID(site.URL+"/item/7")]
	if item == nil || item.Extra["extra_price"] != nil {
		t.Errorf("the item is indexed without the price its type refused: %+v", item)
	}
	// Searchable as typed and as flagged: the mapping has the fields.
	if n := countQuery(t, esURL, index, `{"query":{"term":{"doc_language_detected":true}}}`); n != 1 {
		t.Errorf("%d documents with doc_language_detected, want 1", n)
	}
	if n := countQuery(t, esURL, index, `{"query":{"range":{"extra_year":{"gte":2025}}}}`); n != 1 {
		t.Errorf("%d documents with extra_year >= 2025, want 1", n)
	}
}

// countQuery counts the documents of the alias a query matches.
func countQuery(t *testing.T, esURL, index, query string) int {
	t.Helper()
	res, err := http.Post(esURL+"/"+index+"/_count", "application/json", strings.NewReader(query))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Count int `json:"count"`
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("count %s: %s", index, res.Status)
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Count
}
