package monitor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier/esfrontier"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/monitor"
)

// A crawl through the shared store: the page and /status.json show this
// process alive, holding every partition, as `crawlspace status` does.
func TestStatusPageShowsTheClusterMembersAndPartitionsOfASharedCrawl(t *testing.T) {
	site := mixedSite(t)
	name := estest.Index(t)
	cfg := crawltest.Config(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0, bulk_flush_interval: 50ms}
cluster: {state_index: %s-state, node_name: crawler-a, partitions: 4, lease_ttl: 3s}
allow_private_networks: true
sources:
  - name: site
    start_urls: [%q]
`, estest.URL(t), name, name, site.URL+"/"))
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
