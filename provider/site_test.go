package provider_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/provider"
)

// testSite is a loopback web site whose pages the test sets (and changes
// between crawls), counting every request by path and query.
type testSite struct {
	*httptest.Server
	mu     sync.Mutex
	routes map[string]http.HandlerFunc
	hits   map[string]int
	times  map[string][]time.Time
	heads  map[string][]http.Header
}

func newSite(t *testing.T) *testSite {
	t.Helper()
	return newSiteAt(t, "127.0.0.1")
}

// newSiteAt is a testSite on the loopback address ip. Another one than
// 127.0.0.1, such as 127.0.0.2, is a host of its own by name, not only
// by port, as net/http's redirect rules tell hosts apart.
func newSiteAt(t *testing.T, ip string) *testSite {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		if ip != "127.0.0.1" {
			// Linux answers on all of 127.0.0.0/8; macOS on 127.0.0.1 alone.
			t.Skipf("cannot listen on %s (no second loopback address here): %v", ip, err)
		}
		t.Fatal(err)
	}
	s := &testSite{routes: map[string]http.HandlerFunc{}, hits: map[string]int{},
		times: map[string][]time.Time{}, heads: map[string][]http.Header{}}
	s.Server = httptest.NewUnstartedServer(s)
	s.Listener.Close()
	s.Listener = l
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *testSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	uri := r.URL.RequestURI()
	s.mu.Lock()
	s.hits[uri]++
	s.times[uri] = append(s.times[uri], time.Now())
	s.heads[uri] = append(s.heads[uri], r.Header.Clone())
	h := s.routes[r.URL.Path]
	for p := r.URL.Path; h == nil && p != ""; {
		// A route ending in "/" serves everything below it.
		p = p[:strings.LastIndexByte(p, '/')+1]
		h = s.routes[p]
		p = strings.TrimSuffix(p, "/")
	}
	s.mu.Unlock()
	if h == nil {
		http.NotFound(w, r)
		return
	}
	h(w, r)
}

// handle serves path (any query) with h; a path ending in "/" serves the
// paths below it that have no route of their own.
func (s *testSite) handle(path string, h http.HandlerFunc) {
	s.mu.Lock()
	s.routes[path] = h
	s.mu.Unlock()
}

// html serves path as an HTML page with body inside <body>.
func (s *testSite) html(path, title, body string) {
	s.handle(path, htmlPage(title, body))
}

func htmlPage(title, body string) http.HandlerFunc {
	page := fmt.Sprintf("<!doctype html><html><head><title>%s</title></head><body>%s</body></html>", title, body)
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	}
}

// text serves path with a fixed content type and body.
func (s *testSite) text(path, contentType, body string) {
	s.handle(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		fmt.Fprint(w, body)
	})
}

// status answers path with a bare status code.
func (s *testSite) status(path string, code int) {
	s.handle(path, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) })
}

// redirect answers path with a 302 to location.
func (s *testSite) redirect(path, location string) {
	s.handle(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", location)
		w.WriteHeader(http.StatusFound)
	})
}

// hit is how many requests uri (path and query) received.
func (s *testSite) hit(uri string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[uri]
}

// requested lists every path and query requested, sorted.
func (s *testSite) requested() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for u := range s.hits {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// at is when uri was requested, in order.
func (s *testSite) at(uri string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.times[uri])
}

// headers are the request headers uri received, one per request.
func (s *testSite) headers(uri string) []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.heads[uri])
}

// links renders one <a> per path.
func links(paths ...string) string {
	var b strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&b, `<a href="%s">%s</a> `, p, p)
	}
	return b.String()
}

// testConfig writes and loads a config with the file sink and private
// networks allowed, global keys from global and one source "s" starting at
// start with the keys in src (both written without indentation).
func testConfig(t *testing.T, global, src string, start ...string) (*config.Config, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "docs.ndjson")
	var b strings.Builder
	fmt.Fprintf(&b, "output: {file: %q}\nallow_private_networks: true\n", out)
	b.WriteString(indent(global, ""))
	b.WriteString("sources:\n  - name: s\n")
	quoted := make([]string, len(start))
	for i, u := range start {
		quoted[i] = fmt.Sprintf("%q", u)
	}
	fmt.Fprintf(&b, "    start_urls: [%s]\n", strings.Join(quoted, ", "))
	b.WriteString(indent(src, "    "))
	return crawltest.Config(t, b.String()), out
}

func indent(yaml, prefix string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(strings.TrimSpace(yaml), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		b.WriteString(prefix + line + "\n")
	}
	return b.String()
}

// crawlKeep runs one cycle into the file sink (or Elasticsearch when the
// config names it) and leaves the crawler open, so the test can read the
// state store or run another cycle with again; the file sink's output is
// flushed when Crawl returns. Close the crawler before opening the same
// state_dir again.
func crawlKeep(t *testing.T, cfg *config.Config) (*provider.Crawler, *provider.Report) {
	t.Helper()
	c := onTestClock(t, crawltest.New(t, cfg))
	return c, again(t, c)
}

// crawlTimed is crawlKeep with the crawler's waits shortened to tm.
func crawlTimed(t *testing.T, cfg *config.Config, tm provider.Timing) (*provider.Crawler, *provider.Report) {
	t.Helper()
	c := onTestClock(t, crawltest.New(t, cfg))
	provider.SetTiming(c, tm)
	return c, again(t, c)
}

// again runs another cycle of an open crawler.
func again(t *testing.T, c *provider.Crawler) *provider.Report {
	t.Helper()
	report, err := c.Crawl(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return report
}

// record is the stored state of u, failing the test when u is unknown.
func record(t *testing.T, c *provider.Crawler, u string) frontier.Record {
	t.Helper()
	r, ok, err := c.Frontier().Get(u)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatalf("%s is not in the state store", u)
	}
	return r
}

// unknown fails the test when u is in the state store.
func unknown(t *testing.T, c *provider.Crawler, u string) {
	t.Helper()
	r, ok, err := c.Frontier().Get(u)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Errorf("%s is in the state store (%s %s), want it never queued", u, r.State, r.Reason)
	}
}

// wantState checks a URL's state and reason.
func wantState(t *testing.T, c *provider.Crawler, u string, state frontier.State, reason string) frontier.Record {
	t.Helper()
	r := record(t, c, u)
	if r.State != state || r.Reason != reason {
		t.Errorf("%s is %s %q, want %s %q", u, r.State, r.Reason, state, reason)
	}
	return r
}

// bulkAction is one action of the file sink's _bulk NDJSON.
type bulkAction struct {
	op  string // index, update or delete
	id  string
	doc *docfields.Document
	// fields is an update's partial document.
	fields json.RawMessage
}

// apply returns the document the index holds after a, given the one it
// held before (nil for none).
func (a bulkAction) apply(t *testing.T, before *docfields.Document) *docfields.Document {
	t.Helper()
	switch a.op {
	case "index":
		return a.doc
	case "delete":
		return nil
	}
	if before == nil {
		t.Fatalf("update of %s, which the index does not hold", a.id)
	}
	whole, err := json.Marshal(before)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(whole, &m); err != nil {
		t.Fatal(err)
	}
	var partial map[string]json.RawMessage
	if err := json.Unmarshal(a.fields, &partial); err != nil {
		t.Fatalf("update of %s: %v", a.id, err)
	}
	maps.Copy(m, partial)
	if whole, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	after := new(docfields.Document)
	if err := json.Unmarshal(whole, after); err != nil {
		t.Fatal(err)
	}
	return after
}

func readBulk(t *testing.T, path string) []bulkAction {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var out []bulkAction
	for sc.Scan() {
		var action map[string]struct {
			ID string `json:"_id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &action); err != nil {
			t.Fatalf("action line: %v: %s", err, sc.Text())
		}
		for op, meta := range action {
			a := bulkAction{op: op, id: meta.ID}
			switch op {
			case "index":
				if !sc.Scan() {
					t.Fatal("index action without a source line")
				}
				a.doc = new(docfields.Document)
				if err := json.Unmarshal(sc.Bytes(), a.doc); err != nil {
					t.Fatalf("source line: %v", err)
				}
			case "update":
				if !sc.Scan() {
					t.Fatal("update action without a source line")
				}
				var body struct {
					Doc json.RawMessage `json:"doc"`
				}
				if err := json.Unmarshal(sc.Bytes(), &body); err != nil || body.Doc == nil {
					t.Fatalf("update source line %s: %v", sc.Bytes(), err)
				}
				a.fields = body.Doc
			}
			out = append(out, a)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// indexedURLs lists the doc_url of every index action, sorted.
func indexedURLs(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, a := range readBulk(t, path) {
		if a.op == "index" {
			out = append(out, a.doc.URL)
		}
	}
	slices.Sort(out)
	return out
}

// deletedIDs lists the _id of every delete action, sorted.
func deletedIDs(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, a := range readBulk(t, path) {
		if a.op == "delete" {
			out = append(out, a.id)
		}
	}
	slices.Sort(out)
	return out
}

func sortedURLs(base string, paths ...string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = base + p
	}
	slices.Sort(out)
	return out
}

// exampleFor is the detail of the report's first example for reason.
func exampleFor(r *provider.Report, reason string) string {
	for _, e := range r.Examples {
		if e.Reason == reason {
			return e.Detail
		}
	}
	return ""
}
