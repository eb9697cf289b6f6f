package htmllex

import (
	"testing"

	"golang.org/x/net/html"

	"github.com/crawlspace/crawlspace/internal/conformance"
)

// Each html5lib tokenizer case's href, read by the lexer and decoded as an
// attribute value, is the value the case gives.
func TestHTML5LibAttributeCases(t *testing.T) {
	cases := conformance.HTML5LibCases(t)
	sets := map[string]int{}
	for _, c := range cases {
		sets[c.Set]++
		if got, ok := firstTagAttr(c.HTML, "href"); !ok || got != c.Value {
			t.Errorf("%s: %s: href = %q, want %q", c.Source, c.HTML, got, c.Value)
		}
	}
	t.Logf("%d html5lib cases by set: %v", len(cases), sets)
}

// firstTagAttr is the decoded value of attribute name (lower case) of the
// first start tag the lexer reads in page.
func firstTagAttr(page, name string) (string, bool) {
	var z Lexer
	z.Reset([]byte(page))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return "", false
		case html.StartTagToken, html.SelfClosingTagToken:
			raw := z.Raw()
			for _, a := range ParseAttrs(raw, nil) {
				if EqualFoldASCII(a.Name(raw), name) {
					return string(value(raw, a)), true
				}
			}
			return "", false
		}
	}
}
