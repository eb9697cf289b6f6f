package estest

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// Documents reads every document of index (an index or alias) on the node
// at esURL through the search API, by id, each source decoded as a D
// (docfields.Document, which estest cannot import: docfields' tests use
// estest): up to 1000, more than any test site holds.
func Documents[D any](t testing.TB, esURL, index string) map[string]*D {
	t.Helper()
	res, err := http.Get(esURL + "/" + index + "/_search?size=1000")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(res.Body)
		t.Fatalf("search %s: %s: %s", index, res.Status, raw)
	}
	var out struct {
		Hits struct {
			Hits []struct {
				ID     string `json:"_id"`
				Source D      `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	docs := map[string]*D{}
	for _, h := range out.Hits.Hits {
		docs[h.ID] = &h.Source
	}
	return docs
}
