// Package search asks an index with embeddings for the passages that
// answer a question, the three ways docs/semantic.md explains: by its
// words (a nested match on the passages' text and headings), by its
// meaning (kNN on the passages' vectors), and both in one request, where
// Elasticsearch adds the two scores, each times its boost: the linear
// combination every licence has (the rrf retriever needs a licence and a
// module the basic distribution may lack).
//
// The queries it builds are the ones docs/semantic.md shows; the test of
// that page checks the two agree.
package search

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/embed"
)

// Mode is how a question is asked.
type Mode string

const (
	Lexical Mode = "lexical"
	KNN     Mode = "knn"
	Hybrid  Mode = "hybrid"
)

// Modes are the modes, in the order they are shown.
var Modes = []Mode{Lexical, KNN, Hybrid}

// Options shape a search.
type Options struct {
	// K is the passages wanted; kNN finds the K nearest documents, each
	// with its nearest passages.
	K int
	// Candidates is kNN's num_candidates: more finds the true nearest
	// more often, and costs more.
	Candidates int
	// Filter is a query every document must match (a source, a host, a
	// date range), applied inside kNN so that K documents still come back.
	Filter map[string]any
	// LexicalBoost and KNNBoost weigh the two scores of a hybrid search.
	LexicalBoost, KNNBoost float64
}

// Defaults are what crawlspace ask and the measurements use. The boosts
// put a passage's BM25 score (some units) beside its cosine score (0.5 to
// 1): docs/semantic.md gives what they were measured to do.
var Defaults = Options{K: 5, Candidates: 100, LexicalBoost: 0.02, KNNBoost: 1}

// innerHits asks for the passages found, read from stored fields and doc
// values: from _source each would cost a parse of the whole document.
func innerHits(name string, k int) map[string]any {
	h := map[string]any{"size": k, "_source": false,
		"stored_fields":   []string{docfields.PassagesField + ".text", docfields.PassagesField + ".headings"},
		"docvalue_fields": []string{docfields.PassagesField + ".url"}}
	if name != "" {
		h["name"] = name
	}
	return h
}

// lexicalName names the inner hits of the lexical query; kNN's keep the
// nested field's name.
const lexicalName = "lexical"

// words is the nested query on the passages' words.
func words(question string, o Options, boost float64) map[string]any {
	match := map[string]any{"multi_match": map[string]any{"query": question,
		"fields": []string{docfields.PassagesField + ".text", docfields.PassagesField + ".headings"}}}
	nested := map[string]any{"path": docfields.PassagesField, "score_mode": "max", "query": match,
		"inner_hits": innerHits(lexicalName, o.K)}
	if boost != 1 {
		nested["boost"] = boost
	}
	q := map[string]any{"nested": nested}
	if o.Filter != nil {
		q = map[string]any{"bool": map[string]any{"must": []any{q}, "filter": []any{o.Filter}}}
	}
	return q
}

// meaning is the kNN search on the passages' vectors.
func meaning(vector []float32, o Options, boost float64) map[string]any {
	k := map[string]any{"field": docfields.VectorField, "query_vector": vector, "k": o.K,
		"num_candidates": max(o.Candidates, o.K), "inner_hits": innerHits("", o.K)}
	if o.Filter != nil {
		k["filter"] = o.Filter
	}
	if boost != 1 {
		k["boost"] = boost
	}
	return k
}

// Query is the search request of a mode: the question's words, its
// vector, or both.
func Query(mode Mode, question string, vector []float32, o Options) map[string]any {
	q := map[string]any{"size": o.K, "_source": []string{"doc_title", "doc_url"}}
	switch mode {
	case Lexical:
		q["query"] = words(question, o, 1)
	case KNN:
		q["knn"] = meaning(vector, o, 1)
	case Hybrid:
		q["query"] = words(question, o, o.LexicalBoost)
		q["knn"] = meaning(vector, o, o.KNNBoost)
	}
	return q
}

// Passage is one passage found.
type Passage struct {
	Title    string   `json:"title"`
	DocURL   string   `json:"doc_url"`
	URL      string   `json:"url"`
	Headings []string `json:"headings,omitempty"`
	Text     string   `json:"text"`
	Score    float64  `json:"score"`
}

// answer is a search's answer, as far as passages go.
type answer struct {
	Hits struct {
		Hits []struct {
			ID     string `json:"_id"`
			Source struct {
				Title string `json:"doc_title"`
				URL   string `json:"doc_url"`
			} `json:"_source"`
			InnerHits map[string]struct {
				Hits struct {
					Hits []struct {
						Score  float64 `json:"_score"`
						Nested struct {
							Offset int `json:"offset"`
						} `json:"_nested"`
						Fields map[string][]string `json:"fields"`
					} `json:"hits"`
				} `json:"hits"`
			} `json:"inner_hits"`
		} `json:"hits"`
	} `json:"hits"`
}

// Passages ranks the passages an answer found. A passage found both ways
// scores as Elasticsearch scores its document: each score times its boost,
// added.
func passages(raw []byte, mode Mode, o Options) ([]Passage, error) {
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, err
	}
	boost := map[string]float64{lexicalName: 1, docfields.PassagesField: 1}
	if mode == Hybrid {
		boost = map[string]float64{lexicalName: o.LexicalBoost, docfields.PassagesField: o.KNNBoost}
	}
	byKey := map[string]*Passage{}
	var out []*Passage
	for _, h := range a.Hits.Hits {
		for name, inner := range h.InnerHits {
			for _, ih := range inner.Hits.Hits {
				key := fmt.Sprintf("%s/%d", h.ID, ih.Nested.Offset)
				p := byKey[key]
				if p == nil {
					p = &Passage{Title: h.Source.Title, DocURL: h.Source.URL, Headings: ih.Fields[docfields.PassagesField+".headings"]}
					if v := ih.Fields[docfields.PassagesField+".url"]; len(v) > 0 {
						p.URL = v[0]
					}
					if v := ih.Fields[docfields.PassagesField+".text"]; len(v) > 0 {
						p.Text = v[0]
					}
					byKey[key] = p
					out = append(out, p)
				}
				p.Score += boost[name] * ih.Score
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	list := make([]Passage, 0, min(len(out), o.K))
	for _, p := range out[:min(len(out), o.K)] {
		list = append(list, *p)
	}
	return list, nil
}

// Run asks index (an alias) the question in mode, through the cluster's
// transport, and returns the best passages.
func Run(ctx context.Context, t embed.Transport, index string, mode Mode, question string, vector []float32, o Options) ([]Passage, error) {
	body, err := json.Marshal(Query(mode, question, vector, o))
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/"+index+"/_search", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := t.Perform(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s search of %s: %s: %.500s", mode, index, res.Status, raw)
	}
	return passages(raw, mode, o)
}
