package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
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
// logs every page request and the most requests it ever served at once.
type clusterSite struct {
	srv     *httptest.Server
	mu      sync.Mutex
	fetches map[string]int
	now     atomic.Int32
	peak    atomic.Int32
}

const (
	clusterHosts = 6
	clusterPages = 40 // per host
)

func newClusterSites(t *testing.T, hosts, pages int, delay time.Duration) []*clusterSite {
	t.Helper()
	sites := make([]*clusterSite, hosts)
	for i := range sites {
		sites[i] = &clusterSite{fetches: map[string]int{}}
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
			defer s.now.Add(-1)
			s.mu.Lock()
			s.fetches[r.URL.Path]++
			s.mu.Unlock()
			var p int
			if _, err := fmt.Sscanf(r.URL.Path, "/p%d.html", &p); err != nil && r.URL.Path != "/" {
				http.NotFound(w, r)
				return
			}
			time.Sleep(delay)
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

// startCommand starts crawlspace with args in a child process.
func startCommand(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	env, _ := json.Marshal(args)
	cmd.Env = append(os.Environ(), commandEnv+"="+string(env))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, &out
}

func TestProcessesSharingACrawlFetchEachPageOnceOrTwiceWhenOneIsKilledAndAnotherJoinsLate(t *testing.T) {
	t.Parallel()
	// Slow enough that a kill lands mid-crawl.
	sites := newClusterSites(t, clusterHosts, clusterPages, 30*time.Millisecond)
	name := estest.Index(t)
	var starts []string
	for _, s := range sites {
		starts = append(starts, fmt.Sprintf("%q", s.srv.URL+"/"))
	}
	const concurrency = 4 // requests in flight per process
	config := func(node string) string {
		return crawltest.WriteConfig(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0, bulk_flush_interval: 50ms}
cluster: {state_index: %s-state, node_name: %s, partitions: 12, lease_ttl: 3s}
allow_private_networks: true
fetch: {concurrency: %d}
sources:
  - name: hosts
    start_urls: [%s]
    politeness: {max_parallel_per_host: 1}
`, estest.URL(t), name, name, node, concurrency, strings.Join(starts, ", ")))
	}
	fetchedAll := func() (pages int) {
		for _, s := range sites {
			p, _, _ := s.fetched()
			pages += p
		}
		return
	}
	a, outA := startCommand(t, "crawl", "-config", config("a"))
	b, outB := startCommand(t, "crawl", "-config", config("b"))
	c, outC := startCommand(t, "crawl", "-config", config("c"))
	const all = clusterHosts * clusterPages
	for fetchedAll() < all/3 {
		time.Sleep(20 * time.Millisecond)
	}
	b.Process.Signal(syscall.SIGKILL)
	b.Wait()
	killedAt := fetchedAll()
	// What may be fetched again: the pages requested whose outcome is not
	// stored (in flight at the kill) and those of the killed process's
	// partitions whose document it had not seen acknowledged.
	var requested []string
	for _, s := range sites {
		s.mu.Lock()
		for p := range s.fetches {
			requested = append(requested, s.srv.URL+p)
		}
		s.mu.Unlock()
	}
	mayRepeat := pendingOf(t, name+"-state", "b", requested)
	d, outD := startCommand(t, "crawl", "-config", config("d"))
	for _, p := range []struct {
		cmd  *exec.Cmd
		out  *bytes.Buffer
		name string
	}{{a, outA, "a"}, {c, outC, "c"}, {d, outD, "d"}} {
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("process %s: %v\n%s", p.name, err, p.out)
		}
	}
	_ = outB
	if killedAt >= all {
		t.Fatalf("the crawl was over (%d pages) before the kill: the test proves nothing", killedAt)
	}

	refetches := 0
	for i, s := range sites {
		pages, total, most := s.fetched()
		if pages != clusterPages {
			t.Errorf("host %d: %d pages fetched, want %d", i, pages, clusterPages)
		}
		if most > 2 {
			t.Errorf("host %d: a page fetched %d times, want at most twice", i, most)
		}
		if peak := s.peak.Load(); peak > 1 {
			t.Errorf("host %d served %d requests at once, above its max_parallel_per_host of 1", i, peak)
		}
		refetches += total - pages
		s.mu.Lock()
		for p, n := range s.fetches {
			if n > 1 && !mayRepeat[s.srv.URL+p] {
				t.Errorf("%s%s fetched %d times, though it was neither in flight nor unacknowledged at the kill", s.srv.URL, p, n)
			}
		}
		s.mu.Unlock()
	}
	t.Logf("%d pages, %d fetched before the kill, %d in flight or unacknowledged then; %d fetched again", all, killedAt, len(mayRepeat), refetches)

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

// pendingOf returns the URLs that may be fetched again after node's kill:
// those of requested still Waiting (their outcome not stored) and those of
// node's partitions whose document write is not acknowledged.
func pendingOf(t *testing.T, prefix, node string, requested []string) map[string]bool {
	t.Helper()
	es := estest.Client(t)
	if _, err := es.Indices.Refresh(es.Indices.Refresh.WithIndex(prefix + "-urls")); err != nil {
		t.Fatal(err)
	}
	search := func(index, body string, out any) {
		resp, err := es.Search(es.Search.WithIndex(index), es.Search.WithBody(strings.NewReader(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	var leases struct {
		Hits struct {
			Hits []struct {
				Source struct{ Part int } `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	search(prefix+"-meta", fmt.Sprintf(`{"size": 10000, "query": {"bool": {"filter": [{"term": {"type": "lease"}}, {"term": {"holder": %q}}]}}}`, node), &leases)
	parts := []int{}
	for _, h := range leases.Hits.Hits {
		parts = append(parts, h.Source.Part)
	}
	urls, _ := json.Marshal(requested)
	ps, _ := json.Marshal(parts)
	var found struct {
		Hits struct {
			Hits []struct {
				Source struct{ URL string } `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	search(prefix+"-urls", fmt.Sprintf(`{"size": 10000, "_source": ["url"], "query": {"bool": {"should": [
		{"bool": {"filter": [{"term": {"state": 0}}, {"terms": {"url": %s}}]}},
		{"bool": {"filter": [{"term": {"pending": "index"}}, {"terms": {"part": %s}}]}}]}}}`, urls, ps), &found)
	out := map[string]bool{}
	for _, h := range found.Hits.Hits {
		out[h.Source.URL] = true
	}
	return out
}
