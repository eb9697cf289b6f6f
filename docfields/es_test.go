package docfields

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/estest"
)

func esDo(t *testing.T, method, url, ctype string, body []byte) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %d %s", method, url, res.StatusCode, raw)
	}
	return res.StatusCode, out
}

// TestRealNodeAcceptsTheMappingAndTheDocuments creates an index from
// Mapping on the real integration-test node, indexes documents encoded by
// MarshalJSON, and searches them the way a front end would.
func TestRealNodeAcceptsTheMappingAndTheDocuments(t *testing.T) {
	base := estest.URL(t)
	extra := map[string]string{"extra_category": "", "extra_published": "date", "extra_n": "long", "extra_score": "double", "extra_flag": "boolean", "extra_note": "text"}
	index := estest.Index(t)
	body := Mapping(extra)
	body["settings"].(map[string]any)["number_of_replicas"] = 0
	raw, _ := json.Marshal(body)
	if code, out := esDo(t, "PUT", base+"/"+index, "application/json", raw); code != 200 {
		t.Fatalf("create index: %d %v", code, out)
	}

	docs := []Document{
		{
			URL: "http://h.test/b", Host: "h.test", Path: "/b", Title: "Beta guide", Body: strings.Repeat("filler words ", 90000) + "needle at the far end",
			ContentType: "text/html", Crawled: time.Now(), Modified: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), ContentHash: "h1", Source: "s", Depth: 1,
			Keywords: []string{"x"}, Author: []string{"Ann"}, Headings: []string{"H"}, Language: "en", Description: "d", NoSnippet: true,
			Extra: map[string][]string{"extra_category": {"News", "Sport"}, "extra_published": {"2024-05-06T00:00:00Z"}, "extra_n": {"42"},
				"extra_score": {"not a number"}, "extra_flag": {"true"}, "extra_note": {"free text"}},
		},
		{URL: "http://h.test/a", Host: "h.test", Path: "/a", Title: "Alpha guide", Body: "needle near the start", ContentType: "text/html", ContentHash: "h2", Source: "s"},
	}
	var bulk bytes.Buffer
	for i := range docs {
		bulk.WriteString(`{"index":{"_id":"` + ID(docs[i].URL) + `"}}` + "\n")
		bulk.Write(docs[i].AppendJSON(nil))
		bulk.WriteByte('\n')
	}
	code, out := esDo(t, "POST", base+"/"+index+"/_bulk?refresh=true", "application/x-ndjson", bulk.Bytes())
	if code != 200 || out["errors"] != false {
		t.Fatalf("bulk: %d %v", code, out)
	}

	q := `{"query":{"match":{"doc_body":"needle"}},"sort":[{"doc_title.keyword":"asc"}],
	       "highlight":{"fields":{"doc_body":{}}},"_source":["doc_title"]}`
	_, out = esDo(t, "POST", base+"/"+index+"/_search", "application/json", []byte(q))
	hits := out["hits"].(map[string]any)["hits"].([]any)
	if len(hits) != 2 {
		t.Fatalf("hits %v", out)
	}
	var titles []string
	for _, h := range hits {
		hm := h.(map[string]any)
		titles = append(titles, hm["_source"].(map[string]any)["doc_title"].(string))
		// The Beta body is over a million characters: past
		// index.highlight.max_analyzed_offset, which only offsets in the
		// postings get around.
		if hl := toJSON(hm["highlight"]); !strings.Contains(hl, `\u003cem\u003eneedle`) {
			t.Errorf("no highlight for %v: %s", hm["_source"], hl)
		}
	}
	if titles[0] != "Alpha guide" || titles[1] != "Beta guide" {
		t.Errorf("sorted by doc_title.keyword: %v", titles)
	}

	for _, q := range []string{
		`{"query":{"term":{"extra_category":"Sport"}}}`,
		`{"query":{"range":{"extra_published":{"gte":"2024-05-01"}}}}`,
		`{"query":{"term":{"extra_n":42}}}`,
		`{"query":{"term":{"extra_flag":true}}}`,
		`{"query":{"match":{"extra_note":"text"}}}`,
		`{"query":{"match":{"doc_path.text":"b"}}}`,
		`{"query":{"term":{"doc_nosnippet":true}}}`,
	} {
		_, out := esDo(t, "POST", base+"/"+index+"/_search", "application/json", []byte(q))
		if n := len(out["hits"].(map[string]any)["hits"].([]any)); n != 1 {
			t.Errorf("%s: %d hits, want 1: %v", q, n, out)
		}
	}

	// Strict: a field nobody declared is refused, not added.
	code, out = esDo(t, "PUT", base+"/"+index+"/_doc/x", "application/json", []byte(`{"doc_url":"u","extra_undeclared":["x"]}`))
	if code != 400 || !strings.Contains(toJSON(out), "strict_dynamic_mapping_exception") {
		t.Errorf("undeclared field: %d %v", code, out)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
