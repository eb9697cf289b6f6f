package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
)

// stateStores are the two stores of a crawl's state, as the lines a
// configuration gives them: the embedded one under state_dir, and the one
// in Elasticsearch that a cluster of processes shares (its indices named
// after index). A test that ranges over them says the same of both.
var stateStores = []struct {
	name string
	yaml func(index string) string
}{
	{"embedded", func(string) string { return "" }},
	{"elasticsearch", func(index string) string {
		return fmt.Sprintf("cluster: {state_index: %s-state, node_name: solo, partitions: 4}\n", index)
	}},
}

// signalCases are the commands stopped by a signal, and how each exits: an
// interrupted crawl did not complete; a stopped service did what it was
// asked.
var signalCases = []struct {
	command string
	sig     syscall.Signal
	exit    int
}{
	{"crawl", syscall.SIGTERM, exitFailed},
	{"run", syscall.SIGINT, exitOK},
}

// holdingSite serves a start page linking pages that are never answered:
// each is held until its client gives up. It counts the page requests
// that began after the test said it signalled the crawler.
type holdingSite struct {
	srv     *httptest.Server
	arrived chan struct{} // one send per page request
	mu      sync.Mutex
	after   int  // page requests begun after the signal
	sent    bool // the signal was sent
}

func newHoldingSite(t *testing.T, pages int) *holdingSite {
	s := &holdingSite{arrived: make(chan struct{}, pages)}
	release := make(chan struct{})
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/":
			w.Header().Set("Content-Type", "text/html")
			for i := range pages {
				fmt.Fprintf(w, `<a href="/p%d">p%d</a> `, i, i)
			}
		default:
			s.mu.Lock()
			if s.sent {
				s.after++
			}
			s.mu.Unlock()
			s.arrived <- struct{}{}
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}
	}))
	t.Cleanup(s.srv.Close)
	t.Cleanup(func() { close(release) }) // before Close, which waits for the handlers
	return s
}

// signalled notes that the signal is sent: a page request from now on is
// one the crawler made after it.
func (s *holdingSite) signalled() {
	s.mu.Lock()
	s.sent = true
	s.mu.Unlock()
}

func (s *holdingSite) requestsAfter() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.after
}

// A signal ends crawl and run whatever store holds the state, with every
// worker in a request: the requests are given up, no other is made, and
// the process exits. The shared store once handed a worker its URL straight
// back after the worker released it on the signal, for ever.
func TestASignalStopsCrawlAndRunAtOnceWhicheverStoreHoldsTheState(t *testing.T) {
	if testing.Short() {
		t.Skip("runs crawlspace in child processes")
	}
	for _, store := range stateStores {
		for _, tc := range signalCases {
			t.Run(store.name+"/"+tc.command, func(t *testing.T) {
				t.Parallel()
				const workers = 4
				site := newHoldingSite(t, 40)
				index := estest.Index(t)
				path := crawltest.WriteConfig(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0, bulk_flush_interval: 50ms}
%sallow_private_networks: true
fetch: {concurrency: %d}
sources:
  - name: site
    start_urls: [%q]
    politeness: {max_parallel_per_host: %d}
`, estest.URL(t), index, store.yaml(index), workers, site.srv.URL+"/", workers))
				p := startProc(t, tc.command, tc.command, "-config", path)
				for range workers {
					select {
					case <-site.arrived:
					case <-p.done:
						t.Fatalf("crawlspace %s exited %d before its workers were all in a request:%s", tc.command, p.exitCode(), outputs(p))
					}
				}
				site.signalled()
				sent := time.Now()
				if err := p.cmd.Process.Signal(tc.sig); err != nil {
					t.Fatal(err)
				}
				awaitExit(t, func() string { return fmt.Sprintf("%s sent %s ago", tc.sig, time.Since(sent).Round(time.Second)) }, p)
				t.Logf("crawlspace %s exited %s after %s", tc.command, time.Since(sent).Round(time.Millisecond), tc.sig)
				if code := p.exitCode(); code != tc.exit {
					t.Errorf("crawlspace %s exited %d after %s, want %d:%s", tc.command, code, tc.sig, tc.exit, outputs(p))
				}
				if n := site.requestsAfter(); n > 0 {
					t.Errorf("crawlspace %s made %d page requests after %s:%s", tc.command, n, tc.sig, outputs(p))
				}
				if store.name == "elasticsearch" {
					if held := heldBy(t, index+"-state", "solo"); len(held) > 0 {
						t.Errorf("after its stop, the process still holds %s:%s", strings.Join(held, ", "), outputs(p))
					}
				}
			})
		}
	}
}

// heldBy lists the leases and the member document of the shared store
// prefix that name node: a process that stopped cleanly left none.
func heldBy(t *testing.T, prefix, node string) []string {
	t.Helper()
	return searchIDs(t, prefix+"-meta", fmt.Sprintf(`{"query": {"term": {"holder": %q}}}`, node))
}
