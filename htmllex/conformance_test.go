package htmllex

import (
	"encoding/json"
	"os"
	"testing"

	"golang.org/x/net/html"

	"github.com/crawlspace/crawlspace/internal/conformance"
)

// html5libCase is one case of html5lib_link_cases.json: a tag whose href
// holds character references, and the value the HTML Standard's tokenizer
// gives the attribute.
type html5libCase struct {
	Set    string `json:"set"`
	Source string `json:"source"`
	HTML   string `json:"html"`
	Value  string `json:"value"`
}

// readHTML5LibCases reads the html5lib tokenizer cases of the conformance
// data, skipping the test when the data is absent.
func readHTML5LibCases(t *testing.T) []html5libCase {
	t.Helper()
	b, err := os.ReadFile(conformance.Path(t, "html5lib_link_cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		Cases []html5libCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &data); err != nil {
		t.Fatal(err)
	}
	if len(data.Cases) == 0 {
		t.Fatal("html5lib_link_cases.json holds no cases")
	}
	return data.Cases
}

// Each html5lib tokenizer case's href, read by the lexer and decoded as an
// attribute value, is the value the case gives.
func TestHTML5LibAttributeCases(t *testing.T) {
	cases := readHTML5LibCases(t)
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
