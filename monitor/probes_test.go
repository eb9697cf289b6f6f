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

// awaitProbe asks url until its status is want, and returns the body
// then: at once, and again at each request through p, by which the
// crawler's writes land or fail. The test's -timeout bounds the wait.
func awaitProbe(t *testing.T, p *faultproxy.Proxy, url string, want int) string {
	t.Helper()
	var body string
	if err := p.Await(context.Background(), func(faultproxy.Stats) bool {
		var code int
		code, body = probe(t, url)
		return code == want
	}); err != nil {
		t.Fatal(err)
	}
	return body
}

// pollProbe asks url until its status is want, and returns the body
// then, for a readiness that changes with the time alone (the age of the
// shared state's last read, with its node refusing connections): there is
// no event to wait for. The test's -timeout bounds the wait.
func pollProbe(t *testing.T, url string, want int) string {
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
	body := awaitProbe(t, proxy, web+"/readyz", http.StatusServiceUnavailable)
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
	if body := awaitProbe(t, proxy, web+"/readyz", http.StatusOK); body != "ok\n" {
		t.Errorf("/readyz once the writes landed: %q", body)
	}
}
