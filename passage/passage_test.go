package passage

import (
	"fmt"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/docfields"
)

func TestTokensCountWordsAndPunctuationAsBERTsBasicTokenizer(t *testing.T) {
	for s, want := range map[string]int{
		"":                           0,
		"hello world":                2,
		"don't stop.":                5, // don ' t stop .
		"dpkg-deb --build":           6,
		"Version 1.2.3":              6,
		"café über":                  2,
		"東京タワー":                      5,
		"  spaced \n\t out  ":        2,
		"/usr/share/doc/policy.html": 10,
	} {
		if got := Tokens(s); got != want {
			t.Errorf("Tokens(%q) = %d, want %d", s, got, want)
		}
	}
}

func doc(body string, sections ...docfields.Section) *docfields.Document {
	return &docfields.Document{URL: "http://h.test/page.html", Title: "The Page", Body: body, Sections: sections}
}

// Sections become passages under their heading paths, with the anchor of
// the section in the URL; the heading line itself is carried by the path,
// not repeated in the text.
func TestSectionsArePassagesUnderTheirHeadingPaths(t *testing.T) {
	body := "Intro text.\nInstalling\nRun the installer.\nOn Linux\nUse apt.\nRemoving\nRun remove."
	at := func(s string) int { return strings.Index(body, s) }
	d := doc(body,
		docfields.Section{Offset: at("Installing"), Level: 2, Title: "Installing", Anchor: "install"},
		docfields.Section{Offset: at("On Linux"), Level: 3, Title: "On Linux", Anchor: "linux ü"},
		docfields.Section{Offset: at("Removing"), Level: 2, Title: "Removing"},
	)
	ps, dropped := Split(d, Options{MaxTokens: 100, Overlap: 10})
	if dropped != 0 {
		t.Errorf("dropped %d", dropped)
	}
	want := []struct {
		text, headings, url string
	}{
		{"Intro text.", "", "http://h.test/page.html"},
		{"Run the installer.", "Installing", "http://h.test/page.html#install"},
		{"Use apt.", "Installing > On Linux", "http://h.test/page.html#linux%20%C3%BC"},
		{"Run remove.", "Removing", "http://h.test/page.html"},
	}
	if len(ps) != len(want) {
		t.Fatalf("passages %+v", ps)
	}
	for i, w := range want {
		p := ps[i]
		if p.Text != w.text || strings.Join(p.Headings, " > ") != w.headings || p.URL != w.url {
			t.Errorf("passage %d = %+v, want %+v", i, p, w)
		}
	}
}

// A heading directly followed by another has no passage of its own; a PDF
// page without a heading keeps the path it is under and links to its page.
func TestEmptySectionsLeaveNoPassageAndPagesLinkToThemselves(t *testing.T) {
	body := "Chapter\nSection\nText one.\nText two on page two."
	at := func(s string) int { return strings.Index(body, s) }
	d := doc(body,
		docfields.Section{Offset: 0, Level: 1, Title: "Chapter", Page: 1},
		docfields.Section{Offset: at("Section"), Level: 2, Title: "Section", Page: 1},
		docfields.Section{Offset: at("Text two"), Page: 2},
	)
	d.URL, d.ContentType = "http://h.test/a.pdf", "application/pdf"
	ps, _ := Split(d, Options{MaxTokens: 100})
	if len(ps) != 2 {
		t.Fatalf("passages %+v", ps)
	}
	if ps[0].Text != "Text one." || ps[0].URL != "http://h.test/a.pdf#page=1" || strings.Join(ps[0].Headings, "/") != "Chapter/Section" {
		t.Errorf("first %+v", ps[0])
	}
	if ps[1].Text != "Text two on page two." || ps[1].URL != "http://h.test/a.pdf#page=2" || ps[1].Page != 2 ||
		strings.Join(ps[1].Headings, "/") != "Chapter/Section" {
		t.Errorf("second %+v", ps[1])
	}
}

// A long section is cut into windows of whole words, each at most the
// size, each repeating about the overlap of the one before, ending at a
// sentence where one is near the end; together they hold every word.
func TestLongSectionsAreWindowsOfWholeWordsThatOverlap(t *testing.T) {
	var b strings.Builder
	for i := range 120 {
		fmt.Fprintf(&b, "Sentence number %d has some words in it. ", i)
	}
	body := strings.TrimSpace(b.String())
	ps, _ := Split(doc(body), Options{MaxTokens: 50, Overlap: 10})
	if len(ps) < 20 {
		t.Fatalf("%d passages", len(ps))
	}
	words := strings.Fields(body)
	seen := 0
	for i, p := range ps {
		if n := Tokens(p.Text); n > 50 {
			t.Errorf("passage %d has %d tokens", i, n)
		}
		if !strings.HasSuffix(p.Text, ".") && i < len(ps)-1 {
			t.Errorf("passage %d ends mid-sentence although sentences end every 10 tokens: %q", i, p.Text)
		}
		ws := strings.Fields(p.Text)
		// Whole words: each passage is a run of the body's words.
		if !strings.Contains(" "+body+" ", " "+p.Text+" ") {
			t.Errorf("passage %d is not a run of whole words: %q", i, p.Text)
		}
		if i > 0 {
			prev := strings.Fields(ps[i-1].Text)
			if !strings.HasSuffix(strings.Join(prev, " "), strings.Join(ws[:1], " ")) && !strings.Contains(ps[i-1].Text, ws[0]+" "+ws[1]) {
				t.Errorf("passage %d does not overlap the one before: %q / %q", i, ps[i-1].Text, p.Text)
			}
		}
		seen += len(ws)
	}
	if seen < len(words) {
		t.Errorf("passages hold %d words of %d", seen, len(words))
	}
	if last := ps[len(ps)-1].Text; !strings.HasSuffix(body, last) {
		t.Errorf("the last passage %q is not the body's end", last)
	}
}

// A word longer than the size is a passage of its own, never cut.
func TestAWordLongerThanThePassageIsNeverCut(t *testing.T) {
	long := strings.Repeat("a.", 80)
	ps, _ := Split(doc("before "+long+" after"), Options{MaxTokens: 20, Overlap: 5})
	found := false
	for _, p := range ps {
		if strings.Contains(p.Text, long) {
			found = true
		}
		for _, w := range strings.Fields(p.Text) {
			if strings.HasPrefix(long, w) && w != long && len(w) > 2 {
				t.Errorf("the long word was cut: %q", p.Text)
			}
		}
	}
	if !found {
		t.Errorf("the long word is in no passage: %+v", ps)
	}
}

// The hash covers what is embedded and how: the text, the title and
// headings when they are embedded, and the fingerprint of the model.
func TestTheHashChangesWithWhatIsEmbeddedAndTheModel(t *testing.T) {
	body := "Heading\nSome text."
	sec := docfields.Section{Offset: 0, Level: 1, Title: "Heading"}
	base := Options{MaxTokens: 100, Title: true, Headings: true, Fingerprint: "m1"}
	h := func(d *docfields.Document, o Options) string {
		ps, _ := Split(d, o)
		return ps[0].Hash
	}
	a := h(doc(body, sec), base)
	if a != h(doc(body, sec), base) {
		t.Fatal("the same passage hashed twice differently")
	}
	other := doc(body, sec)
	other.Title = "Another title"
	noTitle := base
	noTitle.Title = false
	model := base
	model.Fingerprint = "m2"
	for name, got := range map[string]string{
		"text":        h(doc("Heading\nOther text.", sec), base),
		"title":       h(other, base),
		"fingerprint": h(doc(body, sec), model),
		"no title":    h(doc(body, sec), noTitle),
	} {
		if got == a {
			t.Errorf("changing the %s kept the hash", name)
		}
	}
	// The title is not embedded: another title changes nothing.
	if h(other, noTitle) != h(doc(body, sec), noTitle) {
		t.Error("a title that is not embedded changed the hash")
	}
	if e := Embedded("The Page", &docfields.Passage{Text: "x", Headings: []string{"The Page", "Sub"}}, base); e != "The Page\nSub\nx" {
		t.Errorf("embedded %q: the heading repeating the title should be left out", e)
	}
}

func TestMaxPassagesBoundsADocument(t *testing.T) {
	body := strings.Repeat("word ", 1000)
	ps, dropped := Split(doc(body), Options{MaxTokens: 10, MaxPassages: 7})
	if len(ps) != 7 || dropped == 0 {
		t.Errorf("%d passages, %d dropped", len(ps), dropped)
	}
}
