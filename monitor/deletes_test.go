package monitor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/monitor"
)

// A cycle that held a source's deletes: the status page shows a banner
// naming the source, its count and how to confirm, /status.json and
// /metrics the count.
func TestTheStatusPageSaysWhichSourceHoldsDeletesAndHowToConfirmThem(t *testing.T) {
	var gone atomic.Bool
	site := crawltest.VanishingSite(t, 12, &gone)
	cfg := crawltest.Config(t, fmt.Sprintf(`
output: {file: %s}
allow_private_networks: true
sources:
  - name: site
    start_urls: [%q]
    max_age: 1ns
`, filepath.Join(t.TempDir(), "docs.ndjson"), site.URL+"/"))
	c := crawltest.New(t, cfg)
	m := monitor.NewMetrics("test", []string{"site"})
	c.SetObserver(m)
	for _, down := range []bool{false, true} {
		gone.Store(down)
		if _, err := c.Crawl(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	web := httptest.NewServer(monitor.NewServer(cfg, c, m, monitor.NewStates(c.Frontier(), cfg), "test", nil).Handler())
	defer web.Close()

	page, _ := get(t, web.URL+"/")
	for _, want := range []string{`id="held-site"`, "13 of its 13 documents", "crawlspace confirm-deletes -config F -source site"} {
		if !strings.Contains(page, want) {
			t.Errorf("the status page does not say %q", want)
		}
	}
	var view struct {
		Sources []struct {
			Name        string `json:"name"`
			DeletesHeld *struct {
				Count int `json:"count"`
			} `json:"deletes_held"`
		} `json:"sources"`
	}
	data, _ := get(t, web.URL+"/status.json")
	if err := json.Unmarshal([]byte(data), &view); err != nil {
		t.Fatal(err)
	}
	if len(view.Sources) != 1 || view.Sources[0].DeletesHeld == nil || view.Sources[0].DeletesHeld.Count != 13 {
		t.Errorf("/status.json sources: %+v, want site holding 13 deletes", view.Sources)
	}
	if v := scrape(t, web.URL+"/metrics")[series("crawlspace_deletes_held", "source", "site")]; v != 13 {
		t.Errorf("crawlspace_deletes_held{source=site} = %v, want 13", v)
	}
}
