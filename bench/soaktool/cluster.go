package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/crawlspace/crawlspace/internal/faultproxy"
)

// The cluster of two: beside the service, two `crawlspace run` processes share a crawl whose
// state is in Elasticsearch, reached through a fault proxy of its own (their documents go to the
// node directly). Mid-crawl the proxy refuses connections until each process has said its
// cycle failed, then passes again. Their discovery_interval is the default hour: only a failed
// cycle tried again finishes the crawl within the soak.
const (
	clusterHosts = 6
	clusterPages = 40 // per host
	clusterDelay = 100 * time.Millisecond
	// The processes fail their cycle once outcomes have been retried for about 15 s; the outage
	// ends when both have, or after clusterOutageMax.
	clusterOutageMax = 3 * time.Minute
	// How long the crawl may take to begin (a quarter of its pages), and to finish after the outage.
	clusterWaitMax = 5 * time.Minute
)

// clusterNodes are the processes' cluster.node_name.
var clusterNodes = []string{"a", "b"}

// cluster is the two processes, their hosts and the state's proxy.
type cluster struct {
	hosts []*host
	proxy *faultproxy.Proxy
	node  string // the node's base URL
	alias string
	procs []*service

	done chan struct{} // closed once run has returned
	out  clusterOutcome
}

// clusterOutcome is what the cluster's schedule saw.
type clusterOutcome struct {
	OutageStart, OutageEnd time.Time
	PagesAtOutage          int
	Searchable             int // documents the alias held when the wait ended
	SearchableAt           time.Time
	Problem                string // why the schedule stopped short; "" when it ran through
}

// startCluster serves the cluster's hosts and the state's proxy and starts the two processes,
// each with its config, log and report in a directory of its own under opts.Dir. close ends
// what it started, also after an error.
func startCluster(ctx context.Context, opts Options) (*cluster, error) {
	cl := &cluster{node: opts.ES, alias: opts.Index + "-cluster", done: make(chan struct{})}
	lns := make([]net.Listener, clusterHosts)
	urls := make([]string, clusterHosts)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			for _, l := range lns[:i] {
				l.Close()
			}
			return cl, err
		}
		lns[i], urls[i] = ln, "http://"+ln.Addr().String()
	}
	for i, ln := range lns {
		cl.hosts = append(cl.hosts, serveOn(ln, fmt.Sprintf("cluster-%d", i), clusterHandler(i, urls), 1, clusterDelay))
	}
	var err error
	if cl.proxy, err = faultproxy.New(opts.ES); err != nil {
		return cl, err
	}
	for _, node := range clusterNodes {
		dir := filepath.Join(opts.Dir, "cluster-"+node)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return cl, err
		}
		cfg := filepath.Join(dir, "cluster.yaml")
		if err := os.WriteFile(cfg, []byte(cl.config(node, urls)), 0o644); err != nil {
			return cl, err
		}
		svc, err := startService(ctx, opts.Crawlspace, cfg, dir)
		if err != nil {
			return cl, fmt.Errorf("cluster process %s: %w", node, err)
		}
		svc.killAboveKB = 4 * opts.MaxRSSMB << 10
		go svc.watch()
		cl.procs = append(cl.procs, svc)
	}
	return cl, nil
}

// config is process node's configuration: the state in Elasticsearch through the proxy, the
// documents straight to the node. The requests' timeouts are the defaults: nothing here stalls,
// and a loaded node may take seconds to create an index.
func (cl *cluster) config(node string, urls []string) string {
	starts := make([]string, len(urls))
	for i, u := range urls {
		starts[i] = fmt.Sprintf("%q", u+"/")
	}
	return fmt.Sprintf(`# written by bench/soak: one of two processes sharing a crawl
user_agent: "crawlspace-soak/1.0 (%s)"
allow_private_networks: true
metrics_addr: "127.0.0.1:0"
log: {format: json, level: info}
fetch: {concurrency: 4, timeout: %s}
elasticsearch: {addresses: [%q], index: %s, shards: 1, replicas: 0}
cluster:
  state_index: %s-state
  node_name: %s
  partitions: 12
  lease_ttl: 10s
  elasticsearch: {addresses: [%q], replicas: 0}
sources:
  - name: cluster
    start_urls: [%s]
    politeness: {delay: %s, max_parallel_per_host: 1}
`, node, fetchTimeout, cl.node, cl.alias, cl.alias, node, cl.proxy.URL,
		strings.Join(starts, ", "), clusterDelay)
}

// clusterHandler is host i of the cluster's crawl: page p links pages 2p+1 and 2p+2 of its
// host and page p of the next host, so every page of every host is reached from any start.
func clusterHandler(i int, urls []string) http.Handler {
	next := urls[(i+1)%len(urls)]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := clusterPage(r.URL.Path)
		if !ok {
			http.NotFound(w, r)
			return
		}
		var links []string
		for _, q := range []int{2*p + 1, 2*p + 2} {
			if q < clusterPages {
				links = append(links, link(clusterPath(q), fmt.Sprintf("page %d", q)))
			}
		}
		links = append(links, link(next+clusterPath(p), "the next host"))
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page(fmt.Sprintf("Cluster host %d, page %d", i, p), "state cluster", "A page of the crawl two processes share.", links).body)
	})
}

func clusterPath(p int) string {
	if p == 0 {
		return "/"
	}
	return fmt.Sprintf("/p%d.html", p)
}

// clusterPage is the number of the page at path, if it is one.
func clusterPage(path string) (int, bool) {
	var p int
	if path != "/" {
		if _, err := fmt.Sscanf(path, "/p%d.html", &p); err != nil || p <= 0 || p >= clusterPages || clusterPath(p) != path {
			return 0, false
		}
	}
	return p, true
}

// fetched counts the pages served at least once, and every request.
func (cl *cluster) fetched() (pages, requests int) {
	for _, h := range cl.hosts {
		seen := map[string]bool{}
		for _, q := range h.rec.requests() {
			if _, ok := clusterPage(q.Path); ok && q.Status == http.StatusOK {
				seen[q.Path] = true
				requests++
			}
		}
		pages += len(seen)
	}
	return pages, requests
}

// searchable is how many documents a search of the alias sees: 0 while there is none.
func (cl *cluster) searchable() int {
	var res struct {
		Count int `json:"count"`
	}
	if err := (es{base: cl.node}).do(http.MethodGet, "/"+url.PathEscape(cl.alias)+"/_count", nil, &res); err != nil {
		return 0
	}
	return res.Count
}

// said says whether every process's log holds msg.
func (cl *cluster) said(msg string) bool {
	for _, p := range cl.procs {
		raw, _ := os.ReadFile(p.logPath)
		if !strings.Contains(string(raw), msg) {
			return false
		}
	}
	return true
}

// exited is a process that ended on its own, if any.
func (cl *cluster) exited() string {
	for i, p := range cl.procs {
		if !p.alive() {
			return clusterNodes[i]
		}
	}
	return ""
}

// run drives the outage: once a quarter of the pages are fetched, the state's proxy refuses
// connections until each process has said its cycle failed; then it waits for every page to be
// searchable. It closes done when over, whatever stopped it.
func (cl *cluster) run(ctx context.Context, logf func(string, ...any)) {
	defer close(cl.done)
	const all = clusterHosts * clusterPages
	await := func(what string, within time.Duration, cond func() bool) bool {
		deadline := time.Now().Add(within)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for !cond() {
			switch {
			case cl.exited() != "":
				cl.out.Problem = fmt.Sprintf("process %s exited while waiting for %s", cl.exited(), what)
			case time.Now().After(deadline):
				cl.out.Problem = fmt.Sprintf("%s: not within %v", what, within)
			}
			if cl.out.Problem != "" {
				return false
			}
			select {
			case <-ctx.Done():
				cl.out.Problem = "the soak was interrupted"
				return false
			case <-t.C:
			}
		}
		return true
	}
	if !await("a quarter of the pages fetched", clusterWaitMax, func() bool { p, _ := cl.fetched(); return p >= all/4 }) {
		return
	}
	cl.proxy.Set(faultproxy.Fault{Mode: faultproxy.Refuse})
	cl.out.OutageStart = time.Now()
	cl.out.PagesAtOutage, _ = cl.fetched()
	logf("cluster: the state node refuses connections, at %d of %d pages fetched", cl.out.PagesAtOutage, all)
	failed := await("a cycle failed in each process", clusterOutageMax, func() bool { return cl.said("cycle failed") })
	cl.proxy.Set(faultproxy.Fault{Mode: faultproxy.Pass})
	cl.out.OutageEnd = time.Now()
	logf("cluster: the state node answers again after %.1fs", cl.out.OutageEnd.Sub(cl.out.OutageStart).Seconds())
	if !failed {
		return
	}
	if await("every page searchable", clusterWaitMax, func() bool { cl.out.Searchable = cl.searchable(); return cl.out.Searchable >= all }) {
		cl.out.SearchableAt = time.Now()
		logf("cluster: all %d pages searchable %.1fs after the outage began", all, cl.out.SearchableAt.Sub(cl.out.OutageStart).Seconds())
	}
}

// stop ends both processes with SIGTERM at once and returns how long each took to exit.
func (cl *cluster) stop(grace time.Duration) ([]time.Duration, []error) {
	afters, errs := make([]time.Duration, len(cl.procs)), make([]error, len(cl.procs))
	var wg sync.WaitGroup
	for i, p := range cl.procs {
		wg.Go(func() { afters[i], errs[i] = p.stop(grace) })
	}
	wg.Wait()
	return afters, errs
}

// close ends whatever of the cluster still runs.
func (cl *cluster) close() {
	for _, p := range cl.procs {
		if p.alive() {
			p.kill()
		}
	}
	for _, h := range cl.hosts {
		h.close()
	}
	if cl.proxy != nil {
		cl.proxy.Close()
	}
}

// cluster waits for the cluster's schedule to end, stops its processes and checks what they
// did: every page fetched and searchable after the outage; each process said its failed cycle
// is tried again, ran until SIGTERM and then exited 0.
func (c *checker) cluster() {
	cl := c.cl
	<-cl.done // run returns soon after ctx ends
	// Before SIGTERM: an exit now is one of its own.
	var early []string
	for i, p := range cl.procs {
		if !p.alive() {
			early = append(early, clusterNodes[i])
		}
	}
	afters, errs := cl.stop(time.Minute)
	const all = clusterHosts * clusterPages
	o := cl.out
	pages, requests := cl.fetched()
	figures := fmt.Sprintf("%d of %d pages fetched in %d requests, %d searchable", pages, all, requests, o.Searchable)
	if !o.OutageStart.IsZero() {
		figures = fmt.Sprintf("outage of %.1fs at %d pages fetched; ", o.OutageEnd.Sub(o.OutageStart).Seconds(), o.PagesAtOutage) + figures
	}
	if !o.SearchableAt.IsZero() {
		figures += fmt.Sprintf(" %.1fs after the outage began", o.SearchableAt.Sub(o.OutageStart).Seconds())
	}
	if o.Problem != "" {
		figures += ": " + o.Problem
	}
	c.add("cluster of two: every page fetched and searchable after a state-node outage",
		o.Problem == "" && !o.OutageStart.IsZero() && pages == all && o.Searchable == all, "%s", figures)

	pass := len(early) == 0 && len(cl.procs) == len(clusterNodes)
	var each []string
	for i, p := range cl.procs {
		raw, _ := os.ReadFile(p.logPath)
		failed, again := strings.Count(string(raw), "cycle failed"), strings.Count(string(raw), "the cycle is tried again")
		crashes, _ := logProblems(p.logPath)
		code := p.exitCode()
		ok := again > 0 && crashes == 0 && errs[i] == nil && code == 0 && afters[i] <= c.opts.ExitWithin
		pass = pass && ok
		s := fmt.Sprintf("%s: %d cycles failed, %d said tried again, %d panics, exit %d %.1fs after SIGTERM", clusterNodes[i], failed, again, crashes, code, afters[i].Seconds())
		if errs[i] != nil {
			s += " (" + errs[i].Error() + ")"
		}
		each = append(each, s)
	}
	if len(early) > 0 {
		each = append(each, "exited before SIGTERM: "+strings.Join(early, ", "))
	}
	c.add("cluster of two: each process tried its failed cycle again, none exited", pass, "%s", strings.Join(each, "; "))
}
