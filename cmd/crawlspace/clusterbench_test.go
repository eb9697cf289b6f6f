package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
)

// TestClusterFigures measures 1, 2 and 3 processes crawling one site of
// many hosts through the shared state store: pages per second, the
// processes' CPU per page, the node's CPU and the store's requests and
// bytes per URL. A measurement, not a check: run it with
// CRAWLSPACE_CLUSTER_FIGURES=1 (docs/cluster.md has the figures).
func TestClusterFigures(t *testing.T) {
	if os.Getenv("CRAWLSPACE_CLUSTER_FIGURES") == "" {
		t.Skip("a measurement: set CRAWLSPACE_CLUSTER_FIGURES=1")
	}
	const hosts, pages = 30, 100
	for _, n := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			sites := newClusterSites(t, hosts, pages, nil)
			name := estest.Index(t)
			var starts []string
			for _, s := range sites {
				starts = append(starts, fmt.Sprintf("%q", s.srv.URL+"/"))
			}
			cpu0 := nodeCPU(t)
			began := time.Now()
			var procs []*proc
			for i := range n {
				cfg := crawltest.WriteConfig(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0}
cluster: {state_index: %s-state, node_name: n%d, partitions: 64}
allow_private_networks: true
fetch: {concurrency: 16}
sources:
  - name: hosts
    start_urls: [%s]
`, estest.URL(t), name, name, i, strings.Join(starts, ", ")))
				procs = append(procs, startProc(t, fmt.Sprint(i), "crawl", "-config", cfg))
			}
			var procCPU time.Duration
			var requests, sent, received int64
			re := regexp.MustCompile(`msg="state store requests".* requests=(\d+) bytes_sent=(\d+) bytes_received=(\d+)`)
			awaitExit(t, func() string { return "the crawl" }, procs...)
			for _, p := range procs {
				if code := p.exitCode(); code != exitOK {
					t.Fatalf("process %s exited %d\n%s", p.name, code, p.out)
				}
				procCPU += p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
				if m := re.FindStringSubmatch(p.out.String()); m != nil {
					r, _ := strconv.ParseInt(m[1], 10, 64)
					s, _ := strconv.ParseInt(m[2], 10, 64)
					v, _ := strconv.ParseInt(m[3], 10, 64)
					requests, sent, received = requests+r, sent+s, received+v
				}
			}
			took := time.Since(began)
			node := nodeCPU(t) - cpu0
			fetched := 0
			for _, s := range sites {
				p, _, _ := s.fetched()
				fetched += p
			}
			t.Logf("%d process(es): %d pages in %.1fs = %.0f pages/s; process CPU %.2f ms/page; node CPU %.2f ms/URL; store %.1f requests, %.0f B sent, %.0f B received per URL",
				n, fetched, took.Seconds(), float64(fetched)/took.Seconds(), float64(procCPU.Milliseconds())/float64(fetched),
				float64(node)/float64(fetched), float64(requests)/float64(fetched), float64(sent)/float64(fetched), float64(received)/float64(fetched))
		})
	}
}

// nodeCPU is the node's process CPU so far, in milliseconds.
func nodeCPU(t *testing.T) int64 {
	t.Helper()
	es := estest.Client(t)
	resp, err := es.Nodes.Stats(es.Nodes.Stats.WithMetric("process"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Nodes map[string]struct {
			Process struct {
				CPU struct {
					TotalInMillis int64 `json:"total_in_millis"`
				} `json:"cpu"`
			} `json:"process"`
		} `json:"nodes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	var ms int64
	for _, n := range st.Nodes {
		ms += n.Process.CPU.TotalInMillis
	}
	return ms
}
