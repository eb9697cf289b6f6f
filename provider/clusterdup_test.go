package provider_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/faultproxy"
	"github.com/crawlspace/crawlspace/provider"
)

// Two crawlers share one crawl through the state store in Elasticsearch,
// each holding some of the hosts; every host serves the same policy page.
// The pages fetched by the two are one group: the index holds one
// document for it, under its primary, listing the other copies.
func TestDuplicatesOnHostsOfTwoProcessesAreOneDocument(t *testing.T) {
	t.Parallel()
	esURL, index := estest.URL(t), estest.Index(t)
	var starts, policies []string
	for i := range 12 {
		site := newMutableSite(t)
		site.set("/", "Home", fmt.Sprintf("Welcome to host %d.", i), "/policy.html")
		site.set("/policy.html", "Policy", "The same policy on every host.")
		starts = append(starts, fmt.Sprintf("%q", site.URL+"/"))
		policies = append(policies, site.URL+"/policy.html")
	}
	slices.SortFunc(policies, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	// b talks to the node through a proxy that passes every request, so
	// that the test can check b's view of the leases at each of b's
	// requests instead of polling on a period.
	proxy := estest.Proxy(t)
	config := func(node, addr string) string {
		return fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0}
cluster: {state_index: %s-state, node_name: %s, partitions: 8, lease_ttl: 5s}
allow_private_networks: true
sources:
  - name: site
    start_urls: [%s]
`, addr, index, index, node, strings.Join(starts, ", "))
	}
	var (
		wg      sync.WaitGroup
		reports [2]*provider.Report
		errs    [2]error
	)
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var crawlers []*provider.Crawler
	for _, node := range []string{"a", "b"} {
		addr := esURL
		if node == "b" {
			addr = proxy.URL
		}
		crawlers = append(crawlers, crawltest.NewLogged(t, crawltest.Config(t, config(node, addr)), log.With("node", node)))
	}
	// The alias points at the index the crawlers opened before they crawl:
	// two sinks publishing a new alias at once is the sink's race (fixed
	// on the branch for issue 19's multi-process test), not this test's.
	var physical map[string]any
	getJSONTest(t, esURL+"/"+index+"-v*", &physical)
	for name := range physical {
		req, _ := http.NewRequest(http.MethodPut, esURL+"/"+name+"/_alias/"+index, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	// Each holds half the partitions before the crawl starts: checked
	// again at each of b's requests, its lease rounds among them.
	held := map[string]int{}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := proxy.Await(ctx, func(faultproxy.Stats) bool {
		clear(held)
		for _, h := range crawlers[1].Cluster().Cluster().Holders {
			held[h]++
		}
		return held["a"] == 4 && held["b"] == 4
	}); err != nil {
		t.Fatalf("b sees holders %v, want 4 partitions each: %v", held, err)
	}
	for i, c := range crawlers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reports[i], errs[i] = c.Crawl(context.Background())
			if err := c.Close(); err != nil && errs[i] == nil {
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("crawler %d: %v", i, err)
		}
	}
	if reports[0].Total.Fetched == 0 || reports[1].Total.Fetched == 0 {
		t.Fatalf("a fetched %d pages, b %d: the test needs both to fetch", reports[0].Total.Fetched, reports[1].Total.Fetched)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	docs := searchAll(t, esURL, index)
	var policyDocs []string
	for _, d := range docs {
		if strings.HasSuffix(d.URL, "/policy.html") {
			policyDocs = append(policyDocs, d.URL)
			if want := policies[1:]; !slices.Equal(d.Duplicates, want) {
				t.Errorf("%s lists duplicates %v, want %v", d.URL, d.Duplicates, want)
			}
		}
	}
	if !slices.Equal(policyDocs, policies[:1]) {
		t.Errorf("the policy page is indexed as %v, want one document under %s", policyDocs, policies[0])
	}
	if len(docs) != len(starts)+1 {
		t.Errorf("the index holds %d documents, want %d home pages and one policy", len(docs), len(starts))
	}
}

// TestDuplicatesCostFigures measures what groups of duplicates cost the
// shared store per URL: requests and bytes of two crawls (the first, then
// an unchanged one) of a site of 200 pages, one in four a copy of another,
// with groups and with keep_duplicates. A measurement, not a check: run
// with CRAWLSPACE_DUP_FIGURES=1 and -v.
func TestDuplicatesCostFigures(t *testing.T) {
	if os.Getenv("CRAWLSPACE_DUP_FIGURES") == "" {
		t.Skip("figures: set CRAWLSPACE_DUP_FIGURES=1")
	}
	esURL := estest.URL(t)
	const pages = 200
	for _, keep := range []bool{false, true} {
		index := estest.Index(t) + fmt.Sprint(keep)
		site := newMutableSite(t)
		var links []string
		for i := range pages {
			p := fmt.Sprintf("/p%d.html", i)
			links = append(links, p)
			text := fmt.Sprintf("Page %d.", i)
			if i%4 == 3 {
				text = fmt.Sprintf("Page %d.", i-1) // a copy of the page before it
			}
			site.set(p, "Page", text)
		}
		site.set("/", "Home", "Welcome.", links...)
		yaml := fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0}
cluster: {state_index: %s-state, node_name: figures, partitions: 4, lease_ttl: 5s}
allow_private_networks: true
sources:
  - name: site
    start_urls: [%q]
    max_age: 1ms
    keep_duplicates: %v
`, esURL, index, index, site.URL+"/", keep)
		for _, run := range []string{"first crawl", "unchanged crawl"} {
			letMaxAgePass(t)
			c := onTestClock(t, crawltest.New(t, crawltest.Config(t, yaml)))
			start, before := time.Now(), site.allFetches()
			rep, err := c.Crawl(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			took, fetches := time.Since(start), site.allFetches()-before
			cost, dup := c.Cluster().Cost(), c.Cluster().DuplicatesCost()
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			n := float64(pages + 1)
			t.Logf("keep_duplicates %-5v %-15s %d pages fetched (%d answered in full), %d written, in %s", keep, run,
				rep.Total.Fetched, fetches, rep.Total.Created+rep.Total.Updated+rep.Total.Deleted, took.Round(time.Millisecond))
			t.Logf("keep_duplicates %-5v %-15s all: %.2f requests, %.0f bytes sent, %.0f received per URL; groups: %.2f requests, %.0f bytes sent, %.0f received per URL",
				keep, run, float64(cost.Requests)/n, float64(cost.BytesSent)/n, float64(cost.BytesReceived)/n,
				float64(dup.Requests)/n, float64(dup.BytesSent)/n, float64(dup.BytesReceived)/n)
		}
	}
}

func (s *mutableSite) allFetches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.fetches {
		n += v
	}
	return n
}
