// Package embedtest connects tests to the real embedding server that scripts/embedder runs:
// all-MiniLM-L6-v2 behind OpenAI's POST /v1/embeddings.
//
// Tests that need it call URL. Where it cannot be reached they skip, except under CI (the CI
// environment variable set), where they fail, as packages estest and tikatest do.
package embedtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/internal/servicetest"
)

// EnvURL names the environment variable holding the API's base URL (ending in /v1); scripts/test
// sets it.
const EnvURL = "CRAWLSPACE_EMBEDDER_URL"

// EnvPort names the port variable scripts/embedder also reads; it sets the default URL.
const EnvPort = "CRAWLSPACE_EMBEDDER_PORT"

// DefaultURL is where scripts/embedder start serves when CRAWLSPACE_EMBEDDER_PORT is not set.
const DefaultURL = "http://127.0.0.1:9997/v1"

// The models the server holds, and the length of their vectors.
const (
	Model          = "all-minilm-l6-v2"
	QuantizedModel = "all-minilm-l6-v2-q"
	Dimensions     = 384
)

// probeTimeout bounds the reachability check only: a refused connection answers at once.
const probeTimeout = 10 * time.Second

var server = &servicetest.Server{Name: "the embedding server", Start: "scripts/embedder start",
	EnvURL: EnvURL, EnvPort: EnvPort, DefaultURL: DefaultURL, Path: "/v1",
	Probe: func(base string) error { _, err := get(base + "/models"); return err }}

// URL returns the API's base URL: CRAWLSPACE_EMBEDDER_URL, else port CRAWLSPACE_EMBEDDER_PORT on
// 127.0.0.1, else DefaultURL. The server is checked once per test binary; if it cannot be reached
// the test is skipped, or failed when CI is set.
func URL(t testing.TB) string {
	t.Helper()
	return server.URL(t)
}

// Key returns an API key of the test's own: the server counts the requests sent with it apart
// from everyone else's (Stats).
func Key(t testing.TB) string {
	// The machine's clock makes the key unique across runs; it dates nothing.
	return fmt.Sprintf("test-%s-%d", strings.NewReplacer("/", "-", " ", "_").Replace(t.Name()), time.Now().UnixNano())
}

// Counts are what the server answered.
type Counts struct {
	Requests   int64 `json:"requests"`
	Inputs     int64 `json:"inputs"`
	Tokens     int64 `json:"tokens"`
	Characters int64 `json:"characters"`
	Errors     int64 `json:"errors"`
}

// Stats returns what the server answered to requests carrying key.
func Stats(t testing.TB, key string) Counts {
	t.Helper()
	base := strings.TrimSuffix(URL(t), "/v1")
	raw, err := get(base + "/stats?key=" + url.QueryEscape(key))
	if err != nil {
		t.Fatal(err)
	}
	var c Counts
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("GET /stats: %v: %s", err, raw)
	}
	return c
}

func get(u string) ([]byte, error) {
	c := &http.Client{Timeout: probeTimeout}
	resp, err := c.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s %.100q", u, resp.Status, body)
	}
	return body, nil
}

// Passages reads the passages of the document of docURL back from index on the node at esURL,
// vectors included (9.x leaves them out of _source unless asked); nil when the index does not hold
// the document.
func Passages(t testing.TB, esURL, index, docURL string) []docfields.Passage {
	t.Helper()
	q, _ := json.Marshal(map[string]any{"query": map[string]any{"term": map[string]any{"doc_url": docURL}},
		"_source": map[string]any{"includes": []string{docfields.PassagesField}, "exclude_vectors": false}})
	res, err := http.Post(esURL+"/"+index+"/_search", "application/json", strings.NewReader(string(q)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var ans struct {
		Hits struct {
			Hits []struct {
				Source struct {
					Passages []docfields.Passage `json:"doc_passages"`
				} `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.NewDecoder(res.Body).Decode(&ans); err != nil {
		t.Fatal(err)
	}
	if len(ans.Hits.Hits) != 1 {
		return nil
	}
	return ans.Hits.Hits[0].Source.Passages
}
