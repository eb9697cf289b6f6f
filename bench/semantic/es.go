package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// node is the Elasticsearch node the bench writes to and searches.
type node struct {
	base string
	hc   *http.Client
}

func newNode(base string) *node {
	return &node{base: strings.TrimRight(base, "/"), hc: &http.Client{Timeout: 5 * time.Minute}}
}

// do sends a request and decodes the answer into out (unless nil); an
// error status is an error.
func (n *node) do(method, path string, body any, out any) error {
	var r io.Reader
	ctype := "application/json"
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
		ctype = "application/x-ndjson"
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return err
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, n.base+path, r)
	if err != nil {
		return err
	}
	if r != nil {
		req.Header.Set("Content-Type", ctype)
	}
	res, err := n.hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s: %.500s", method, path, res.Status, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// bulk sends an NDJSON body and fails on any item error; it returns the
// time Elasticsearch says it took.
func (n *node) bulk(index string, body []byte) (time.Duration, error) {
	var ans struct {
		Took   int  `json:"took"`
		Errors bool `json:"errors"`
		Items  []map[string]struct {
			Error json.RawMessage `json:"error"`
		} `json:"items"`
	}
	if err := n.do("POST", "/"+index+"/_bulk", body, &ans); err != nil {
		return 0, err
	}
	if ans.Errors {
		for _, it := range ans.Items {
			for _, v := range it {
				if len(v.Error) > 0 {
					return 0, fmt.Errorf("bulk item: %s", v.Error)
				}
			}
		}
	}
	return time.Duration(ans.Took) * time.Millisecond, nil
}

// storeBytes is the index's size on disk, once merged to one segment so
// two layouts compare what they hold rather than when they merged.
func (n *node) storeBytes(index string) (int64, error) {
	if err := n.do("POST", "/"+index+"/_refresh", nil, nil); err != nil {
		return 0, err
	}
	if err := n.do("POST", "/"+index+"/_forcemerge?max_num_segments=1", nil, nil); err != nil {
		return 0, err
	}
	var st struct {
		All struct {
			Primaries struct {
				Store struct {
					Size int64 `json:"size_in_bytes"`
				} `json:"store"`
			} `json:"primaries"`
		} `json:"_all"`
	}
	if err := n.do("GET", "/"+index+"/_stats/store", nil, &st); err != nil {
		return 0, err
	}
	return st.All.Primaries.Store.Size, nil
}

// search runs a query and returns its hits and the time Elasticsearch took.
func (n *node) search(index string, q map[string]any) ([]hit, time.Duration, error) {
	var ans struct {
		Took int `json:"took"`
		Hits struct {
			Hits []hit `json:"hits"`
		} `json:"hits"`
	}
	if err := n.do("POST", "/"+index+"/_search", q, &ans); err != nil {
		return nil, 0, err
	}
	return ans.Hits.Hits, time.Duration(ans.Took) * time.Millisecond, nil
}

// hit is one search hit with the best passages of a nested search.
type hit struct {
	ID        string          `json:"_id"`
	Score     float64         `json:"_score"`
	Source    json.RawMessage `json:"_source"`
	InnerHits map[string]struct {
		Hits struct {
			Hits []struct {
				Score  float64 `json:"_score"`
				Nested struct {
					Offset int `json:"offset"`
				} `json:"_nested"`
				Source json.RawMessage     `json:"_source"`
				Fields map[string][]string `json:"fields"`
			} `json:"hits"`
		} `json:"hits"`
	} `json:"inner_hits"`
}
