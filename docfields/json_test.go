package docfields

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func sampleDocument() Document {
	return Document{
		URL:         "http://www.example.test/docs/a?id=1",
		Host:        "www.example.test",
		Path:        "/docs/a",
		Title:       "Quotes \" and \\ backslashes",
		Description: "Control \x01 chars\tand\nnewlines \u2028 separator",
		Keywords:    []string{"alpha", "beta"},
		Author:      []string{"Ann Example"},
		Language:    "en-gb",
		Headings:    []string{"One", "Two"},
		Body:        "Body <b>not html</b> & more",
		ContentType: "text/html",
		Modified:    time.Date(2024, 3, 1, 10, 0, 0, 0, time.FixedZone("CET", 3600)),
		Crawled:     time.Date(2024, 3, 2, 11, 30, 0, 500, time.UTC),
		ContentHash: "abc123",
		Source:      "docs",
		Depth:       3,
		NoSnippet:   true,
		Extra: map[string][]string{
			"extra_zeta":     {"z"},
			"extra_category": {"News", "Sport"},
			"extra_empty":    nil,
		},
	}
}

func TestMarshalJSONFlattensExtraFieldsAsSortedArrays(t *testing.T) {
	d := sampleDocument()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.Contains(s, `"doc_noarchive":false,"extra_category":["News","Sport"],"extra_zeta":["z"]}`) {
		t.Errorf("extra fields not flattened in sorted order as arrays:\n%s", s)
	}
	if strings.Contains(s, "extra_empty") {
		t.Errorf("an empty extra field was written:\n%s", s)
	}
	if !strings.Contains(s, `"doc_modified":"2024-03-01T09:00:00Z"`) {
		t.Errorf("dates are not written in UTC RFC 3339:\n%s", s)
	}
}

func TestMarshalJSONAgreesWithEncodingJSONOnDocFields(t *testing.T) {
	d := sampleDocument()
	d.Extra = nil
	ours, err := d.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	type plain Document
	p := plain(d)
	p.Modified = p.Modified.UTC()
	theirs, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var a, b map[string]any
	if err := json.Unmarshal(ours, &a); err != nil {
		t.Fatalf("our output is not JSON: %v\n%s", err, ours)
	}
	if err := json.Unmarshal(theirs, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("ours:\n%s\nencoding/json:\n%s", ours, theirs)
	}
}

func TestUnmarshalJSONRoundTripsMarshalJSON(t *testing.T) {
	d := sampleDocument()
	delete(d.Extra, "extra_empty")
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var got Document
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !got.Modified.Equal(d.Modified) || !got.Crawled.Equal(d.Crawled) {
		t.Errorf("times: got %v %v, want %v %v", got.Modified, got.Crawled, d.Modified, d.Crawled)
	}
	got.Modified, got.Crawled, d.Modified, d.Crawled = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, d) {
		t.Errorf("round trip:\ngot  %+v\nwant %+v", got, d)
	}
}

func TestUnmarshalJSONAcceptsSingleValuesNumbersAndNullInExtraFields(t *testing.T) {
	var d Document
	in := `{"doc_url":"u","extra_one":"x","extra_n":[1.5,2],"extra_b":true,"extra_null":null,"other":"ignored"}`
	if err := json.Unmarshal([]byte(in), &d); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"extra_one": {"x"}, "extra_n": {"1.5", "2"}, "extra_b": {"true"}}
	if !reflect.DeepEqual(d.Extra, want) {
		t.Errorf("Extra = %v, want %v", d.Extra, want)
	}
	if err := json.Unmarshal([]byte(`{"extra_x":{"a":1}}`), &d); err == nil {
		t.Error("an object in an extra field was accepted")
	}
}

func TestAppendStringEscapesLikeJSONAndRepairsUTF8(t *testing.T) {
	for _, s := range []string{"", "plain", "\x00\x1f\x7f", "a\xffb", "\xe2\x28\xa1", "日本語", "\u2028\u2029", `"\/`} {
		b := appendString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Errorf("%q: invalid JSON %s: %v", s, b, err)
			continue
		}
		if want := strings.ToValidUTF8(s, "\ufffd"); back != want {
			// ToValidUTF8 folds a run of bad bytes into one U+FFFD; we
			// replace each byte. Both are valid; compare after folding.
			if strings.ToValidUTF8(back, "\ufffd") != want && strings.ReplaceAll(back, "\ufffd\ufffd", "\ufffd") != want {
				t.Errorf("%q: decoded to %q, want %q", s, back, want)
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("hello")
	f.Add("a\xffb\x00\u2028")
	f.Fuzz(func(t *testing.T, s string) {
		b := appendString(nil, s)
		if !utf8.Valid(b) {
			t.Fatalf("output is not UTF-8: %q", b)
		}
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("invalid JSON %q: %v", b, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("valid input changed: %q -> %q", s, back)
		}
	})
}

func BenchmarkAppendJSON(b *testing.B) {
	d := sampleDocument()
	d.Body = strings.Repeat("Some realistic body text with words, numbers 123 and punctuation. ", 300)
	buf := make([]byte, 0, 64<<10)
	b.SetBytes(int64(len(d.AppendJSON(nil))))
	b.ReportAllocs()
	for b.Loop() {
		buf = d.AppendJSON(buf[:0])
	}
}

func BenchmarkEncodingJSONForComparison(b *testing.B) {
	d := sampleDocument()
	d.Body = strings.Repeat("Some realistic body text with words, numbers 123 and punctuation. ", 300)
	type plain Document
	p := plain(d)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(p); err != nil {
			b.Fatal(err)
		}
	}
}

// Passages are written as doc_passages, each vector component in the
// fewest digits that read back as the same float32.
func TestPassagesAreWrittenWithVectorsThatReadBackExactly(t *testing.T) {
	d := sampleDocument()
	vec := []float32{0.1, -0.03447731, 1e-7, 3.4028235e38, 0}
	d.Passages = []Passage{
		{Text: "First \"quoted\"", Headings: []string{"A", "B"}, URL: "http://x.test/a#b", Hash: "h1", Vector: vec},
		{Text: "Page two", URL: "http://x.test/a.pdf#page=2", Page: 2, Hash: "h2"},
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"doc_noarchive":false,"doc_passages":[{"text":"First \"quoted\"","headings":["A","B"],"url":"http://x.test/a#b","hash":"h1","vector":[0.1,-0.03447731,1e-07,3.4028235e+38,0]},{"text":"Page two","url":"http://x.test/a.pdf#page=2","page":2,"hash":"h2"}]`) {
		t.Errorf("passages not written as expected:\n%s", b)
	}
	var back Document
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Passages, d.Passages) {
		t.Errorf("passages read back as %+v, want %+v", back.Passages, d.Passages)
	}
	if d.Size() < len(b) {
		t.Errorf("Size %d under the JSON's %d bytes", d.Size(), len(b))
	}
}
