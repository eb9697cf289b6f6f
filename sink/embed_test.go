package sink_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/internal/embedtest"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/faultproxy"
	"github.com/crawlspace/crawlspace/sink"
)

// embedConfig is a sink configuration with embeddings from the real model
// at embedURL, sent with key.
func embedConfig(esURL, index, embedURL, key string) *config.Elasticsearch {
	cfg := esConfig(esURL, index)
	yes := true
	cfg.Embeddings = &config.Embeddings{Service: config.EmbedOpenAI, URL: embedURL, Model: embedtest.Model, APIKey: key,
		Dimensions: embedtest.Dimensions, Similarity: "cosine", IndexType: "int8_hnsw", BatchSize: 8, MaxInFlight: 2,
		RequestTimeout: config.Duration(time.Minute), OnFailure: config.OnFailureWait,
		Passages: config.Passages{MaxTokens: 60, OverlapTokens: 10, MaxPerDocument: 100, Title: &yes, Headings: &yes}}
	return cfg
}

// sectioned is a page of three sections, as mapping gives it.
func sectioned(u string, sections ...string) *docfields.Document {
	d := &docfields.Document{URL: u, Title: "Operating notes", ContentType: "text/html", Source: "test"}
	var b strings.Builder
	for i := 0; i+1 < len(sections); i += 2 {
		d.Sections = append(d.Sections, docfields.Section{Offset: b.Len(), Level: 2, Title: sections[i], Anchor: strings.ToLower(strings.ReplaceAll(sections[i], " ", "-"))})
		b.WriteString(sections[i] + "\n" + sections[i+1] + "\n")
	}
	d.Body = strings.TrimSpace(b.String())
	return d
}

var notes = []string{
	"Restarting", "After a kernel upgrade the machine must be rebooted before the new kernel runs.",
	"Logging", "Each service writes its messages to a file under /var/log, rotated weekly.",
	"Backups", "Copies of the databases are taken every night and kept for thirty days.",
}

// The passages of a document land with it, each with its vector from the
// real model; written again unchanged, no passage is embedded again (the
// server sees no request), and with one section changed only that
// passage is.
func TestPassagesGetVectorsAndOnlyChangedOnesAreEmbeddedAgain(t *testing.T) {
	esURL, embedURL := estest.URL(t), embedtest.URL(t)
	index, key := estest.Index(t), embedtest.Key(t)
	write := func(d *docfields.Document) sink.Result {
		t.Helper()
		var got results
		s, err := sink.NewElasticsearch(context.Background(), embedConfig(esURL, index, embedURL, key), nil, got.add)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Index(context.Background(), d); err != nil {
			t.Fatal(err)
		}
		publishAndClose(t, s)
		if len(got.all) != 1 {
			t.Fatalf("results %+v", got.all)
		}
		return got.all[0]
	}
	u := "http://example.test/notes"
	first := write(sectioned(u, notes...))
	if first.Outcome != sink.Created || first.Passages.Embedded != 3 || first.Passages.Reused != 0 || first.Passages.Requests != 1 ||
		first.Passages.Characters == 0 || first.Passages.Tokens == 0 {
		t.Fatalf("first write %+v", first)
	}
	ps := embedtest.Passages(t, esURL, index, u)
	if len(ps) != 3 {
		t.Fatalf("passages in the index %+v", ps)
	}
	for _, p := range ps {
		if len(p.Vector) != embedtest.Dimensions || p.Hash == "" || !strings.HasPrefix(p.URL, u+"#") {
			t.Errorf("passage %+v", p)
		}
	}
	if s := embedtest.Stats(t, key); s.Requests != 1 || s.Inputs != 3 {
		t.Errorf("server counted %+v, want 1 request of 3 texts", s)
	}

	again := write(sectioned(u, notes...))
	if again.Passages.Embedded != 0 || again.Passages.Reused != 3 || again.Passages.Requests != 0 {
		t.Errorf("unchanged write %+v, want every passage reused", again.Passages)
	}
	if s := embedtest.Stats(t, key); s.Requests != 1 {
		t.Errorf("the unchanged document cost %d more requests", s.Requests-1)
	}

	changed := append([]string(nil), notes...)
	changed[3] = "Each service sends its messages to the journal, kept for a month."
	third := write(sectioned(u, changed...))
	if third.Passages.Embedded != 1 || third.Passages.Reused != 2 {
		t.Errorf("one section changed: %+v, want 1 embedded and 2 reused", third.Passages)
	}
	if s := embedtest.Stats(t, key); s.Requests != 2 || s.Inputs != 4 {
		t.Errorf("server counted %+v, want one more request of one text", s)
	}
	for i, p := range embedtest.Passages(t, esURL, index, u) {
		if p.Vector == nil || (i != 1) != (p.Vector[0] == ps[i].Vector[0]) {
			t.Errorf("passage %d vector: changed %v, want only passage 1's", i, p.Vector[0] != ps[i].Vector[0])
		}
	}
}

// outages records the embedding outages the sink reports.
// watchedSink opens a sink on cfg whose outages and results the test sees.
func watchedSink(t *testing.T, cfg *config.Elasticsearch) (*sink.Elasticsearch, *results, *outages) {
	t.Helper()
	got := &results{}
	s, err := sink.NewElasticsearch(context.Background(), cfg, nil, got.add)
	if err != nil {
		t.Fatal(err)
	}
	seen := &outages{downNow: make(chan struct{})}
	s.Observe(seen)
	return s, got, seen
}

type outages struct {
	mu        sync.Mutex
	down, up  int
	lastErr   string
	downNow   chan struct{}
	retriedUp int
}

func (o *outages) Bulk(time.Duration, int, error) {}
func (o *outages) Retry(string)                   {}
func (o *outages) Unavailable(error)              {}
func (o *outages) Available(time.Duration, int)   {}
func (o *outages) EmbeddingUnavailable(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down++
	o.lastErr = err.Error()
	if o.down == 1 {
		close(o.downNow)
	}
}
func (o *outages) EmbeddingAvailable(_ time.Duration, retried int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.up++
	o.retriedUp = retried
}

// While the embedding service is down the documents wait, none is
// written without its vectors; one warning says so, and once the service
// is back they land with their vectors and one line says so. A sink
// closed before then reports them unsent, so they stay pending.
func TestAnEmbeddingOutageHoldsTheDocumentsUntilTheServiceIsBack(t *testing.T) {
	esURL, embedURL := estest.URL(t), embedtest.URL(t)
	p, err := faultproxy.New(strings.TrimSuffix(embedURL, "/v1"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, fault := range []faultproxy.Fault{
		{Mode: faultproxy.Refuse},
		{Mode: faultproxy.Status, Status: 429},
		{Mode: faultproxy.Status, Status: 503},
	} {
		index := estest.Index(t)
		estest.SetFault(t, p, fault)
		s, got, seen := watchedSink(t, embedConfig(esURL, index, p.URL+"/v1", ""))
		const n = 4
		for i := range n {
			if err := s.Index(context.Background(), sectioned("http://example.test/n"+string(rune('a'+i)), notes...)); err != nil {
				t.Fatal(err)
			}
		}
		<-seen.downNow
		if fault.Mode == faultproxy.Status {
			// Tried again and refused again, still held (a refused
			// connection never reaches the proxy to be counted).
			wait, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			if err := p.Await(wait, func(st faultproxy.Stats) bool { return st.Faulted >= 3 }); err != nil {
				t.Fatal(err)
			}
			cancel()
		}
		if outs := got.outcomes(); len(outs) != 0 {
			t.Fatalf("%+v: outcomes %v while the service is down, want the writes held", fault, outs)
		}
		estest.SetFault(t, p, faultproxy.Fault{Mode: faultproxy.Pass})
		publishAndClose(t, s)
		outs := got.outcomes()
		if len(outs) != n {
			t.Fatalf("%+v: outcomes %v", fault, outs)
		}
		for i, o := range outs {
			if o != sink.Created {
				t.Errorf("%+v: outcome %d %v", fault, i, o)
			}
		}
		for i := range n {
			for _, ps := range embedtest.Passages(t, esURL, index, "http://example.test/n"+string(rune('a'+i))) {
				if len(ps.Vector) != embedtest.Dimensions {
					t.Errorf("%+v: a passage landed without its vector", fault)
				}
			}
		}
		seen.mu.Lock()
		// The writes not tried before the service came back were not
		// delayed by it.
		if seen.down != 1 || seen.up != 1 || seen.retriedUp < 1 || seen.retriedUp > n {
			t.Errorf("%+v: %d warnings, %d recoveries (%d writes retried): want one of each, from 1 to %d retried", fault, seen.down, seen.up, seen.retriedUp, n)
		}
		seen.mu.Unlock()
	}

	// Closed during the outage: unsent, so they stay pending.
	index := estest.Index(t)
	estest.SetFault(t, p, faultproxy.Fault{Mode: faultproxy.Refuse})
	s, got, seen := watchedSink(t, embedConfig(esURL, index, p.URL+"/v1", ""))
	if err := s.Index(context.Background(), sectioned("http://example.test/held", notes...)); err != nil {
		t.Fatal(err)
	}
	<-seen.downNow
	closing, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.Close(closing); err == nil {
		t.Error("Close reported success with a write waiting for its vectors")
	}
	if outs := got.outcomes(); len(outs) != 1 || outs[0] != sink.Unsent {
		t.Errorf("outcomes %v, want the write unsent", outs)
	}
}

// Vectors of another length than configured are refused like an outage:
// the documents wait, and the warning says what was answered.
func TestVectorsOfTheWrongLengthAreNeverIndexed(t *testing.T) {
	esURL, embedURL := estest.URL(t), embedtest.URL(t)
	index := estest.Index(t)
	cfg := embedConfig(esURL, index, embedURL, "")
	cfg.Embeddings.Dimensions = 512
	s, got, seen := watchedSink(t, cfg)
	if err := s.Index(context.Background(), sectioned("http://example.test/w", notes...)); err != nil {
		t.Fatal(err)
	}
	<-seen.downNow
	seen.mu.Lock()
	msg := seen.lastErr
	seen.mu.Unlock()
	if !strings.Contains(msg, "vectors of 384 dimensions answered, embeddings.dimensions says 512") {
		t.Errorf("warning %q", msg)
	}
	closing, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = s.Close(closing)
	if outs := got.outcomes(); len(outs) != 1 || outs[0] != sink.Unsent {
		t.Errorf("outcomes %v, want the write unsent", outs)
	}
	var count struct {
		Count int `json:"count"`
	}
	getJSON(t, esURL+"/"+s.PhysicalIndex()+"/_count", &count)
	if count.Count != 0 {
		t.Errorf("%d documents indexed with vectors of the wrong length", count.Count)
	}
}

// With on_failure index_without_vectors a document is written at once,
// without the vectors it could not get, and says so.
func TestIndexWithoutVectorsWritesTheDocumentAndSaysSo(t *testing.T) {
	esURL, embedURL := estest.URL(t), embedtest.URL(t)
	p, err := faultproxy.New(strings.TrimSuffix(embedURL, "/v1"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	estest.SetFault(t, p, faultproxy.Fault{Mode: faultproxy.Status, Status: 503})
	index := estest.Index(t)
	cfg := embedConfig(esURL, index, p.URL+"/v1", "")
	cfg.Embeddings.OnFailure = config.OnFailureIndex
	var got results
	s, err := sink.NewElasticsearch(context.Background(), cfg, nil, got.add)
	if err != nil {
		t.Fatal(err)
	}
	u := "http://example.test/without"
	if err := s.Index(context.Background(), sectioned(u, notes...)); err != nil {
		t.Fatal(err)
	}
	publishAndClose(t, s)
	if len(got.all) != 1 || got.all[0].Outcome != sink.Created || !got.all[0].NoVectors || got.all[0].Passages.Failed != 3 ||
		!strings.Contains(got.all[0].Reason, "503") {
		t.Fatalf("results %+v", got.all)
	}
	ps := embedtest.Passages(t, esURL, index, u)
	if len(ps) != 3 || ps[0].Vector != nil || ps[0].Text == "" {
		t.Errorf("passages %+v, want their text without vectors", ps)
	}
}

// A text the service refuses for what it holds (past its context length)
// fails its own document for good, as a mapping error does; the other
// documents of the batch get their vectors.
func TestATextTheServiceRefusesFailsOnlyItsDocument(t *testing.T) {
	esURL, embedURL := estest.URL(t), embedtest.URL(t)
	index := estest.Index(t)
	cfg := embedConfig(esURL, index, embedURL, "")
	cfg.Embeddings.Passages.MaxTokens = 2000
	var got results
	s, err := sink.NewElasticsearch(context.Background(), cfg, nil, got.add)
	if err != nil {
		t.Fatal(err)
	}
	long := sectioned("http://example.test/long", "Long", strings.Repeat("word ", 900))
	if err := s.Index(context.Background(), sectioned("http://example.test/short", notes...)); err != nil {
		t.Fatal(err)
	}
	if err := s.Index(context.Background(), long); err != nil {
		t.Fatal(err)
	}
	publishAndClose(t, s)
	byURL := map[string]sink.Result{}
	for _, r := range got.all {
		byURL[r.URL] = r
	}
	if r := byURL["http://example.test/long"]; r.Outcome != sink.Failed || !strings.Contains(r.Reason, "maximum context length") || r.Passages.Failed != 1 {
		t.Errorf("the long document: %+v", r)
	}
	if r := byURL["http://example.test/short"]; r.Outcome != sink.Created || r.Passages.Embedded != 3 {
		t.Errorf("the short document: %+v", r)
	}
}
