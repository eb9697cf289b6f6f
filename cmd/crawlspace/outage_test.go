package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/faultproxy"
)

// runCluster is a crawl of the six loopback hosts of newClusterSites
// shared by crawlspace processes, the documents on the node and the state
// reached through a fault proxy in front of the same node.
type runCluster struct {
	sites []*clusterSite
	pages int    // per host
	name  string // the index's alias; the state is name-state
	proxy *faultproxy.Proxy
	procs []*proc
}

func newRunCluster(t *testing.T, pages int, hold *siteHold) *runCluster {
	return &runCluster{sites: newClusterSites(t, clusterHosts, pages, hold), pages: pages, name: estest.Index(t), proxy: estest.Proxy(t)}
}

// start starts crawlspace command as the process node.
func (rc *runCluster) start(t *testing.T, command, node string) *proc {
	var starts []string
	for _, s := range rc.sites {
		starts = append(starts, s.srv.URL+"/")
	}
	path := sharedCrawlConfig(t, node, rc.name, rc.proxy.URL, "{max_parallel_per_host: 1}", starts)
	p := startProc(t, node, command, "-config", path)
	rc.procs = append(rc.procs, p)
	return p
}

// fetched counts the pages fetched at least once, and the requests.
func (rc *runCluster) fetched() (pages, requests int) {
	for _, s := range rc.sites {
		p, r, _ := s.fetched()
		pages, requests = pages+p, requests+r
	}
	return
}

// requestsOf is how often each page was requested, by URL.
func (rc *runCluster) requestsOf() map[string]int {
	out := map[string]int{}
	for _, s := range rc.sites {
		s.mu.Lock()
		for p, n := range s.fetches {
			out[s.srv.URL+p] = n
		}
		s.mu.Unlock()
	}
	return out
}

// searchable counts the documents searches see: those of the index the
// alias names, 0 while there is none.
func (rc *runCluster) searchable(t *testing.T) int {
	es := estest.Client(t)
	resp, err := es.Count(es.Count.WithIndex(rc.name))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == 404 {
		return 0
	}
	var count struct{ Count int }
	if err := json.NewDecoder(resp.Body).Decode(&count); err != nil {
		t.Fatal(err)
	}
	return count.Count
}

func (rc *runCluster) state(t *testing.T) func() string {
	return func() string {
		pages, requests := rc.fetched()
		return fmt.Sprintf("%d of %d pages fetched, %d requests, %d documents searchable", pages, clusterHosts*rc.pages, requests, rc.searchable(t))
	}
}

// repeats says how many pages were requested more than once, and the
// most requests of one page.
func (rc *runCluster) repeats() string {
	again, most := 0, 0
	for _, n := range rc.requestsOf() {
		if n > 1 {
			again++
		}
		most = max(most, n)
	}
	return fmt.Sprintf("%d pages requested more than once, at most %d times", again, most)
}

// linesWith are the lines of the processes' output holding any of subs.
func linesWith(subs []string, ps ...*proc) string {
	var sb strings.Builder
	for _, p := range ps {
		for line := range strings.Lines(p.out.String()) {
			for _, sub := range subs {
				if strings.Contains(line, sub) {
					fmt.Fprintf(&sb, "\n%s: %s", p.name, strings.TrimSpace(line))
					break
				}
			}
		}
	}
	return sb.String()
}

// stop ends the run processes with SIGTERM and checks they exit 0.
func (rc *runCluster) stop(t *testing.T, ps ...*proc) {
	for _, p := range ps {
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	awaitExit(t, func() string { return "SIGTERM sent" }, ps...)
	for _, p := range ps {
		if code := p.exitCode(); code != exitOK {
			t.Errorf("run %s exited %d after SIGTERM:%s", p.name, code, outputs(p))
		}
	}
}

// Two run processes share a crawl whose state node is unreachable mid-crawl
// for longer than outcomes are retried: each cycle fails, and once the node
// answers again every page is fetched and indexed and the index published,
// not after discovery_interval (an hour): the failed cycle is tried again
// within a minute.
func TestTwoRunProcessesFinishTheCrawlAfterAnOutageOfTheStateNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs crawlspace in child processes")
	}
	t.Parallel()
	const all = clusterHosts * clusterPages
	// The outage begins mid-crawl: the sites hold their requests past a
	// quarter of the pages until the state node is unreachable.
	hold := newSiteHold(t, all/4)
	rc := newRunCluster(t, clusterPages, hold)
	a, b := rc.start(t, "run", "a"), rc.start(t, "run", "b")
	hold.await(t, rc.state(t), a, b)
	estest.SetFault(t, rc.proxy, faultproxy.Fault{Mode: faultproxy.Refuse})
	hold.Release()
	outage := time.Now()
	pagesAtOutage, _ := rc.fetched()
	// Until each process's cycle has failed on the store: past the outcomes'
	// retries for one holding leases.
	waitUntil(t, func() bool {
		return strings.Contains(a.out.String(), "cycle failed") && strings.Contains(b.out.String(), "cycle failed")
	}, rc.state(t), a, b)
	estest.SetFault(t, rc.proxy, faultproxy.Fault{Mode: faultproxy.Pass})
	lasted := time.Since(outage)
	waitUntil(t, func() bool { return rc.searchable(t) == all }, rc.state(t), a, b)
	pages, requests := rc.fetched()
	t.Logf("outage of %s at %d pages; after it, %d pages fetched in %d requests (%s), all %d searchable %s after the outage began",
		lasted.Round(time.Millisecond), pagesAtOutage, pages, requests, rc.repeats(), all, time.Since(outage).Round(time.Millisecond))
	t.Logf("what the processes said of their cycles:%s", linesWith([]string{"cycle failed", "next cycle", "began a cycle"}, a, b))
	if pages != all {
		t.Errorf("%d pages fetched, want %d", pages, all)
	}
	for _, p := range []*proc{a, b} {
		if !strings.Contains(p.out.String(), "the cycle is tried again") {
			t.Errorf("run %s did not say its failed cycle is tried again:%s", p.name, outputs(p))
		}
	}
	rc.stop(t, a, b)
}

// A reindex beside two run processes that finished their cycle runs to its
// end: the run processes join the cycle it begins and fetch their
// partitions' pages again, rather than wait for their next discovery.
func TestReindexBesideRunProcessesFetchesTheWholeCrawlAgainAndExits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs crawlspace in child processes")
	}
	t.Parallel()
	const pages = 10 // per host
	rc := newRunCluster(t, pages, nil)
	a, b := rc.start(t, "run", "a"), rc.start(t, "run", "b")
	const all = clusterHosts * pages
	waitUntil(t, func() bool {
		return rc.searchable(t) == all && strings.Count(a.out.String(), `msg="next cycle"`) > 0 &&
			strings.Count(b.out.String(), `msg="next cycle"`) > 0
	}, rc.state(t), a, b)
	before := rc.requestsOf()
	began := time.Now()
	c := rc.start(t, "reindex", "c")
	awaitExit(t, rc.state(t), c)
	t.Logf("reindex took %s; what the processes said of their cycles:%s", time.Since(began).Round(time.Millisecond),
		linesWith([]string{"cycle failed", "next cycle", "began a cycle", "crawl finished"}, a, b, c))
	if code := c.exitCode(); code != exitOK {
		t.Errorf("reindex exited %d:%s", code, outputs(c))
	}
	again := 0
	for u, n := range rc.requestsOf() {
		if n > before[u] {
			again++
		}
	}
	if again != all {
		t.Errorf("reindex fetched %d of the %d pages again, want all:%s", again, all, outputs(a, b, c))
	}
	rc.stop(t, a, b)
}

// The waits between attempts at a cycle the shared state store failed:
// 2 s, twice as long each time up to a minute, until the failures have
// lasted five minutes; a cycle that gets through starts the count again.
func TestRetriesOfACycleTheStateStoreFailedDoubleUpToAMinuteAndEndAfterFiveMinutes(t *testing.T) {
	var o storeOutage
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var waits []time.Duration
	for {
		wait, failing := o.failed(true, now)
		if !failing {
			t.Fatal("a failure of the store is not failing")
		}
		if wait < 0 {
			break
		}
		waits = append(waits, wait)
		now = now.Add(wait)
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second,
		time.Minute, time.Minute, time.Minute, time.Minute}
	if fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Errorf("waits %v, want %v", waits, want)
	}
	if got := o.lasted(now); got < giveUp {
		t.Errorf("gave up after %s, want %s", got, giveUp)
	}
	if _, failing := o.failed(false, now); failing {
		t.Error("a cycle the store did not fail is failing")
	}
	if wait, _ := o.failed(true, now); wait != firstRetry {
		t.Errorf("the first wait after a cycle got through is %s, want %s", wait, firstRetry)
	}
}
