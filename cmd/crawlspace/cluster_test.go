package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
)

// clusterSite is one host of a site spread over many: pages that link to
// their neighbours on the host and to the same page on the next host. It
// logs every page request (when, and from which process: the User-Agent)
// and the most requests it ever served at once.
type clusterSite struct {
	srv     *httptest.Server
	mu      sync.Mutex
	fetches map[string]int
	log     map[string][]request
	now     atomic.Int32
	peak    atomic.Int32
}

// request is one page request a site served: when it began and ended,
// and the User-Agent that made it.
type request struct {
	start, end time.Time
	agent      string
}

// history tells who fetched path when, for a failure message.
func (s *clusterSite) history(path string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for i, r := range s.log[path] {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %s-%s", r.agent, r.start.Format("15:04:05.000"), r.end.Format("15:04:05.000"))
	}
	return b.String()
}

const (
	clusterHosts = 6
	clusterPages = 40 // per host
)

// siteHold holds the sites' page requests past the first n until the
// test releases them: the test acts mid-crawl, with requests in flight,
// however fast the machine crawls.
type siteHold struct {
	n       int64
	served  atomic.Int64
	reached chan struct{} // closed at the nth request
	release chan struct{}
	once    sync.Once
}

// newSiteHold holds the requests past the first n until Release or the
// end of the test.
func newSiteHold(t *testing.T, n int) *siteHold {
	h := &siteHold{n: int64(n), reached: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(h.Release)
	return h
}

// pass lets a request through, or holds it once n have passed.
func (h *siteHold) pass() {
	switch n := h.served.Add(1); {
	case n == h.n:
		close(h.reached)
	case n > h.n:
		<-h.release
	}
}

// Release lets every request through from now on.
func (h *siteHold) Release() { h.once.Do(func() { close(h.release) }) }

// await waits until n requests have passed, failing as awaitExit does
// shortly before go test's -timeout.
func (h *siteHold) await(t *testing.T, state func() string, ps ...*proc) {
	t.Helper()
	select {
	case <-h.reached:
	case <-nearDeadline(t):
		hung(t, fmt.Sprintf("the sites had not served %d page requests", h.n), state, ps)
	}
}

// newClusterSites starts the hosts of a crawl; hold, when not nil, holds
// their page requests.
func newClusterSites(t *testing.T, hosts, pages int, hold *siteHold) []*clusterSite {
	t.Helper()
	sites := make([]*clusterSite, hosts)
	for i := range sites {
		sites[i] = &clusterSite{fetches: map[string]int{}, log: map[string][]request{}}
	}
	for i, s := range sites {
		next := sites[(i+1)%hosts]
		s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/robots.txt" {
				http.NotFound(w, r)
				return
			}
			if n := s.now.Add(1); n > s.peak.Load() {
				s.peak.Store(n) // racy max, but only ever raised by the request that saw n
			}
			// Logged as it begins, so that a request under way when its
			// process is killed is already known to be that process's.
			s.mu.Lock()
			s.fetches[r.URL.Path]++
			n := len(s.log[r.URL.Path])
			s.log[r.URL.Path] = append(s.log[r.URL.Path], request{start: time.Now(), agent: r.UserAgent()})
			s.mu.Unlock()
			defer func() {
				s.mu.Lock()
				s.log[r.URL.Path][n].end = time.Now()
				s.mu.Unlock()
				s.now.Add(-1)
			}()
			var p int
			if _, err := fmt.Sscanf(r.URL.Path, "/p%d.html", &p); err != nil && r.URL.Path != "/" {
				http.NotFound(w, r)
				return
			}
			if hold != nil {
				hold.pass()
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, "<html><head><title>%s page %d</title></head><body><p>Page %d of host %d.</p>", r.Host, p, p, i)
			for _, q := range []int{2*p + 1, 2*p + 2} {
				if q < pages {
					fmt.Fprintf(w, `<a href="%s">p%d</a> `, pagePath(q), q)
				}
			}
			fmt.Fprintf(w, `<a href="%s%s">next host</a></body></html>`, next.srv.URL, pagePath(p))
		}))
		t.Cleanup(s.srv.Close)
	}
	return sites
}

func pagePath(p int) string {
	if p == 0 {
		return "/"
	}
	return fmt.Sprintf("/p%d.html", p)
}

// pages are the paths of the host's pages: / is page 0.
func (s *clusterSite) fetched() (pages, total, most int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.fetches {
		pages++
		total += n
		most = max(most, n)
	}
	return
}

// sharedCrawlConfig writes the configuration of process node of a crawl of
// the hosts at starts shared through the state index name-state, the
// documents in name: 12 partitions, lease_ttl 10s, four requests at a time
// per process, the source's politeness as given (a YAML flow mapping).
// Each process names itself in its User-Agent (the product token, which
// robots.txt and the config's fingerprint read, is the same). stateES,
// when set, is the state's own cluster.elasticsearch address.
func sharedCrawlConfig(t *testing.T, node, name, stateES, politeness string, starts []string) string {
	t.Helper()
	stateConn := ""
	if stateES != "" {
		stateConn = fmt.Sprintf(", elasticsearch: {addresses: [%q], replicas: 0}", stateES)
	}
	quoted := make([]string, len(starts))
	for i, u := range starts {
		quoted[i] = fmt.Sprintf("%q", u)
	}
	return crawltest.WriteConfig(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0, bulk_flush_interval: 50ms}
cluster: {state_index: %s-state, node_name: %s, partitions: 12, lease_ttl: 10s%s}
user_agent: crawlspace/%s
allow_private_networks: true
fetch: {concurrency: 4}
sources:
  - name: hosts
    start_urls: [%s]
    politeness: %s
`, estest.URL(t), name, name, node, stateConn, node, strings.Join(quoted, ", "), politeness))
}

// hit is one document a search found.
type hit struct {
	ID     string          `json:"_id"`
	Source json.RawMessage `json:"_source"`
}

// search returns the documents of index that query (a search body) finds.
func search(t *testing.T, index, query string) []hit {
	t.Helper()
	es := estest.Client(t)
	resp, err := es.Search(es.Search.WithIndex(index), es.Search.WithBody(strings.NewReader(query)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var found struct {
		Hits struct{ Hits []hit } `json:"hits"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&found); err != nil {
		t.Fatal(err)
	}
	return found.Hits.Hits
}

// searchIDs returns the ids of the documents of index that query finds.
func searchIDs(t *testing.T, index, query string) []string {
	t.Helper()
	var ids []string
	for _, h := range search(t, index, query) {
		ids = append(ids, h.ID)
	}
	return ids
}

func TestProcessesSharingACrawlFetchEachPageOnceOrTwiceWhenOneIsKilledAndAnotherJoinsLate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs crawlspace in child processes")
	}
	t.Parallel()
	// The kill lands mid-crawl: the sites hold their requests past a
	// third of the pages until b is killed, some of them b's.
	const all = clusterHosts * clusterPages
	hold := newSiteHold(t, all/3)
	sites := newClusterSites(t, clusterHosts, clusterPages, hold)
	name := estest.Index(t)
	var starts []string
	for _, s := range sites {
		starts = append(starts, s.srv.URL+"/")
	}
	// A lease round must be answered within half the TTL (docs/cluster.md,
	// fencing). On a loaded CI machine the node takes seconds to answer, so
	// 3 s (the least allowed) made live processes lose their partitions;
	// 10 s only makes the takeover after the kill wait longer.
	config := func(node string) string {
		return sharedCrawlConfig(t, node, name, "", "{max_parallel_per_host: 1}", starts)
	}
	fetchedAll := func() (pages int) {
		for _, s := range sites {
			p, _, _ := s.fetched()
			pages += p
		}
		return
	}
	start := func(node string) *proc {
		return startProc(t, node, "crawl", "-config", config(node))
	}
	a, b, c := start("a"), start("b"), start("c")
	procs := []*proc{a, b, c}
	hold.await(t, func() string { return fmt.Sprintf("%d of %d pages fetched", fetchedAll(), all) }, procs...)
	b.cmd.Process.Signal(syscall.SIGKILL)
	<-b.done
	killed := time.Now()
	killedAt := fetchedAll()
	hold.Release()
	// What may be fetched again: the pages b requested whose outcome it
	// had not stored (in flight at the kill), and those whose document it
	// had not seen acknowledged, in whichever partition they are now.
	var byB []string
	for _, s := range sites {
		s.mu.Lock()
		for p, log := range s.log {
			if log[len(log)-1].agent == "crawlspace/b" {
				byB = append(byB, s.srv.URL+p)
			}
		}
		s.mu.Unlock()
	}
	mayRepeat := pendingOf(t, name+"-state", byB)
	d := start("d")
	procs = append(procs, d)
	// No limit of its own: the processes get until shortly before go
	// test's -timeout (awaitExit).
	awaitExit(t, func() string { return fmt.Sprintf("%d of %d pages fetched", fetchedAll(), all) }, a, c, d)
	for _, p := range []*proc{a, c, d} {
		if code := p.exitCode(); code != exitOK {
			t.Errorf("process %s exited %d\n%s", p.name, code, p.out)
		}
	}
	if killedAt >= all {
		t.Fatalf("the crawl was over (%d pages) before the kill: the test proves nothing", killedAt)
	}

	refetches := 0
	for i, s := range sites {
		pages, total, _ := s.fetched()
		if pages != clusterPages {
			t.Errorf("host %d: %d pages fetched, want %d", i, pages, clusterPages)
		}
		if peak := s.peak.Load(); peak > 1 {
			t.Errorf("host %d served %d requests at once, above its max_parallel_per_host of 1", i, peak)
		}
		refetches += total - pages
		s.mu.Lock()
		repeated := map[string]int{}
		for p, n := range s.fetches {
			if n > 2 || n > 1 && !mayRepeat[s.srv.URL+p] {
				repeated[p] = n
			}
		}
		s.mu.Unlock()
		for p, n := range repeated {
			t.Errorf("%s%s fetched %d times (by %s); b was killed at %s: at most twice, and twice only if in flight or unacknowledged at the kill",
				s.srv.URL, p, n, s.history(p), killed.Format("15:04:05.000"))
		}
	}
	t.Logf("%d pages, %d fetched before the kill, %d in flight or unacknowledged then; %d fetched again", all, killedAt, len(mayRepeat), refetches)
	if t.Failed() {
		t.Logf("the processes' logs:%s", outputs(procs...))
	}

	es := estest.Client(t)
	if _, err := es.Indices.Refresh(es.Indices.Refresh.WithIndex(name)); err != nil {
		t.Fatal(err)
	}
	resp, err := es.Count(es.Count.WithIndex(name))
	if err != nil {
		t.Fatal(err)
	}
	var count struct{ Count int }
	json.NewDecoder(resp.Body).Decode(&count)
	resp.Body.Close()
	if count.Count != all {
		t.Errorf("the index holds %d documents, want each of the %d pages once", count.Count, all)
	}

	st := runCommand(t, "status", "-config", config("status"))
	if st.code != exitOK || !strings.Contains(st.stdout, fmt.Sprintf("hosts: %d URL(s)", all)) ||
		!strings.Contains(st.stdout, fmt.Sprintf("fetched    %d", all)) {
		t.Errorf("status does not agree with the index (%d pages fetched): %s", all, st)
	}
}

// pendingOf returns those of urls that may be fetched again after their
// fetcher's kill: still Waiting (their outcome not stored) or with a
// document write not acknowledged.
func pendingOf(t *testing.T, prefix string, urls []string) map[string]bool {
	t.Helper()
	es := estest.Client(t)
	if _, err := es.Indices.Refresh(es.Indices.Refresh.WithIndex(prefix + "-urls")); err != nil {
		t.Fatal(err)
	}
	list, _ := json.Marshal(urls)
	out := map[string]bool{}
	for _, h := range search(t, prefix+"-urls", fmt.Sprintf(
		`{"size": 10000, "_source": ["url"], "query": {"bool": {"filter": [{"terms": {"url": %s}}],
		"should": [{"term": {"state": 0}}, {"term": {"pending": "index"}}], "minimum_should_match": 1}}}`, list)) {
		var rec struct{ URL string }
		if err := json.Unmarshal(h.Source, &rec); err != nil {
			t.Fatal(err)
		}
		out[rec.URL] = true
	}
	return out
}
