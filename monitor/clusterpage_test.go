package monitor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier/esfrontier"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/faultproxy"
	"github.com/crawlspace/crawlspace/monitor"
)

// A crawl through the shared store: the page and /status.json show this
// process alive, holding every partition, as `crawlspace status` does.
// It is ready while it renews its leases: when the state's cluster stops
// answering for longer than lease_ttl, its partitions are another's to
// take and /readyz says 503; it is ready again with its next round.
func TestStatusPageShowsTheClusterMembersAndPartitionsOfASharedCrawl(t *testing.T) {
	site := mixedSite(t)
	name := estest.Index(t)
	proxy := estest.Proxy(t)
	cfg := crawltest.Config(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0, bulk_flush_interval: 50ms}
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
	report, err := c.Crawl(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.Cluster() == nil {
		t.Fatal("the crawl does not run through the shared store")
	}
	m := monitor.NewMetrics("v1", []string{"site"})
	srv := monitor.NewServer(cfg, c, m, nil, "crawlspace v1", nil)
	srv.ShowCluster(c.Cluster())
	srv.CycleDone(report, nil, time.Now().Add(time.Hour))
	web := httptestServer(t, srv)

	page, _ := get(t, web+"/")
	for _, want := range []string{
		"<h2>Cluster</h2>",
		"state " + name + "-state: 4 partitions, 0 free",
		`<td class="l">crawler-a</td><td class="l">alive</td>`,
		"<td>4</td><td class=\"l\">0-3</td>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %q:\n%s", want, section(page, "<h2>Cluster</h2>"))
		}
	}
	raw, _ := get(t, web+"/status.json")
	var v monitor.View
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatal(err)
	}
	cl := v.Cluster
	if cl == nil || cl.Partitions != 4 || len(cl.Free) != 0 || len(cl.Members) != 1 {
		t.Fatalf("status.json cluster = %+v, want one member holding the 4 partitions", cl)
	}
	if mb := cl.Members[0]; mb.Node != "crawler-a" || !mb.Alive || len(mb.Partitions) != 4 || mb.Heartbeat.IsZero() {
		t.Errorf("member = %+v, want crawler-a alive with 4 partitions and a heartbeat", mb)
	}

	if code, body := probe(t, web+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz of a process that joined: %d %q", code, body)
	}
	estest.SetFault(t, proxy, faultproxy.Fault{Mode: faultproxy.Refuse})
	body := pollProbe(t, web+"/readyz", http.StatusServiceUnavailable)
	if !strings.Contains(body, "not ready: the shared state was last read ") || !strings.Contains(body, "longer than cluster.lease_ttl (3s)") {
		t.Errorf("/readyz while the state's cluster refuses connections says %q", body)
	}
	if code, _ := probe(t, web+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while the state's cluster is away: %d, want 200", code)
	}
	estest.SetFault(t, proxy, faultproxy.Fault{Mode: faultproxy.Pass})
	awaitProbe(t, proxy, web+"/readyz", http.StatusOK)
}

type fixedCluster esfrontier.View

func (v fixedCluster) Cluster() esfrontier.View { return esfrontier.View(v) }

func TestStatusPageMarksAProcessGoneAndListsTheFreePartitions(t *testing.T) {
	site := mixedSite(t)
	cfg := fileConfig(t, site.URL)
	c := crawltest.New(t, cfg)
	cfg.Cluster.StateIndex = "intranet-state" // named on the page only: the store is the fixed view
	srv := monitor.NewServer(cfg, c, monitor.NewMetrics("v1", []string{"site"}), nil, "crawlspace v1", nil)
	now := time.Now()
	srv.ShowCluster(fixedCluster{At: now, Holders: []string{"a", "a", "", "b", "", "", "a"},
		Members: []esfrontier.Member{{Node: "a", Alive: true, Heartbeat: now, Hosts: 7, InFlight: 3},
			{Node: "b", Heartbeat: now.Add(-time.Minute), Hosts: 2}}})
	web := httptestServer(t, srv)
	page, _ := get(t, web+"/")
	for _, want := range []string{
		"state intranet-state: 7 partitions, 3 free (2,4-5)",
		`<td class="l">a</td><td class="l">alive</td>`,
		"<td>7</td><td>3</td><td>3</td><td class=\"l\">0-1,6</td>",
		`<td class="l">b</td><td class="l bad">gone</td>`,
		"(1m00s ago)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %q:\n%s", want, section(page, "<h2>Cluster</h2>"))
		}
	}
}

func TestStatusPageHasNoClusterSectionWithTheEmbeddedStore(t *testing.T) {
	site := mixedSite(t)
	cfg := fileConfig(t, site.URL)
	c := crawltest.New(t, cfg)
	srv := monitor.NewServer(cfg, c, monitor.NewMetrics("v1", []string{"site"}), nil, "crawlspace v1", nil)
	web := httptestServer(t, srv)
	if page, _ := get(t, web+"/"); strings.Contains(page, "Cluster") {
		t.Error("the status page of a crawl of its own shows a cluster")
	}
	raw, _ := get(t, web+"/status.json")
	if strings.Contains(raw, `"cluster"`) {
		t.Errorf("status.json of a crawl of its own has a cluster:\n%s", raw)
	}
}

func section(page, from string) string {
	if i := strings.Index(page, from); i >= 0 {
		return page[i:min(len(page), i+2000)]
	}
	return "(no such section)"
}

func httptestServer(t *testing.T, srv *monitor.Server) string {
	web := httptest.NewServer(srv.Handler())
	t.Cleanup(web.Close)
	return web.URL
}
