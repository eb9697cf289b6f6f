package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// indexedDoc is a document as the alias holds it.
type indexedDoc struct {
	URL        string   `json:"doc_url"`
	Title      string   `json:"doc_title"`
	Body       string   `json:"doc_body"`
	Source     string   `json:"doc_source"`
	Duplicates []string `json:"doc_duplicates"`
}

// maxDocs is the most documents the soak reads back per source: Elasticsearch's default
// index.max_result_window. The soak's sources stay far below it.
const maxDocs = 10000

// es talks to the node directly, not through the proxy.
type es struct{ base string }

func (e es) do(method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s: %.300s", method, path, res.Status, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// docs is every document of source behind alias, by URL, after a refresh so that every write
// the node acknowledged is seen.
func (e es) docs(alias, source string) (map[string]indexedDoc, error) {
	if err := e.do(http.MethodPost, "/"+url.PathEscape(alias)+"/_refresh", nil, nil); err != nil {
		return nil, err
	}
	var res struct {
		Hits struct {
			Total struct {
				Value int `json:"value"`
			} `json:"total"`
			Hits []struct {
				Source indexedDoc `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	q := map[string]any{
		"size":             maxDocs,
		"track_total_hits": true,
		"query":            map[string]any{"term": map[string]any{"doc_source": source}},
		"_source":          []string{"doc_url", "doc_title", "doc_body", "doc_source", "doc_duplicates"},
	}
	if err := e.do(http.MethodPost, "/"+url.PathEscape(alias)+"/_search", q, &res); err != nil {
		return nil, err
	}
	if res.Hits.Total.Value > len(res.Hits.Hits) {
		return nil, fmt.Errorf("source %s has %d documents, more than the %d the soak reads", source, res.Hits.Total.Value, maxDocs)
	}
	out := make(map[string]indexedDoc, len(res.Hits.Hits))
	for _, h := range res.Hits.Hits {
		out[h.Source.URL] = h.Source
	}
	return out, nil
}

// deleteIndices removes every index whose name starts with prefix: the physical indices behind
// the soak's alias, and the alias with them. Wildcard deletes are refused by default
// (action.destructive_requires_name), so it lists the names first.
func (e es) deleteIndices(prefix string) error {
	var indices []struct {
		Index string `json:"index"`
	}
	if err := e.do(http.MethodGet, "/_cat/indices/"+url.PathEscape(prefix+"*")+"?format=json&h=index&expand_wildcards=all", nil, &indices); err != nil {
		return err
	}
	if len(indices) == 0 {
		return nil
	}
	names := make([]string, len(indices))
	for i, ix := range indices {
		names[i] = url.PathEscape(ix.Index)
	}
	return e.do(http.MethodDelete, "/"+strings.Join(names, ","), nil, nil)
}
