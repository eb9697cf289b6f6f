package sitemap

import (
	"encoding/xml"
	"errors"
	"strings"
	"testing"
)

// Sitemaps and feeds are XML, whose references all end in ';': there are
// no legacy references, so none of HTML's attribute rule is needed, and a
// numeric reference names its code point, with no windows-1252 table.
// Where a file writes a bare '&' the non-strict decoder keeps it as text.
var xmlRefCases = []struct{ written, want string }{
	{"?q=a&section=news", "?q=a&section=news"},
	{"?a=1&region=eu", "?a=1&region=eu"},
	{"?a=1&amp;section=2", "?a=1&section=2"},
	{"?x=&sect", "?x=&sect"},           // HTML reads "§"
	{"?x=&copy.", "?x=&copy."},         // HTML reads "©."
	{"?x=&sect;3", "?x=§3"},            // HTML's named characters, with their ';'
	{"?x=&noti;", "?x=&noti;"},         // no such name
	{"?c=&#x80;", "?c=\u0080"},         // HTML reads "€"
	{"?c=&#128;", "?c=\u0080"},         // the same
	{"?c=&#x80", "?c=&#x80"},           // no ';': no reference
	{"?c=&#x41;&#66;", "?c=AB"},        // both forms
	{"?c=&#x110000;", "?c=&#x110000;"}, // past Unicode: kept as written
}

func TestCharacterReferencesInSitemapsAndFeedsAreReadByXMLsRules(t *testing.T) {
	for _, c := range xmlRefCases {
		base := "https://a.example/"
		want := base + c.want
		loc := `<urlset><url><loc>` + base + c.written + `</loc></url><url><loc>https://a.example/last</loc></url></urlset>`
		wantURLs(t, "sitemap "+c.written, mustParse(t, []byte(loc), "", Limits{}).URLs, want, "https://a.example/last")
		rss := `<rss version="2.0"><channel><item><link>` + base + c.written + `</link></item></channel></rss>`
		wantURLs(t, "RSS "+c.written, mustParse(t, []byte(rss), feedURL, Limits{}).URLs, want)
		atom := `<feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="` + base + c.written + `"/></entry></feed>`
		wantURLs(t, "Atom "+c.written, mustParse(t, []byte(atom), feedURL, Limits{}).URLs, want)
	}
}

// A reference to a character XML does not allow is a syntax error: the
// entries before it are kept, with the error.
func TestAReferenceToACharacterXMLForbidsIsASyntaxError(t *testing.T) {
	for _, ref := range []string{"&#0;", "&#x1;", "&#xB;"} {
		doc := `<urlset><url><loc>https://a.example/first</loc></url><url><loc>https://a.example/?c=` + ref + `</loc></url></urlset>`
		res, err := Parse(strings.NewReader(doc), "", Limits{})
		var syn *xml.SyntaxError
		if !errors.As(err, &syn) || !strings.Contains(syn.Msg, "illegal character code") {
			t.Errorf("%s: err = %v, want an XML syntax error", ref, err)
		}
		wantURLs(t, ref, res.URLs, "https://a.example/first")
	}
}
