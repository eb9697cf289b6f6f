package monitor_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/faultproxy"
	"github.com/crawlspace/crawlspace/monitor"
)

// probe GETs a probe's path and returns its status and body.
func probe(t *testing.T, url string) (int, string) {
	t.Helper()
	code, body, _ := fetch(t, url)
	return code, body
}

// awaitProbe polls url until its status is want, and returns the body
// then; the test's -timeout bounds the wait.
func awaitProbe(t *testing.T, url string, want int) string {
	t.Helper()
	for {
		code, body := probe(t, url)
		if code == want {
			return body
		}
		<-time.After(20 * time.Millisecond)
	}
}

// Kubernetes' probes: /healthz answers while the process serves;
// /readyz answers 503 while Elasticsearch takes none of the documents'
// writes, saying so, and 200 once they land again.
func TestReadyzIsUnavailableWhileTheIndexRefusesWritesAndHealthzStaysUp(t *testing.T) {
	site := mixedSite(t)
	proxy := estest.Proxy(t)
	name := estest.Index(t)
	cfg := crawltest.Config(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0, bulk_flush_interval: 50ms}
allow_private_networks: true
sources:
  - name: site
    start_urls: [%q]
`, proxy.URL, name, site.URL+"/"))
	c := crawltest.New(t, cfg)
	srv := monitor.NewServer(cfg, c, monitor.NewMetrics("v1", []string{"site"}), nil, "crawlspace v1", nil)
	web := httptestServer(t, srv)

	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := probe(t, web+path); code != http.StatusOK || body != "ok\n" {
			t.Fatalf("GET %s before the crawl: %d %q, want 200 ok", path, code, body)
		}
	}

	estest.SetFault(t, proxy, faultproxy.Fault{Mode: faultproxy.FailItems, Status: http.StatusServiceUnavailable})
	done := make(chan error, 1)
	go func() {
		_, err := c.Crawl(context.Background())
		done <- err
	}()
	body := awaitProbe(t, web+"/readyz", http.StatusServiceUnavailable)
	if !strings.Contains(body, "not ready: Elasticsearch has taken no document write since ") {
		t.Errorf("/readyz while every write fails says %q", body)
	}
	if code, body := probe(t, web+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while the index refuses writes: %d %q, want 200: a restart would not help", code, body)
	}

	estest.SetFault(t, proxy, faultproxy.Fault{Mode: faultproxy.Pass})
	if err := <-done; err != nil {
		t.Fatalf("the crawl after the fault: %v", err)
	}
	if body := awaitProbe(t, web+"/readyz", http.StatusOK); body != "ok\n" {
		t.Errorf("/readyz once the writes landed: %q", body)
	}
}

// A process of a shared crawl is ready while it renews its leases: when
// the state's cluster stops answering for longer than lease_ttl, its
// partitions are another's to take and /readyz says 503; it is ready
// again with its next round.
func TestReadyzOfASharedCrawlFollowsTheLeaseRoundsOfTheStatesCluster(t *testing.T) {
	site := mixedSite(t)
	proxy := estest.Proxy(t)
	name := estest.Index(t)
	cfg := crawltest.Config(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0}
cluster:
  state_index: %s-state
  node_name: crawler-a
  partitions: 4
  lease_ttl: 3s
  elasticsearch: {addresses: [%q], replicas: 0}
allow_private_networks: true
sources:
  - name: site
    start_urls: [%q]
`, estest.URL(t), name, name, proxy.URL, site.URL+"/"))
	c := crawltest.New(t, cfg)
	if c.Cluster() == nil {
		t.Fatal("the crawler does not run through the shared store")
	}
	srv := monitor.NewServer(cfg, c, monitor.NewMetrics("v1", []string{"site"}), nil, "crawlspace v1", nil)
	srv.ShowCluster(c.Cluster())
	web := httptestServer(t, srv)

	// The store's first round is part of opening it.
	if code, body := probe(t, web+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz of a process that joined: %d %q", code, body)
	}
	estest.SetFault(t, proxy, faultproxy.Fault{Mode: faultproxy.Refuse})
	body := awaitProbe(t, web+"/readyz", http.StatusServiceUnavailable)
	if !strings.Contains(body, "not ready: the shared state was last read ") || !strings.Contains(body, "longer than cluster.lease_ttl (3s)") {
		t.Errorf("/readyz while the state's cluster refuses connections says %q", body)
	}
	if code, _ := probe(t, web+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while the state's cluster is away: %d, want 200", code)
	}
	estest.SetFault(t, proxy, faultproxy.Fault{Mode: faultproxy.Pass})
	awaitProbe(t, web+"/readyz", http.StatusOK)
}
