package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/embed"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/embedtest"
	"github.com/crawlspace/crawlspace/internal/esclient"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/faultproxy"
	"github.com/crawlspace/crawlspace/provider"
	"github.com/crawlspace/crawlspace/search"
	"github.com/crawlspace/crawlspace/sink"
)

// policySite serves pages of the Debian Policy Manual from the
// debian-policy package, each with its file's time as Last-Modified, so a
// re-crawl is answered 304; change replaces text on a page and makes it
// newer.
type policySite struct {
	mu    sync.Mutex
	pages map[string][]byte
	mod   map[string]time.Time
}

func newPolicySite(t *testing.T, names ...string) (*policySite, *httptest.Server) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(policyDocs, "index.html")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("debian-policy must be installed in CI (scripts/test installs it): %v", err)
		}
		t.Skipf("debian-policy is not installed (apt-get install --no-install-recommends debian-policy): %v", err)
	}
	s := &policySite{pages: map[string][]byte{}, mod: map[string]time.Time{}}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(policyDocs, n))
		if err != nil {
			t.Fatal(err)
		}
		s.pages["/"+n], s.mod["/"+n] = b, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func (s *policySite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	body, ok := s.pages[r.URL.Path]
	mod := s.mod[r.URL.Path]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	http.ServeContent(w, r, r.URL.Path, mod, bytes.NewReader(body))
}

func (s *policySite) change(t *testing.T, page, old, new string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !bytes.Contains(s.pages[page], []byte(old)) {
		t.Fatalf("%s does not hold %q", page, old)
	}
	s.pages[page] = bytes.Replace(s.pages[page], []byte(old), []byte(new), 1)
	s.mod[page] = s.mod[page].Add(24 * time.Hour)
}

// embeddingsYAML is a crawl of pages into esURL with embeddings from the
// model at embedURL under key.
func embeddingsYAML(esURL, index, embedURL, key string, maxTokens int, base string, pages ...string) string {
	var starts []string
	for _, p := range pages {
		starts = append(starts, fmt.Sprintf("%q", base+"/"+p))
	}
	return fmt.Sprintf(`
elasticsearch:
  addresses: [%q]
  index: %s
  replicas: 0
  embeddings: {url: %q, model: %s, dimensions: 384, api_key: %q, passages: {max_tokens: %d, overlap_tokens: %d}}
allow_private_networks: true
sources:
  - name: policy
    start_urls: [%s]
    discovery: false
    max_age: 1ns
`, esURL, index, embedURL, embedtest.Model, key, maxTokens, maxTokens/5, strings.Join(starts, ", "))
}

// questions asked of the two chapters crawled, in other words than the
// sections that answer them (testdata/semantic/policy-questions.yaml has
// more, for the measurements of docs/semantic.md).
var chapterQuestions = []struct{ q, page, section string }{
	{"How short should the one-line summary of a package be?", "ch-binary.html", "the-single-line-synopsis"},
	{"Upstream numbers its releases after the day they came out; why does that sort badly?", "ch-binary.html", "version-numbers-based-on-dates"},
	{"Which packages must keep working even while they are only unpacked, and may not be removed easily?", "ch-binary.html", "essential-packages"},
	{"In which form and where are the reference pages for commands installed?", "ch-docs.html", "manual-pages"},
	{"Where must the license of a package be shipped, and may that file be compressed?", "ch-docs.html", "copyright-information"},
}

// A crawl with embeddings gives each page's sections passages with
// vectors from the real model, which answer questions put in other words
// by kNN alone and combined with the words; a re-crawl of the unchanged
// site makes no embedding call (counted on the model's server); a changed
// page sends only its changed passages; and a new passage size rebuilds
// the index with every passage embedded again, saying so.
func TestCrawlWithEmbeddingsAnswersQuestionsAndEmbedsOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	esURL, embedURL := estest.URL(t), embedtest.URL(t)
	site, srv := newPolicySite(t, "ch-binary.html", "ch-docs.html")
	index, key := estest.Index(t), embedtest.Key(t)
	// 100-token passages: what all-MiniLM-L6-v2 was measured to answer
	// best from (docs/semantic.md).
	yaml := embeddingsYAML(esURL, index, embedURL, key, 100, srv.URL, "ch-binary.html", "ch-docs.html")
	cfg := crawltest.Config(t, yaml)

	first := crawl(t, cfg)
	p := first.Total.Passages
	if first.Total.Created != 2 || p.Embedded < 20 || p.Reused != 0 || p.Failed != 0 || p.Characters == 0 || p.Tokens == 0 {
		t.Fatalf("first crawl %+v, passages %+v", first.Total, p)
	}
	t.Logf("first crawl: passages %+v", p)
	calls := embedtest.Stats(t, key)
	if calls.Inputs != int64(p.Embedded) {
		t.Errorf("the server embedded %d texts, the report says %d", calls.Inputs, p.Embedded)
	}
	askAll(t, esURL, index, embedURL, srv.URL)
	docQueries(t, esURL, index, embedURL, srv.URL)

	again := crawl(t, cfg)
	if again.Total.Unchanged != 2 || again.Total.Passages != (sink.PassageCounts{}) {
		t.Errorf("unchanged re-crawl: %+v", again.Total)
	}
	if now := embedtest.Stats(t, key); now.Requests != calls.Requests {
		t.Errorf("the unchanged re-crawl made %d embedding requests", now.Requests-calls.Requests)
	}

	site.change(t, "/ch-docs.html", "You should only use sections 1 to 9", "Only sections 1 to 9 may be used")
	changed := crawl(t, cfg)
	cp := changed.Total.Passages
	t.Logf("one sentence changed: passages %+v", cp)
	if changed.Total.Updated != 1 || cp.Embedded < 1 || cp.Embedded > 2 || cp.Reused < 5 {
		t.Errorf("one sentence changed: %+v, passages %+v: want one or two passages embedded, the page's others reused", changed.Total, cp)
	}
	if now := embedtest.Stats(t, key); now.Inputs-calls.Inputs != int64(cp.Embedded) {
		t.Errorf("the server embedded %d texts for the changed page, the report says %d", now.Inputs-calls.Inputs, cp.Embedded)
	}

	resized := crawltest.Config(t, "\nstate_dir: "+cfg.StateDir+"\n"+strings.Replace(yaml, "max_tokens: 100, overlap_tokens: 20", "max_tokens: 150, overlap_tokens: 30", 1))
	rebuilt := crawl(t, resized)
	rp := rebuilt.Total.Passages
	t.Logf("rebuilt: passages %+v; warnings %q", rp, rebuilt.Warnings)
	if rebuilt.Total.Created != 2 || rp.Embedded == 0 || rp.Failed != 0 {
		t.Errorf("new passage size: %+v, passages %+v: want both pages in a new index, their passages embedded again", rebuilt.Total, rp)
	}
	said := false
	for _, w := range rebuilt.Warnings {
		said = said || strings.Contains(w, "rebuilding") && strings.Contains(w, "passages of 150 tokens")
	}
	if !said {
		t.Errorf("the report does not say the index is rebuilt with new passages: %q", rebuilt.Warnings)
	}
	askAll(t, esURL, index, embedURL, srv.URL)
}

// askAll asks every question of the chapters by kNN and by both ways, and
// wants the section that answers it among the first five passages.
func askAll(t *testing.T, esURL, index, embedURL, base string) {
	t.Helper()
	es, err := esclient.New(esclient.Config{Addresses: []string{esURL}})
	if err != nil {
		t.Fatal(err)
	}
	client, err := embed.NewOpenAI(embed.OpenAIOptions{URL: embedURL, Model: embedtest.Model, Dimensions: 384, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(chapterQuestions))
	for i, q := range chapterQuestions {
		texts[i] = q.q
	}
	a, err := client.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range chapterQuestions {
		want := base + "/" + q.page + "#" + q.section
		for _, mode := range []search.Mode{search.KNN, search.Hybrid} {
			found, err := search.Run(context.Background(), es, index, mode, q.q, a.Vectors[i], search.Defaults)
			if err != nil {
				t.Fatal(err)
			}
			var urls []string
			for _, p := range found {
				urls = append(urls, p.URL)
			}
			if !contains(urls, want) {
				t.Errorf("%s %q: %s not among %q", mode, q.q, want, urls)
			}
		}
	}
}

// docQueries runs the example queries of docs/semantic.md against the
// crawled index, the question's vector in place of QUESTION_VECTOR: each
// must be what package search sends (filter aside) and find the section
// that answers the question.
func docQueries(t *testing.T, esURL, index, embedURL, base string) {
	t.Helper()
	raw, err := os.ReadFile("../docs/semantic.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)<!-- query: (\\w+) -->\n```json\n(.*?)\n```").FindAllStringSubmatch(string(raw), -1)
	if len(blocks) != 3 {
		t.Fatalf("docs/semantic.md has %d example queries, want lexical, knn and hybrid", len(blocks))
	}
	const question = "Where must the license of a package be shipped?"
	want := base + "/ch-docs.html#copyright-information"
	client, err := embed.NewOpenAI(embed.OpenAIOptions{URL: embedURL, Model: embedtest.Model, Dimensions: 384, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	a, err := client.Embed(context.Background(), []string{question})
	if err != nil {
		t.Fatal(err)
	}
	vector, err := json.Marshal(a.Vectors[0])
	if err != nil {
		t.Fatal(err)
	}
	es, err := esclient.New(esclient.Config{Addresses: []string{esURL}})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		mode, body := search.Mode(b[1]), b[2]
		var doc map[string]any
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatalf("the %s example of docs/semantic.md is not JSON: %v", mode, err)
		}
		if knn, ok := doc["knn"].(map[string]any); ok {
			delete(knn, "filter") // shown as an example; the code adds one only when asked
		}
		o := search.Defaults
		o.K = 5
		var code map[string]any
		coded, _ := json.Marshal(search.Query(mode, question, []float32{0}, o))
		_ = json.Unmarshal(bytes.Replace(coded, []byte("[0]"), []byte(`"QUESTION_VECTOR"`), 1), &code)
		if !reflect.DeepEqual(doc, code) {
			t.Errorf("the %s example of docs/semantic.md is not what package search sends:\n%s\nit sends\n%s", mode, body, coded)
		}
		req := strings.Replace(body, `"QUESTION_VECTOR"`, string(vector), 1)
		res, err := es.Search(es.Search.WithIndex(index), es.Search.WithBody(strings.NewReader(req)))
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.IsError() {
			t.Fatalf("the %s example of docs/semantic.md: %s: %s", mode, res.Status(), answer)
		}
		if !bytes.Contains(answer, []byte(`"`+want+`"`)) {
			t.Errorf("the %s example of docs/semantic.md does not find %s: %.2000s", mode, want, answer)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// embedFaultEnv is faultSite crawled into a fresh index with embeddings
// from the real model behind a fault proxy.
func embedFaultEnv(t *testing.T) (*faultEnv, *faultproxy.Proxy) {
	t.Helper()
	embedURL := embedtest.URL(t)
	p, err := faultproxy.New(strings.TrimSuffix(embedURL, "/v1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	e := &faultEnv{index: estest.Index(t), site: faultSite(t)}
	e.cfg = crawltest.Config(t, fmt.Sprintf(`
elasticsearch:
  addresses: [%q]
  index: %s
  replicas: 0
  bulk_flush_interval: 50ms
  embeddings: {url: %q, model: %s, dimensions: 384}
allow_private_networks: true
sources:
  - name: s
    start_urls: [%q]
`, estest.URL(t), e.index, p.URL+"/v1", embedtest.Model, e.site.URL+"/"))
	return e, p
}

// wantVectors checks that every passage of every page in the index has
// its vector.
func wantVectors(t *testing.T, e *faultEnv) {
	t.Helper()
	for _, u := range append([]string{"/"}, faultPages...) {
		ps := embedtest.Passages(t, estest.URL(t), e.index, e.url(u))
		if len(ps) == 0 {
			t.Errorf("%s: no passages", u)
		}
		for _, p := range ps {
			if len(p.Vector) != embedtest.Dimensions {
				t.Errorf("%s: a passage without its vector", u)
			}
		}
	}
}

// While the embedding service answers 503 the crawl goes on and its
// documents wait, none indexed without its vectors; one warning names the
// cause, one line says when the service is back, and then every page lands
// with its vectors.
func TestAnEmbeddingOutageMidCrawlIsWarnedOnceAndNoDocumentLandsWithoutVectors(t *testing.T) {
	t.Parallel()
	e, p := embedFaultEnv(t)
	var log syncBuffer
	c := crawltest.NewLogged(t, e.cfg, slog.New(slog.NewTextHandler(&log, nil)))
	estest.SetFault(t, p, faultproxy.Fault{Mode: faultproxy.Status, Status: http.StatusServiceUnavailable})
	run := crawlInBackground(context.Background(), c)
	run.await(t, p, "the writes refused three times", func(s faultproxy.Stats) bool { return s.Faulted >= 3 })
	var count struct {
		Count int `json:"count"`
	}
	getJSONTest(t, estest.URL(t)+"/"+e.index+"-*/_count", &count)
	if n := count.Count; n != 0 {
		t.Errorf("%d documents indexed while their vectors could not be had", n)
	}
	estest.SetFault(t, p, faultproxy.Fault{Mode: faultproxy.Pass})
	report, err := run.wait(t)
	if err != nil {
		t.Fatal(err)
	}
	warned := log.lines("embedding service unavailable: documents wait for their vectors")
	if len(warned) != 1 || !strings.Contains(warned[0], "503 Service Unavailable") || !strings.Contains(warned[0], "level=WARN") {
		t.Errorf("warnings %q, want one WARN naming the 503", warned)
	}
	back := log.lines("embedding service available again")
	if len(back) != 1 || strings.Contains(back[0], "writes_retried=0") {
		t.Errorf("recovery lines %q, want one with the writes retried", back)
	}
	if report.Total.Passages.Failed != 0 || report.Total.Created != len(faultPages)+1 {
		t.Errorf("report %+v", report.Total)
	}
	e.wantEveryPage(t, "after the outage")
	wantVectors(t, e)
}

// A crawl stopped while the embedding service is down leaves the documents
// pending, and the next crawl, the service back, indexes them with their
// vectors.
func TestACrawlStoppedWhileTheEmbeddingServiceIsDownLeavesTheDocumentsPending(t *testing.T) {
	t.Parallel()
	e, p := embedFaultEnv(t)
	c := crawltest.New(t, e.cfg)
	provider.SetTiming(c, provider.Timing{CloseGrace: time.Second})
	estest.SetFault(t, p, faultproxy.Fault{Mode: faultproxy.Status, Status: http.StatusTooManyRequests})
	ctx, cancel := context.WithCancel(context.Background())
	run := crawlInBackground(ctx, c)
	run.await(t, p, "the writes refused", func(s faultproxy.Stats) bool { return s.Faulted >= 3 })
	cancel()
	run.wait(t)
	if err := closeCrawler(t, c); err != nil {
		t.Logf("close: %v", err)
	}
	c = crawltest.New(t, e.cfg)
	if pending := noneLost(t, c, e.site.URL); len(pending) == 0 {
		t.Error("no write left pending by a crawl stopped while no vector could be had")
	}
	estest.SetFault(t, p, faultproxy.Fault{Mode: faultproxy.Pass})
	report, err := c.Crawl(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	e.wantEveryPage(t, "after the next crawl")
	wantVectors(t, e)
	if pending := noneLost(t, c, e.site.URL); len(pending) > 0 {
		t.Errorf("after the next crawl %v still have writes pending (report %+v)", pending, report.Total)
	}
}
