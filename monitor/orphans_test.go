package monitor_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/monitor"
)

func TestOrphanGaugesEqualTheReportOfTheCycleThatFoundThem(t *testing.T) {
	var unlinked atomic.Bool
	mux := http.NewServeMux()
	page := func(body string) string {
		return "<!doctype html><title>t</title><p>" + body + "</p>"
	}
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if unlinked.Load() {
			fmt.Fprint(w, page(`<a href="/a">a</a>`))
			return
		}
		fmt.Fprint(w, page(`<a href="/a">a</a> <a href="/b">b</a>`))
	})
	for _, p := range []string{"/a", "/b"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, page("page "+p))
		})
	}
	site := httptest.NewServer(mux)
	defer site.Close()
	cfg := fileConfig(t, site.URL)
	c := crawltest.New(t, cfg)
	m := monitor.NewMetrics("test", []string{"site"})
	c.SetObserver(m)
	if _, err := c.Crawl(context.Background()); err != nil {
		t.Fatal(err)
	}
	unlinked.Store(true)
	report, err := c.Crawl(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	srv := monitor.NewServer(cfg, c, m, monitor.NewStates(c.Frontier(), cfg), "test", nil)
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	got := scrape(t, web.URL+"/metrics")
	tot := report.Sources["site"]
	if tot == nil || tot.Orphans != 1 || tot.OrphansKept != 1 {
		t.Fatalf("report of the second crawl: %+v, want 1 orphan (/b) kept", tot)
	}
	for name, want := range map[string]int{"crawlspace_orphans": tot.Orphans, "crawlspace_orphans_kept": tot.OrphansKept} {
		if v := got[series(name, "source", "site")]; v != float64(want) {
			t.Errorf("%s = %v, want %d", name, v, want)
		}
	}
}
