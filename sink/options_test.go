package sink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/sink"
)

// send makes a request with a JSON body to the open test node and returns its status and answer.
func send(t *testing.T, method, u, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(res.Body)
	return res.StatusCode, answer
}

// pipeline creates an ingest pipeline, deleted when the test ends. The integ-test distribution
// has no ingest-common module: its one processor is set_security_user, which needs security
// enabled. So the pipeline has no processors, and the node's ingest statistics show the bytes
// of the documents that went through it (a pipeline without processors counts no documents).
func pipeline(t *testing.T, esURL, name string) {
	t.Helper()
	code, answer := send(t, http.MethodPut, esURL+"/_ingest/pipeline/"+name,
		`{"description":"crawlspace test","processors":[]}`)
	if code != http.StatusOK {
		t.Fatalf("creating pipeline %s: %d %s", name, code, answer)
	}
	t.Cleanup(func() { send(t, http.MethodDelete, esURL+"/_ingest/pipeline/"+name, "") })
}

// ingested is how many bytes of documents went through the pipeline name, by the node's
// statistics.
func ingested(t *testing.T, esURL, name string) int {
	t.Helper()
	var stats struct {
		Nodes map[string]struct {
			Ingest struct {
				Pipelines map[string]struct {
					Bytes int `json:"ingested_as_first_pipeline_in_bytes"`
				} `json:"pipelines"`
			} `json:"ingest"`
		} `json:"nodes"`
	}
	getJSON(t, esURL+"/_nodes/stats/ingest", &stats)
	n := 0
	for _, node := range stats.Nodes {
		n += node.Ingest.Pipelines[name].Bytes
	}
	return n
}

// landed says whether a document can be read back through the alias.
func landed(t *testing.T, esURL, index, u string) bool {
	t.Helper()
	return getJSON(t, esURL+"/"+index+"/_doc/"+docfields.ID(u), nil) == http.StatusOK
}

func TestPipelineRunsOnEveryWriteOfTheSink(t *testing.T) {
	esURL := estest.URL(t)
	index := estest.Index(t)
	pipeline(t, esURL, index+"-pipe")
	cfg := esConfig(esURL, index)
	cfg.Pipeline = index + "-pipe"
	s, err := sink.NewElasticsearch(context.Background(), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// One write per request: each must add to what went through the pipeline.
	before := 0
	for i := range 3 {
		u := fmt.Sprintf("http://example.test/p%d", i)
		if err := s.Index(context.Background(), doc(u, "p")); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		after := ingested(t, esURL, cfg.Pipeline)
		if after <= before {
			t.Errorf("write %d: %d bytes through the pipeline, %d before: it did not go through it", i, after, before)
		}
		before = after
	}
	publishAndClose(t, s)
	if !landed(t, esURL, index, "http://example.test/p0") {
		t.Error("a document written through the pipeline is not in the index")
	}
}

// retried signals each write the sink is about to send again.
type retried struct {
	once sync.Once
	ch   chan struct{}
}

func (r *retried) Bulk(time.Duration, int, error)        {}
func (r *retried) Retry(string)                          { r.once.Do(func() { close(r.ch) }) }
func (r *retried) Unavailable(error)                     {}
func (r *retried) Available(time.Duration, int)          {}
func (r *retried) EmbeddingUnavailable(error)            {}
func (r *retried) EmbeddingAvailable(time.Duration, int) {}

func TestMissingPipelineKeepsTheWritesUntilItIsCreated(t *testing.T) {
	esURL := estest.URL(t)
	index := estest.Index(t)
	cfg := esConfig(esURL, index)
	cfg.Pipeline = index + "-later"
	var got results
	s, err := sink.NewElasticsearch(context.Background(), cfg, nil, got.add)
	if err != nil {
		t.Fatal(err)
	}
	seen := &retried{ch: make(chan struct{})}
	s.Observe(seen)
	u := "http://example.test/later"
	if err := s.Index(context.Background(), doc(u, "Later")); err != nil {
		t.Fatal(err)
	}
	<-seen.ch
	if outs := got.outcomes(); len(outs) != 0 {
		t.Fatalf("a write naming a missing pipeline had outcome %v, want it kept and retried", outs)
	}
	pipeline(t, esURL, index+"-later")
	publishAndClose(t, s)
	if outs := got.outcomes(); len(outs) != 1 || outs[0] != sink.Created {
		t.Errorf("outcomes %v once the pipeline exists, want created", outs)
	}
	if !landed(t, esURL, index, u) || ingested(t, esURL, cfg.Pipeline) == 0 {
		t.Error("the kept write did not land through the pipeline once it existed")
	}
}

// The integ-test distribution has no analysis-common: its tokenizer is standard and its token
// filters lowercase, stop and shingle, so the analyzers here are built from those.
const analysisYAML = `{"analyzer":{
	"stopped":{"type":"custom","tokenizer":"standard","filter":["lowercase","stop"]},
	"shingled":{"type":"custom","tokenizer":"standard","filter":["lowercase","shingle"]}}}`

func optionsConfig(t *testing.T, esURL, index string, refresh time.Duration) *sink.Elasticsearch {
	t.Helper()
	cfg := esConfig(esURL, index)
	cfg.RefreshInterval = config.Duration(refresh)
	if err := json.Unmarshal([]byte(analysisYAML), &cfg.Analysis); err != nil {
		t.Fatal(err)
	}
	cfg.Analyzers = map[string]string{"doc_body": "stopped"}
	cfg.Subfields = map[string]map[string]map[string]any{"doc_title": {"shingles": {"type": "text", "analyzer": "shingled"}}}
	s, err := sink.NewElasticsearch(context.Background(), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hits counts the documents a query finds through the alias.
func hits(t *testing.T, esURL, index, query string) int {
	t.Helper()
	code, answer := send(t, http.MethodPost, esURL+"/"+index+"/_search", `{"query":`+query+`}`)
	if code != http.StatusOK {
		t.Fatalf("search %s: %d %s", query, code, answer)
	}
	var r struct {
		Hits struct {
			Total struct {
				Value int `json:"value"`
			} `json:"total"`
		} `json:"hits"`
	}
	if err := json.NewDecoder(bytes.NewReader(answer)).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return r.Hits.Total.Value
}

func TestIndexSettingsAnalyzersAndSubfieldsReachThePhysicalIndexAndAChangeBuildsANewOne(t *testing.T) {
	esURL := estest.URL(t)
	index := estest.Index(t)
	s := optionsConfig(t, esURL, index, 30*time.Second)
	if s.PhysicalIndex() == docfields.PhysicalIndex(index, nil) {
		t.Error("index options left the physical index name as without them")
	}
	u := "http://example.test/o"
	d := doc(u, "Quick Brown Fox")
	d.Body = "The zebra grazes"
	if err := s.Index(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	publishAndClose(t, s)

	var settings map[string]struct {
		Settings struct {
			Index struct {
				RefreshInterval string `json:"refresh_interval"`
			} `json:"index"`
		} `json:"settings"`
	}
	getJSON(t, esURL+"/"+s.PhysicalIndex()+"/_settings", &settings)
	if got := settings[s.PhysicalIndex()].Settings.Index.RefreshInterval; got != "30000ms" {
		t.Errorf("index.refresh_interval %q, want 30000ms", got)
	}
	for _, c := range []struct {
		query string
		want  int
	}{
		{`{"match":{"doc_body":"zebra"}}`, 1},
		// The stop filter drops "the" from doc_body; the standard analyzer would keep it.
		{`{"match":{"doc_body":"the"}}`, 0},
		// Shingles make word pairs terms of the sub-field.
		{`{"term":{"doc_title.shingles":"quick brown"}}`, 1},
		{`{"term":{"doc_title":"quick brown"}}`, 0},
	} {
		if got := hits(t, esURL, index, c.query); got != c.want {
			t.Errorf("%s: %d hits, want %d", c.query, got, c.want)
		}
	}

	// Another refresh interval is another index, built with every option again.
	next := optionsConfig(t, esURL, index, 10*time.Second)
	if next.PhysicalIndex() == s.PhysicalIndex() {
		t.Fatal("a changed refresh interval kept the physical index")
	}
	if err := next.Index(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	publishAndClose(t, next)
	if got := hits(t, esURL, index, `{"term":{"doc_title.shingles":"quick brown"}}`); got != 1 {
		t.Errorf("the rebuilt index finds %d documents by shingle, want 1", got)
	}
	var aliases map[string]any
	getJSON(t, esURL+"/_alias/"+index, &aliases)
	if _, ok := aliases[next.PhysicalIndex()]; !ok || len(aliases) != 1 {
		t.Errorf("alias %s points at %v, want only %s", index, aliases, next.PhysicalIndex())
	}
}
