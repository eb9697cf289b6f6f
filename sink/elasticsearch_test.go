package sink_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/faultproxy"
	"github.com/crawlspace/crawlspace/sink"
)

type results struct {
	mu  sync.Mutex
	all []sink.Result
}

func (r *results) add(res sink.Result) {
	r.mu.Lock()
	r.all = append(r.all, res)
	r.mu.Unlock()
}

func (r *results) outcomes() []sink.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]sink.Outcome, len(r.all))
	for i, res := range r.all {
		out[i] = res.Outcome
	}
	return out
}

func zero() *int { z := 0; return &z }

func esConfig(addr, index string) *config.Elasticsearch {
	return &config.Elasticsearch{Addresses: []string{addr}, Index: index, Shards: 1, Replicas: zero(), BulkWorkers: 1,
		BulkFlushBytes: 5_000_000, BulkFlushInterval: config.Duration(time.Second),
		RequestTimeout: config.Duration(config.DefaultESRequestTimeout)}
}

func doc(u, title string) *docfields.Document {
	return &docfields.Document{URL: u, Title: title, Body: "body of " + title, ContentType: "text/html", Source: "test"}
}

func getJSON(t *testing.T, u string, v any) int {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if v != nil && res.StatusCode == http.StatusOK {
		if err := json.NewDecoder(res.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	return res.StatusCode
}

func TestElasticsearchSinkCreatesUpdatesAndDeletesByURLDerivedID(t *testing.T) {
	esURL := estest.URL(t)
	index := estest.Index(t)
	var got results
	ctx := context.Background()
	s, err := sink.NewElasticsearch(ctx, esConfig(esURL, index), nil, got.add)
	if err != nil {
		t.Fatal(err)
	}
	u := "http://example.test/a"
	steps := []func() error{
		func() error { return s.Index(ctx, doc(u, "first")) },
		func() error { return s.Index(ctx, doc(u, "second")) },
		func() error { return s.Delete(ctx, docfields.ID(u), u) },
		func() error { return s.Delete(ctx, docfields.ID(u), u) },
		func() error { return s.Index(ctx, doc(u+"?id=2", "kept")) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
		// Flush after each step so the outcomes come back in order.
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	publishAndClose(t, s)
	want := []sink.Outcome{sink.Created, sink.Updated, sink.Deleted, sink.NotFound, sink.Created}
	if got := got.outcomes(); !slices.Equal(got, want) {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
	var hit struct {
		Source docfields.Document `json:"_source"`
	}
	if code := getJSON(t, esURL+"/"+index+"/_doc/"+docfields.ID(u+"?id=2"), &hit); code != http.StatusOK {
		t.Fatalf("GET the kept document through the alias: %d", code)
	}
	if hit.Source.Title != "kept" || hit.Source.URL != u+"?id=2" {
		t.Errorf("kept document reads back as %+v", hit.Source)
	}
	var aliases map[string]any
	getJSON(t, esURL+"/_alias/"+index, &aliases)
	if _, ok := aliases[s.PhysicalIndex()]; !ok || len(aliases) != 1 {
		t.Errorf("alias %s points at %v, want only %s", index, aliases, s.PhysicalIndex())
	}
}

func TestElasticsearchSinkReportsAMappingConflictWithElasticsearchsReason(t *testing.T) {
	esURL := estest.URL(t)
	index := estest.Index(t)
	var got results
	ctx := context.Background()
	// The mapping is strict: a field it does not declare is rejected.
	s, err := sink.NewElasticsearch(ctx, esConfig(esURL, index), map[string]string{"extra_price": "integer"}, got.add)
	if err != nil {
		t.Fatal(err)
	}
	bad := doc("http://example.test/bad", "bad")
	bad.Extra = map[string][]string{"extra_undeclared": {"x"}}
	if err := s.Index(ctx, bad); err != nil {
		t.Fatal(err)
	}
	if err := s.Index(ctx, doc("http://example.test/good", "good")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var failed *sink.Result
	for i, r := range got.all {
		if r.URL == bad.URL {
			failed = &got.all[i]
		}
	}
	if failed == nil || failed.Outcome != sink.Failed || failed.Status != http.StatusBadRequest || !strings.Contains(failed.Reason, "extra_undeclared") {
		t.Fatalf("want the bad document failed with a 400 naming extra_undeclared, got %+v", failed)
	}
	if len(got.all) != 2 {
		t.Errorf("want one outcome per document, got %+v", got.all)
	}
}

// TestElasticsearchSinkRetriesThroughAnOutage puts a proxy in front of the
// real node that fails the first bulk requests the ways an outage does (a
// dropped connection, a 429 for one item) and checks every document still
// lands exactly once.
func TestElasticsearchSinkRetriesThroughAnOutage(t *testing.T) {
	esURL := estest.URL(t)
	index := estest.Index(t)
	target, _ := url.Parse(esURL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var bulks atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/_bulk") {
			switch bulks.Add(1) {
			case 1: // the node is gone: the connection drops without an answer
				hj, _ := w.(http.Hijacker)
				conn, _, _ := hj.Hijack()
				conn.Close()
				return
			case 2: // the node is overloaded: a 503 for the whole request
				io.Copy(io.Discard, r.Body)
				http.Error(w, `{"error":"unavailable"}`, http.StatusServiceUnavailable)
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()

	var got results
	ctx := context.Background()
	s, err := sink.NewElasticsearch(ctx, esConfig(front.URL, index), nil, got.add)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := range n {
		if err := s.Index(ctx, doc("http://example.test/p"+string(rune('a'+i)), "p")); err != nil {
			t.Fatal(err)
		}
	}
	publishAndClose(t, s)
	if b := bulks.Load(); b < 3 {
		t.Fatalf("want the documents retried after two failed bulk requests, saw %d bulk requests", b)
	}
	outs := got.outcomes()
	if len(outs) != n {
		t.Fatalf("want %d outcomes, got %d: %v", n, len(outs), outs)
	}
	for _, o := range outs {
		if o != sink.Created {
			t.Fatalf("want every document created once, got %v", outs)
		}
	}
	var count struct {
		Count int `json:"count"`
	}
	getJSON(t, esURL+"/"+index+"/_count", &count)
	if count.Count != n {
		t.Errorf("index holds %d documents, want %d", count.Count, n)
	}
}

func TestElasticsearchSinkMovesTheAliasFromAnOlderPhysicalIndexInOneStep(t *testing.T) {
	esURL := estest.URL(t)
	index := estest.Index(t)
	ctx := context.Background()
	old, err := sink.NewElasticsearch(ctx, esConfig(esURL, index), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	publishAndClose(t, old)
	// A new extra field is a new mapping, hence a new physical index.
	next, err := sink.NewElasticsearch(ctx, esConfig(esURL, index), map[string]string{"extra_section": ""}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if next.PhysicalIndex() == old.PhysicalIndex() {
		t.Fatal("a changed mapping kept the physical index name")
	}
	if err := next.Index(ctx, doc("http://example.test/x", "x")); err != nil {
		t.Fatal(err)
	}
	publishAndClose(t, next)
	var aliases map[string]any
	getJSON(t, esURL+"/_alias/"+index, &aliases)
	if _, ok := aliases[next.PhysicalIndex()]; !ok || len(aliases) != 1 {
		t.Errorf("alias %s points at %v, want only %s", index, aliases, next.PhysicalIndex())
	}
}

func TestElasticsearchSinkRefusesAConcreteIndexNamedLikeTheAlias(t *testing.T) {
	esURL := estest.URL(t)
	index := estest.Index(t)
	req, _ := http.NewRequest(http.MethodPut, esURL+"/"+index, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	ctx := context.Background()
	s, err := sink.NewElasticsearch(ctx, esConfig(esURL, index), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Publish(ctx)
	s.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "concrete index") {
		t.Fatalf("want an error explaining the concrete index, got %v", err)
	}
}

func TestElasticsearchSinkKeepsTheAliasOnTheOldIndexUntilPublished(t *testing.T) {
	esURL := estest.URL(t)
	index := estest.Index(t)
	ctx := context.Background()
	old, err := sink.NewElasticsearch(ctx, esConfig(esURL, index), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Index(ctx, doc("http://example.test/old", "old")); err != nil {
		t.Fatal(err)
	}
	if err := old.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	old.Close(ctx)
	next, err := sink.NewElasticsearch(ctx, esConfig(esURL, index), map[string]string{"extra_section": ""}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := next.Index(ctx, doc("http://example.test/new", "new")); err != nil {
		t.Fatal(err)
	}
	// Flushed and closed, but not published: a half-built index stays unseen.
	if err := next.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var aliases map[string]any
	getJSON(t, esURL+"/_alias/"+index, &aliases)
	if _, ok := aliases[old.PhysicalIndex()]; !ok || len(aliases) != 1 {
		t.Errorf("before Publish the alias points at %v, want only the old %s", aliases, old.PhysicalIndex())
	}
}

// publishAndClose ends a sink the way a completed crawl cycle does.
func publishAndClose(t *testing.T, s *sink.Elasticsearch) {
	t.Helper()
	ctx := context.Background()
	if err := s.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// proxiedSink opens a sink writing to a fresh index through a fault proxy.
func proxiedSink(t *testing.T) (s *sink.Elasticsearch, p *faultproxy.Proxy, got *results, index string) {
	t.Helper()
	index = estest.Index(t)
	p = estest.Proxy(t)
	got = &results{}
	s, err := sink.NewElasticsearch(context.Background(), esConfig(p.URL, index), nil, got.add)
	if err != nil {
		t.Fatal(err)
	}
	return s, p, got, index
}

func TestWritesNotLandedWhenTheSinkClosesAreUnsentNotFailed(t *testing.T) {
	s, p, got, _ := proxiedSink(t)
	ctx := context.Background()
	estest.SetFault(t, p, faultproxy.Fault{Mode: faultproxy.Refuse})
	const n = 5
	for i := range n {
		if err := s.Index(ctx, doc(fmt.Sprintf("http://example.test/u%d", i), "u")); err != nil {
			t.Fatal(err)
		}
	}
	closing, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := s.Close(closing); err == nil {
		t.Error("Close reported success with every write unlanded")
	}
	outs := got.outcomes()
	if len(outs) != n {
		t.Fatalf("outcomes %v, want one per write", outs)
	}
	for _, o := range outs {
		if o != sink.Unsent {
			t.Fatalf("outcomes %v, want every write unsent (it stays pending), none failed", outs)
		}
	}
}

func TestADeleteWaitsForTheRetriedIndexOfTheSameDocument(t *testing.T) {
	s, p, got, index := proxiedSink(t)
	ctx := context.Background()
	u := "http://example.test/flip"
	// The index is refused once and sent again after a backoff; the delete
	// made meanwhile must not land before it.
	estest.SetFault(t, p, faultproxy.Fault{Mode: faultproxy.FailItems, Status: http.StatusServiceUnavailable, Count: 1})
	if err := s.Index(ctx, doc(u, "flip")); err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := p.Await(wait, func(st faultproxy.Stats) bool { return st.Items == 1 }); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, docfields.ID(u), u); err != nil {
		t.Fatal(err)
	}
	publishAndClose(t, s)
	if want := []sink.Outcome{sink.Created, sink.Deleted}; !slices.Equal(got.outcomes(), want) {
		t.Errorf("outcomes %v, want %v: the index, then the delete", got.outcomes(), want)
	}
	if code := getJSON(t, estest.URL(t)+"/"+index+"/_doc/"+docfields.ID(u), nil); code != http.StatusNotFound {
		t.Errorf("the deleted document reads back with %d, want 404", code)
	}
}

func TestAnUnreachableAddressWithCredentialsIsNamedWithoutThem(t *testing.T) {
	const secret = "Sup3rS3cret"
	// Validation refuses such an address; a caller that skips it still
	// gets no password in the error.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there: the connection is refused
	_, err = sink.NewElasticsearch(context.Background(), esConfig("http://elastic:"+secret+"@"+addr, "x"), nil, nil)
	if err == nil {
		t.Fatal("a sink opened against a closed port")
	}
	if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), addr) {
		t.Errorf("error %q: want the address named without its password", err)
	}
}

// The file realm of the test distribution cannot hold API keys (they live in the .security index,
// which that build cannot create), so what is tested is what crawlspace controls: the key is sent
// as Elasticsearch documents it, on every request, and a 401 names api_key without showing it.
func TestAPIKeyIsSentAsTheApiKeyAuthorizationHeaderOnEveryRequestAndARefusalNamesItNotItsValue(t *testing.T) {
	const key = "VnVhQ2ZHY0JDZGJrUW0tZTVhT3g6dWkybHAyYXhUTm1zeWFrdzl0dk5udw=="
	for _, refuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("refused=%v", refuse), func(t *testing.T) {
			var mu sync.Mutex
			var seen []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
				mu.Unlock()
				w.Header().Set("X-Elastic-Product", "Elasticsearch")
				w.Header().Set("Content-Type", "application/json")
				switch {
				case refuse:
					w.WriteHeader(http.StatusUnauthorized)
					io.WriteString(w, `{"error":{"type":"security_exception","reason":"unable to authenticate with provided credentials"},"status":401}`)
				case r.Method == http.MethodHead:
					w.WriteHeader(http.StatusOK)
				case strings.HasSuffix(r.URL.Path, "/_bulk"):
					io.Copy(io.Discard, r.Body)
					io.WriteString(w, `{"errors":false,"items":[{"index":{"_id":"x","status":201,"result":"created"}}]}`)
				}
			}))
			defer srv.Close()
			cfg := esConfig(srv.URL, "keyed")
			cfg.APIKey = key
			s, err := sink.NewElasticsearch(context.Background(), cfg, nil, nil)
			if refuse {
				if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "elasticsearch.api_key") || strings.Contains(err.Error(), key) {
					t.Errorf("opening with a refused key: %v; want a 401 naming elasticsearch.api_key, not the key", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Index(context.Background(), doc("http://example.test/a", "a")); err != nil {
					t.Fatal(err)
				}
				if err := s.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) == 0 || !refuse && len(seen) < 2 {
				t.Fatalf("requests seen: %q", seen)
			}
			for _, r := range seen {
				// go-elasticsearch writes the scheme "APIKey"; Elasticsearch reads it without
				// regard to case.
				f := strings.Fields(r)
				if len(f) != 4 || !strings.EqualFold(f[2], "ApiKey") || f[3] != key {
					t.Errorf("request %q, want Authorization: ApiKey <the key>", r)
				}
			}
		})
	}
}

// An update changes the fields it names and keeps the rest as indexed: a
// group's list of duplicates is rewritten, then emptied, without the
// page's fields; an update of a document the index does not hold fails
// with Elasticsearch's reason and creates nothing.
func TestElasticsearchSinkUpdatesAGroupsListInPlace(t *testing.T) {
	esURL, index := estest.URL(t), estest.Index(t)
	var got results
	ctx := context.Background()
	s, err := sink.NewElasticsearch(ctx, esConfig(esURL, index), nil, got.add)
	if err != nil {
		t.Fatal(err)
	}
	u, missing := "http://example.test/a", "http://example.test/missing"
	d := doc(u, "Policy")
	d.Duplicates, d.ContentHash = []string{u + "?id=1", u + "?id=2"}, "h2"
	steps := []func() error{
		func() error { return s.Index(ctx, d) },
		func() error {
			return s.Update(ctx, docfields.ID(u), u, docfields.AppendGroupJSON(nil, []string{u + "?id=1"}, "h1"))
		},
		func() error {
			return s.Update(ctx, docfields.ID(missing), missing, docfields.AppendGroupJSON(nil, nil, "h0"))
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var hit struct {
		Source docfields.Document `json:"_source"`
	}
	getJSON(t, esURL+"/"+s.PhysicalIndex()+"/_doc/"+docfields.ID(u), &hit)
	if hit.Source.Title != "Policy" || hit.Source.Body != d.Body || !slices.Equal(hit.Source.Duplicates, []string{u + "?id=1"}) || hit.Source.ContentHash != "h1" {
		t.Errorf("after the update the document is %+v, want its page's fields, one duplicate and hash h1", hit.Source)
	}
	if err := s.Update(ctx, docfields.ID(u), u, docfields.AppendGroupJSON(nil, nil, "h0")); err != nil {
		t.Fatal(err)
	}
	publishAndClose(t, s)
	hit.Source = docfields.Document{}
	getJSON(t, esURL+"/"+index+"/_doc/"+docfields.ID(u), &hit)
	if hit.Source.Title != "Policy" || len(hit.Source.Duplicates) != 0 || hit.Source.ContentHash != "h0" {
		t.Errorf("after the list was emptied the document is %+v", hit.Source)
	}
	if code := getJSON(t, esURL+"/"+index+"/_doc/"+docfields.ID(missing), nil); code != http.StatusNotFound {
		t.Errorf("an update of a missing document left one: GET %d", code)
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	want := []sink.Outcome{sink.Created, sink.Updated, sink.Failed, sink.Updated}
	for i, res := range got.all {
		if i >= len(want) || res.Outcome != want[i] || res.Delete {
			t.Errorf("outcome %d: %+v, want %s", i, res, want[min(i, len(want)-1)])
		}
	}
	if len(got.all) != len(want) {
		t.Fatalf("%d outcomes, want %d", len(got.all), len(want))
	}
	if r := got.all[2]; !strings.Contains(r.Reason, "document_missing") || r.URL != missing {
		t.Errorf("the update of a missing document failed with %+v, want Elasticsearch's document_missing reason", r)
	}
}
