package mapping

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/crawlspace/crawlspace/config"
)

func extractorFor(t testing.TB, yaml string) *Extractor {
	t.Helper()
	cfg := loadConfig(t, yaml)
	return New(cfg, &cfg.Sources[0])
}

const rulesConfig = `extra_fields:
  extra_byline: keyword
  extra_tags: keyword
  extra_price: double
  extra_published: date
  extra_year: integer
  extra_kind: keyword
  extra_link: keyword
sources:
  - name: shop
    start_urls: ["http://shop.test/"]
    extraction:
      rules:
        - include: [/news/]
          exclude: [/news/archive/]
          fields:
            - {field: extra_byline, selector: ".byline"}
            - {field: extra_tags, selector: "ul.tags li", values: all}
            - {field: extra_published, selector: "time.pub", attribute: datetime}
            - {field: extra_year, url: "/news/(\\d{4})/"}
            - {field: extra_kind, value: news}
            - {field: extra_link, selector: "a.more", attribute: href, values: all}
        - include: ["regexp:/item/\\d+$"]
          fields:
            - {field: extra_price, selector: ".price"}
            - {field: extra_kind, value: product}
`

const newsPage = `<html><head><title>Rates</title></head><body>
<header><p class="byline">Site header byline</p></header>
<article><p class="byline">By <b>Ann</b> Lee</p>
<ul class="tags"><li>rates</li><li> </li><li>bank<i>ing</i></li><li>rates</li></ul>
<time class="pub" datetime="2024-03-05T10:00:00+01:00">5 March</time>
<a class="more" href="/a">a</a><a class="more" href="/b">b</a>
<p>The bank raised its rates.</p></article></body></html>`

func TestExtractionRulesFillFieldsFromSelectorsTheURLAndFixedValuesOnTheirPagesOnly(t *testing.T) {
	x := extractorFor(t, rulesConfig)
	res := extract(t, x, "http://shop.test/news/2024/rates.html", newsPage)
	want := map[string][]string{
		// first: the first non-empty match, header or not; text joined as shown.
		"extra_byline": {"Site header byline"},
		// all: every non-empty match, without repeats, inline elements joined.
		"extra_tags":      {"rates", "banking"},
		"extra_published": {"2024-03-05T09:00:00Z"},
		"extra_year":      {"2024"},
		"extra_kind":      {"news"},
		"extra_link":      {"/a", "/b"},
	}
	for f, v := range want {
		if got := res.Doc.Extra[f]; !slices.Equal(got, v) {
			t.Errorf("%s = %q, want %q", f, got, v)
		}
	}
	if len(res.Doc.Extra) != len(want) {
		t.Errorf("extra fields %v, want only %v", res.Doc.Extra, want)
	}
	// Each origin names the config line of the rule that filled the field.
	var byline *Origin
	for i := range res.Origins {
		if res.Origins[i].Field == "extra_byline" {
			byline = &res.Origins[i]
		}
	}
	if byline == nil || !strings.HasPrefix(byline.Rule, "crawl.yaml:17:15 sources[0].extraction.rules[0].fields[0]") {
		t.Errorf("origin of extra_byline = %+v, want the rule's file:line:col and path", byline)
	}

	for _, u := range []string{"http://shop.test/news/archive/2023/old.html", "http://shop.test/about.html"} {
		if res := extract(t, x, u, newsPage); len(res.Doc.Extra) != 0 || len(res.Origins) != 0 {
			t.Errorf("%s is outside every rule's scope but got %v (origins %v)", u, res.Doc.Extra, res.Origins)
		}
	}
}

func TestAValueTheFieldsTypeRefusesIsDroppedWithItsReasonAndRuleRecorded(t *testing.T) {
	x := extractorFor(t, rulesConfig)
	res := extract(t, x, "http://shop.test/item/42", `<p class="price">call us</p><p class="price">12.50</p>`)
	// first takes the first non-empty value, and it does not parse: nothing is indexed for it.
	if got := res.Doc.Extra["extra_price"]; got != nil {
		t.Errorf("extra_price = %q, want nothing", got)
	}
	if len(res.FieldWarnings) != 1 || !strings.Contains(res.FieldWarnings[0], `extra_price: "call us" is not a double`) ||
		!strings.Contains(res.FieldWarnings[0], "sources[0].extraction.rules[1].fields[0]") {
		t.Errorf("warnings = %q, want the value, the type and the rule", res.FieldWarnings)
	}
	res = extract(t, x, "http://shop.test/item/43", `<p class="price"> 12.50 </p>`)
	if got := res.Doc.Extra["extra_price"]; !slices.Equal(got, []string{"12.5"}) || len(res.FieldWarnings) != 0 {
		t.Errorf("extra_price = %q (warnings %q), want [12.5]", got, res.FieldWarnings)
	}
}

func TestExtractionRuleValuesCountInTheContentHash(t *testing.T) {
	x := extractorFor(t, rulesConfig)
	a := extract(t, x, "http://shop.test/item/1", `<p class="price">1</p><p>same text</p>`)
	b := extract(t, x, "http://shop.test/item/1", `<p class="price">2</p><p>same text</p>`)
	if a.Doc.ContentHash == b.Doc.ContentHash {
		t.Error("a changed rule value must change doc_content_hash, or the document is never rewritten")
	}
}

const articleLD = `<html><head><title>T</title>
<script type="application/ld+json">{"@context":"https://schema.org","@graph":[
 {"@type":"WebSite","name":"Site","description":"The whole site"},
 {"@type":"Organization","name":"ACME","author":"nobody"},
 {"@type":["NewsArticle"],"headline":"Rates rise","datePublished":"2024-03-01","dateModified":"2024-03-04T08:00:00Z",
  "author":[{"@type":"Person","name":"Ann Lee"},{"@type":"Person","name":"Bo Chen"}],
  "description":"Why rates went up.","publisher":{"@type":"Organization","name":"ACME News"},
  "offers":{"@type":"Offer","price":12.5}}]}
</script>
<script type="application/ld+json">{ not json</script>
</head><body><p>Body.</p></body></html>`

func TestJSONLDFeedsTheDefaultFieldsWhenThePageHasNothingBetterAndTheMappedFields(t *testing.T) {
	x := extractorFor(t, `extra_fields: {extra_headline: text, extra_people: keyword, extra_price: double, extra_publisher: keyword}
sources:
  - name: s
    start_urls: ["http://s.test/"]
    extraction:
      structured_data_mappings:
        - "NewsArticle.headline:extra_headline"
        - "Person.name:extra_people"
        - "offers.price:extra_price"
        - "Article.publisher:extra_publisher"
`)
	res := extract(t, x, "http://s.test/a", articleLD)
	d := res.Doc
	if !d.Modified.Equal(time.Date(2024, 3, 4, 8, 0, 0, 0, time.UTC)) {
		t.Errorf("doc_modified = %v, want dateModified", d.Modified)
	}
	if !slices.Equal(d.Author, []string{"Ann Lee", "Bo Chen"}) {
		t.Errorf("doc_author = %q, want the article's authors' names", d.Author)
	}
	if d.Description != "Why rates went up." {
		t.Errorf("doc_description = %q, want the article's, not the site's", d.Description)
	}
	for f, want := range map[string][]string{
		"extra_headline": {"Rates rise"},
		"extra_people":   {"Ann Lee", "Bo Chen"}, // nested items of the type, anywhere
		"extra_price":    {"12.5"},
	} {
		if got := d.Extra[f]; !slices.Equal(got, want) {
			t.Errorf("%s = %q, want %q", f, got, want)
		}
	}
	// A type names itself, not its subtypes: NewsArticle is no Article here.
	if got := d.Extra["extra_publisher"]; got != nil {
		t.Errorf("extra_publisher = %q, want nothing", got)
	}

	// The page's own metadata comes first.
	res = extract(t, x, "http://s.test/a", strings.Replace(articleLD, "<title>T</title>",
		`<title>T</title><meta name="description" content="Meta says."><meta name="author" content="Meta Author">`+
			`<meta name="dcterms.modified" content="2020-01-01">`, 1))
	if d := res.Doc; d.Description != "Meta says." || !slices.Equal(d.Author, []string{"Meta Author"}) || d.Modified.Year() != 2020 {
		t.Errorf("meta tags must win over structured data: %q %q %v", d.Description, d.Author, d.Modified)
	}
	// And before Last-Modified.
	res = extract(t, x, "http://s.test/a", articleLD, "Last-Modified", "Wed, 01 Jan 2020 00:00:00 GMT")
	if res.Doc.Modified.Year() != 2024 {
		t.Errorf("doc_modified = %v, want dateModified before the Last-Modified header", res.Doc.Modified)
	}
}

func TestMicrodataAndRDFaLiteAreReadLikeJSONLD(t *testing.T) {
	x := extractorFor(t, `extra_fields: {extra_name: keyword, extra_rating: double}
sources:
  - name: s
    start_urls: ["http://s.test/"]
    extraction:
      structured_data_mappings: ["Product.name:extra_name", "Product.aggregateRating.ratingValue:extra_rating", "Book.name:extra_name"]
`)
	res := extract(t, x, "http://s.test/p", `<html><body>
<div itemscope itemtype="https://schema.org/Product">
  <h1 itemprop="name">Kettle <small>2000</small></h1>
  <meta itemprop="description" content="Boils water.">
  <div itemprop="aggregateRating" itemscope itemtype="https://schema.org/AggregateRating">
    <span itemprop="ratingValue">4.5</span><span itemprop="name">not the product's</span></div>
  <time itemprop="dateModified" datetime="2023-06-01">June</time>
</div>
<div vocab="https://schema.org/" typeof="Book"><span property="name">Dune</span>
  <span property="author" typeof="Person"><span property="name">Frank Herbert</span></span></div>
</body></html>`)
	d := res.Doc
	if got := d.Extra["extra_name"]; !slices.Equal(got, []string{"Kettle 2000", "Dune"}) {
		t.Errorf("extra_name = %q", got)
	}
	if got := d.Extra["extra_rating"]; !slices.Equal(got, []string{"4.5"}) {
		t.Errorf("extra_rating = %q", got)
	}
	if d.Description != "Boils water." || d.Modified.Format("2006-01-02") != "2023-06-01" || !slices.Equal(d.Author, []string{"Frank Herbert"}) {
		t.Errorf("defaults from microdata and RDFa: description %q, modified %v, author %q", d.Description, d.Modified, d.Author)
	}
}

func TestIgnoreStructuredDataReadsNone(t *testing.T) {
	x := newExtractor(t, func(c *config.Config) { c.Sources[0].Extraction.IgnoreStructuredData = true })
	if d := extract(t, x, "http://h.test/a", articleLD).Doc; d.Description != "" || d.Author != nil || !d.Modified.IsZero() {
		t.Errorf("structured data was read: %q %q %v", d.Description, d.Author, d.Modified)
	}
}

const (
	german  = "Die Bundesregierung hat am Mittwoch einen Gesetzentwurf beschlossen, der die Bürger bei den Energiekosten entlasten soll. Die Maßnahmen gelten ab dem kommenden Jahr und betreffen vor allem Familien mit kleinen Einkommen."
	french  = "Le gouvernement a présenté mercredi un projet de loi destiné à alléger la facture d'énergie des ménages. Les mesures entreront en vigueur l'année prochaine et concernent surtout les familles aux revenus modestes."
	english = "The government presented a bill on Wednesday meant to ease the energy bills of households. The measures take effect next year and mainly concern families on small incomes."
)

func TestTheLanguageOfAPageThatDeclaresNoneIsDetectedAndMarkedSo(t *testing.T) {
	x := newExtractor(t, nil)
	for want, text := range map[string]string{"de": german, "fr": french, "en": english} {
		d := extract(t, x, "http://h.test/a", "<title>News</title><p>"+text+"</p>").Doc
		if d.Language != want || !d.LanguageDetected {
			t.Errorf("language = %q detected=%v, want %q detected", d.Language, d.LanguageDetected, want)
		}
	}
	// A declared language is kept and not marked detected, whatever the text.
	d := extract(t, x, "http://h.test/a", `<html lang="fr-CA"><p>`+german+`</p>`).Doc
	if d.Language != "fr-ca" || d.LanguageDetected {
		t.Errorf("declared: language = %q detected=%v", d.Language, d.LanguageDetected)
	}
	// Too little text for a reliable guess: no language rather than a wrong one.
	d = extract(t, x, "http://h.test/a", `<p>OK</p>`).Doc
	if d.Language != "" || d.LanguageDetected {
		t.Errorf("two letters gave language %q", d.Language)
	}
	off := newExtractor(t, func(c *config.Config) { c.Sources[0].Extraction.NoLanguageDetection = true })
	if d := extract(t, off, "http://h.test/a", "<p>"+german+"</p>").Doc; d.Language != "" {
		t.Errorf("no_language_detection: language %q", d.Language)
	}
	// Restricted to a set, the guess is among it.
	set := newExtractor(t, func(c *config.Config) { c.Sources[0].Extraction.Languages = []string{"fr", "en"} })
	if d := extract(t, set, "http://h.test/a", "<p>"+french+"</p>").Doc; d.Language != "fr" {
		t.Errorf("languages [fr en]: language %q for French", d.Language)
	}
}

func TestDetectableLanguagesAreTheDetectorsOwn(t *testing.T) {
	codes := slices.Clone(detectorCodes())
	slices.Sort(codes)
	if !slices.Equal(codes, config.DetectableLanguages) {
		t.Errorf("config.DetectableLanguages = %v\nthe detector knows %v", config.DetectableLanguages, codes)
	}
}

func FuzzStructuredDataAndRules(f *testing.F) {
	f.Add([]byte(articleLD))
	f.Add([]byte(`<div itemscope itemtype="x"><span itemprop="name" itemscope><b itemprop="name">\xff</b></span></div><p class=price>1e309</p>`))
	f.Add([]byte(`<script type="application/ld+json">[[{"@graph":{"@type":["Article",1],"headline":{"name":[{"@value":true}]}}}]]</script>`))
	f.Add([]byte(`<div typeof="Book" property="x"><a property="author" typeof href="//h">y</a></div>`))
	x := extractorFor(f, `extra_fields: {extra_a: keyword, extra_n: double, extra_d: date}
sources:
  - name: s
    start_urls: ["http://s.test/"]
    extraction:
      structured_data_mappings: ["Article.headline:extra_a", "name:extra_a", "author.name:extra_d", "Book.author:extra_a"]
      rules:
        - fields:
            - {field: extra_n, selector: ".price", values: all}
            - {field: extra_a, selector: "[itemprop]", attribute: itemprop, values: all}
            - {field: extra_d, url: "(\\d+)"}
`)
	u, _ := url.Parse("http://s.test/2024/p")
	f.Fuzz(func(t *testing.T, body []byte) {
		res, err := x.Extract(Page{URL: u, Header: http.Header{"Content-Type": {"text/html"}}, Body: body})
		if err != nil {
			t.Fatal(err)
		}
		for f, vs := range res.Doc.Extra {
			for _, v := range vs {
				if v == "" || !utf8.ValidString(v) {
					t.Fatalf("%s holds %q", f, v)
				}
			}
		}
		for _, s := range append(res.Doc.Author, res.Doc.Description) {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 %q", s)
			}
		}
	})
}

func TestNestedItemsGiveTheirValuesInTheSameOrderEveryTime(t *testing.T) {
	x := extractorFor(t, `extra_fields: {extra_people: keyword}
sources:
  - name: s
    start_urls: ["http://s.test/"]
    extraction:
      structured_data_mappings: ["Person.name:extra_people"]
`)
	page := `<script type="application/ld+json">{"@type":"Article","author":{"@type":"Person","name":"A"},
"editor":{"@type":"Person","name":"B"},"contributor":{"@type":"Person","name":"C"},"translator":{"@type":"Person","name":"D"}}</script>`
	first := extract(t, x, "http://s.test/a", page)
	for range 20 {
		if got := extract(t, x, "http://s.test/a", page); got.Doc.ContentHash != first.Doc.ContentHash {
			t.Fatalf("values %q then %q: the content hash changed with map order", first.Doc.Extra["extra_people"], got.Doc.Extra["extra_people"])
		}
	}
	// Keys in order: author, contributor, editor, translator.
	if got := first.Doc.Extra["extra_people"]; !slices.Equal(got, []string{"A", "C", "B", "D"}) {
		t.Errorf("extra_people = %q", got)
	}
}
