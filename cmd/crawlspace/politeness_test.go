package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/estest"
)

// politeSite is a host that logs every request it serves, robots.txt
// included: what, when, and from which process (the User-Agent).
type politeSite struct {
	srv *httptest.Server
	mu  sync.Mutex
	log []hostRequest
}

type hostRequest struct {
	path, agent string
	start, end  time.Time
}

// newPoliteSite serves a robots.txt and a start page linking pages-1
// others.
func newPoliteSite(t *testing.T, pages int) *politeSite {
	s := &politeSite{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := hostRequest{path: r.URL.Path, agent: r.UserAgent(), start: time.Now()}
		defer func() {
			req.end = time.Now()
			s.mu.Lock()
			s.log = append(s.log, req)
			s.mu.Unlock()
		}()
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<html><head><title>%s%s</title></head><body>", r.Host, r.URL.Path)
		if r.URL.Path == "/" {
			for i := 1; i < pages; i++ {
				fmt.Fprintf(w, `<a href="/p%d">p%d</a> `, i, i)
			}
		}
		fmt.Fprint(w, "</body></html>")
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// requests are the requests the site served, by start.
func (s *politeSite) requests() []hostRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.log)
	slices.SortFunc(out, func(a, b hostRequest) int { return a.start.Compare(b.start) })
	return out
}

// Three processes sharing a crawl of six hosts with `delay: 1s` and
// `max_parallel_per_host: 1`: each host's robots.txt is read by the
// processes that hold the host, each at most once, and every request to
// a host, robots.txt included, waits the delay after the one before,
// whichever process made either. Each process once read every start
// host's robots.txt at the start of its cycle, three requests within a
// few milliseconds, and the first page followed at once.
func TestThreeProcessesReadEachHostsRobotsTxtWithinTheHostsPoliteness(t *testing.T) {
	if testing.Short() {
		t.Skip("runs crawlspace in child processes")
	}
	t.Parallel()
	const (
		hosts = 6
		pages = 4 // per host
		delay = time.Second
	)
	var sites []*politeSite
	var starts []string
	for range hosts {
		s := newPoliteSite(t, pages)
		sites = append(sites, s)
		starts = append(starts, s.srv.URL+"/")
	}
	name := estest.Index(t)
	var procs []*proc
	for _, node := range []string{"a", "b", "c"} {
		path := sharedCrawlConfig(t, node, name, "", fmt.Sprintf("{delay: %s, max_parallel_per_host: 1}", delay), starts)
		procs = append(procs, startProc(t, node, "crawl", "-config", path))
	}
	awaitExit(t, func() string { return "the crawl" }, procs...)
	for _, p := range procs {
		if code := p.exitCode(); code != exitOK {
			t.Errorf("crawl %s exited %d", p.name, code)
		}
	}
	robots := 0
	for i, s := range sites {
		reqs := s.requests()
		perAgent := map[string]int{}
		paths := map[string]bool{}
		for k, r := range reqs {
			if r.path == "/robots.txt" {
				robots++
				perAgent[r.agent]++
			} else {
				paths[r.path] = true
			}
			if k == 0 {
				continue
			}
			prev := reqs[k-1]
			if gap := r.start.Sub(prev.end); gap < delay {
				t.Errorf("host %d: %s by %s began %s after %s by %s ended, within the delay of %s",
					i, r.path, r.agent, gap.Round(time.Millisecond), prev.path, prev.agent, delay)
			}
		}
		for agent, n := range perAgent {
			if n > 1 {
				t.Errorf("host %d: %s read robots.txt %d times", i, agent, n)
			}
		}
		if len(paths) != pages {
			t.Errorf("host %d: %d pages fetched, want %d", i, len(paths), pages)
		}
	}
	t.Logf("%d hosts, %d robots.txt requests", hosts, robots)
	if t.Failed() {
		t.Logf("the processes' output:%s", outputs(procs...))
	}
}
