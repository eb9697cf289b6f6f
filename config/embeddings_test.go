package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEmbeddingsAreCheckedWhereWritten(t *testing.T) {
	runErrCases(t, []errCase{
		{"openai without url, model or dimensions", "elasticsearch:\n  embeddings: {}\n" + minimal, []string{
			`c.yaml:2:15: elasticsearch.embeddings.url: is required with service openai: the API's base URL, such as http://127.0.0.1:11434/v1`,
			`c.yaml:2:15: elasticsearch.embeddings.model: is required with service openai`,
			`c.yaml:2:15: elasticsearch.embeddings.dimensions: is required: the length of the model's vectors (384 for all-MiniLM-L6-v2)`,
		}},
		{"unknown service", "elasticsearch:\n  embeddings: {service: cohere, dimensions: 384}\n" + minimal, []string{
			`c.yaml:2:25: elasticsearch.embeddings.service: "cohere" is not one of openai, elasticsearch`,
		}},
		{"inference endpoint with openai's keys", "elasticsearch:\n  embeddings: {service: elasticsearch, inference_id: e5, url: \"http://x:1/v1\", api_key: k, dimensions: 384}\n" + minimal, []string{
			`c.yaml:2:63: elasticsearch.embeddings.url: is not used by service elasticsearch`,
			`c.yaml:2:89: elasticsearch.embeddings.api_key: is not used by service elasticsearch`,
		}},
		{"inference endpoint without its id", "elasticsearch:\n  embeddings: {service: elasticsearch, dimensions: 384}\n" + minimal, []string{
			`c.yaml:2:15: elasticsearch.embeddings.inference_id: is required with service elasticsearch: the id of an inference endpoint of the cluster`,
		}},
		{"bad similarity, index type and failure mode", "elasticsearch:\n  embeddings: {url: \"http://x:1/v1\", model: m, dimensions: 384, similarity: euclid, index_type: ivf, on_failure: drop}\n" + minimal, []string{
			`c.yaml:2:77: elasticsearch.embeddings.similarity: "euclid" is not one of cosine, dot_product, l2_norm, max_inner_product`,
			`c.yaml:2:97: elasticsearch.embeddings.index_type: "ivf" is not one of hnsw, int8_hnsw, int4_hnsw, bbq_hnsw, flat, int8_flat, int4_flat, bbq_flat`,
			`c.yaml:2:114: elasticsearch.embeddings.on_failure: "drop" is not one of wait, index_without_vectors`,
		}},
		{"overlap past half the passage", "elasticsearch:\n  embeddings: {url: \"http://x:1/v1\", model: m, dimensions: 384, passages: {max_tokens: 100, overlap_tokens: 60}}\n" + minimal, []string{
			`c.yaml:2:109: elasticsearch.embeddings.passages.overlap_tokens: must be between 0 and 50, got 60`,
		}},
		{"no such environment variable", "elasticsearch:\n  embeddings: {url: \"http://x:1/v1\", model: m, dimensions: 384, api_key_env: CRAWLSPACE_NO_SUCH_KEY}\n" + minimal, []string{
			`c.yaml:2:78: elasticsearch.embeddings.api_key_env: environment variable CRAWLSPACE_NO_SUCH_KEY is not set`,
		}},
	})
}

func TestAnEmbeddingURLWithCredentialsIsRefusedWithoutEchoingThem(t *testing.T) {
	const secret = "Sup3rS3cret"
	yaml := "elasticsearch:\n  embeddings: {url: \"https://me:" + secret + "@embed.example.org/v1\", model: m, dimensions: 384}\n" + minimal
	runErrCases(t, []errCase{{"user info in the url", yaml, []string{
		`c.yaml:2:21: elasticsearch.embeddings.url: must not carry credentials; use elasticsearch.embeddings.api_key (or api_key_env, api_key_file)`,
	}}})
	for _, e := range errs(t, yaml) {
		if strings.Contains(e, secret) {
			t.Errorf("error repeats the secret: %s", e)
		}
	}
}

func TestEmbeddingsDefaultsAndTheKeyFromAFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "key"), []byte("sk-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte("elasticsearch:\n  embeddings: {url: \"http://127.0.0.1:9997/v1\", model: all-minilm-l6-v2, dimensions: 384, api_key_file: key}\n"+minimal), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	e := c.Elasticsearch.Embeddings
	if e.Service != EmbedOpenAI || e.Similarity != "cosine" || e.IndexType != "int8_hnsw" || e.BatchSize != 32 ||
		e.MaxInFlight != 2 || e.RequestTimeout.D() != time.Minute || e.OnFailure != OnFailureWait ||
		e.Passages.MaxTokens != 200 || e.Passages.OverlapTokens != 40 || e.Passages.MaxPerDocument != 256 ||
		!*e.Passages.Title || !*e.Passages.Headings {
		t.Errorf("defaults %+v", e)
	}
	if e.APIKey != "sk-test" {
		t.Errorf("api key %q, want the file's without its newline", e.APIKey)
	}
	v := c.Elasticsearch.IndexOptions().Vectors
	if v == nil || v.Dims != 384 || v.Similarity != "cosine" || !strings.Contains(v.Fingerprint, "openai:all-minilm-l6-v2:384") {
		t.Errorf("vectors %+v", v)
	}
}

// What changes the vectors or the passages changes the fingerprint, and
// so the physical index: the service's address, batches and credentials
// do not.
func TestTheFingerprintFollowsWhatIsEmbedded(t *testing.T) {
	fp := func(keys string) string {
		t.Helper()
		c, err := Parse("c.yaml", []byte("elasticsearch:\n  embeddings: {model: all-minilm-l6-v2, dimensions: 384, "+keys+"}\n"+minimal))
		if err != nil {
			t.Fatal(err)
		}
		return c.Elasticsearch.IndexOptions().Vectors.Fingerprint
	}
	base := fp(`url: "http://a:1/v1"`)
	for _, same := range []string{`url: "http://b:2/v1"`, `url: "http://a:1/v1", batch_size: 8, max_in_flight: 1, request_timeout: 5s`} {
		if got := fp(same); got != base {
			t.Errorf("%s changed the fingerprint: %s", same, got)
		}
	}
	for _, other := range []string{
		`url: "http://a:1/v1", passages: {max_tokens: 100}`,
		`url: "http://a:1/v1", passages: {overlap_tokens: 0}`,
		`url: "http://a:1/v1", passages: {title: false}`,
		`url: "http://a:1/v1", passages: {max_per_document: 10}`,
	} {
		if got := fp(other); got == base {
			t.Errorf("%s kept the fingerprint", other)
		}
	}
}
