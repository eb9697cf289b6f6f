package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crawlspace/crawlspace/frontier"
)

func TestSummaryCountsOrphansAndStatusURLShowsOne(t *testing.T) {
	var unlinked atomic.Bool
	mux := http.NewServeMux()
	page := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<!doctype html><title>t</title><p>%s</p>", body)
	}
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		if unlinked.Load() {
			page(w, `<a href="/a.html">a</a>`)
			return
		}
		page(w, `<a href="/a.html">a</a> <a href="/b.html">b</a>`)
	})
	mux.HandleFunc("/a.html", func(w http.ResponseWriter, r *http.Request) { page(w, "a") })
	mux.HandleFunc("/b.html", func(w http.ResponseWriter, r *http.Request) { page(w, "b") })
	site := httptest.NewServer(mux)
	defer site.Close()
	dir := t.TempDir()
	cfg, set, _ := writeConfig(t, fmt.Sprintf(`
output: {file: %s}
allow_private_networks: true
sources:
  - name: docs
    start_urls: [%q]
`, filepath.Join(dir, "docs.ndjson"), site.URL+"/"))
	crawlSummary(t, cfg, set)
	unlinked.Store(true)
	if summary := crawlSummary(t, cfg, set); !strings.Contains(summary, "orphans 1, kept 1\n") {
		t.Errorf("summary does not count the orphan:\n%s", summary)
	}

	front, err := frontier.Open(cfg.StateDir, frontier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()
	var out bytes.Buffer
	if code := statusOfURL(&out, cfg, set, front, site.URL+"/b.html", true); code != exitOK {
		t.Fatalf("status -url exit %d", code)
	}
	var st urlStatus
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	last := st.History[len(st.History)-1]
	if !st.Orphan || last.Event != frontier.EventOrphan || last.Reason != "kept" {
		t.Errorf("status -url of the orphan: orphan=%v, last event %s %s; want an orphan, kept", st.Orphan, last.Event, last.Reason)
	}
	var text bytes.Buffer
	statusOfURL(&text, cfg, set, front, site.URL+"/b.html", false)
	for _, want := range []string{"  an orphan: no link reaches it", "orphan       kept\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("status -url text lacks %q:\n%s", want, text.String())
		}
	}
}
