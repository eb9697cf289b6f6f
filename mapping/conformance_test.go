package mapping

import (
	"net/url"
	"slices"
	"testing"

	"github.com/crawlspace/crawlspace/internal/conformance"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// The html5lib tokenizer cases, as href values, through what the crawler
// uses: the link extracted must be the case's value resolved against the
// page, and an extraction rule reading the attribute from the page's tree
// must get the value too. That the lexer decodes each value as the case
// says is htmllex's TestHTML5LibAttributeCases.
func TestHTML5LibAttributeCasesThroughTheLinkExtractor(t *testing.T) {
	cases := conformance.HTML5LibCases(t)
	x := extractorFor(t, `extra_fields: {extra_href: keyword}
sources:
  - name: s
    start_urls: ["http://example.test/"]
    extraction:
      no_language_detection: true # not what is tested, and most of the time
      rules:
        - fields:
            - {field: extra_href, selector: "a", attribute: href}
`)
	const page = "http://example.test/dir/page.html"
	pu, _ := url.Parse(page)
	base := urlnorm.NewBase(pu)
	var tb textBuf
	sets := map[string]int{}
	for _, c := range cases {
		sets[c.Set]++
		res := extract(t, x, page, c.HTML)
		var want []string
		if abs, ok := base.AppendResolved(nil, appendURLText(nil, []byte(c.Value))); ok && string(abs) != page {
			want = []string{string(abs)}
		}
		if got := linkURLs(res); !slices.Equal(got, want) {
			t.Errorf("%s: %s: links %q, want %q (the value %q resolved)", c.Source, c.HTML, got, want, c.Value)
		}
		var wantExtra []string
		if v := tb.normalize([]byte(c.Value)); v != "" {
			wantExtra = []string{v}
		}
		if got := res.Doc.Extra["extra_href"]; !slices.Equal(got, wantExtra) {
			t.Errorf("%s: %s: an extraction rule reads href as %q, want %q", c.Source, c.HTML, got, wantExtra)
		}
	}
	t.Logf("%d html5lib cases by set: %v", len(cases), sets)
}
