package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/crawlspace/crawlspace/frontier"
)

// status -url shows a page's URL as the site wrote it and the URL
// requested, where they differ from its key, whichever spelling is typed.
func TestStatusURLShowsTheURLAsFoundAndTheURLRequested(t *testing.T) {
	var mu sync.Mutex
	var requested []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requested = append(requested, r.RequestURI)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<html><body>%s <a href="/list?b=2&amp;a=1&amp;utm=x">list</a></body></html>`, r.RequestURI)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cfg, set, _ := writeConfig(t, fmt.Sprintf(`
output: {file: %s}
allow_private_networks: true
sources:
  - name: docs
    start_urls: [%q]
    honored_query_params: [a, b]
    robots: {obey: false}
`, filepath.Join(dir, "docs.ndjson"), srv.URL+"/"))
	if code := crawlOnce(context.Background(), cfg, set, jsonOutput(io.Discard, io.Discard), ""); code != exitOK {
		t.Fatalf("crawl exit %d", code)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(requested, " "); got != "/ /list?b=2&a=1" {
		t.Errorf("requested %s", got)
	}
	front, err := frontier.Open(cfg.StateDir, frontier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()
	for _, typed := range []string{srv.URL + "/list?a=1&b=2", srv.URL + "/list?b=2&a=1&utm=x"} {
		var out bytes.Buffer
		if code := statusOfURL(&out, cfg, set, front, typed, true); code != exitOK {
			t.Fatalf("status -url %s: exit %d", typed, code)
		}
		var st urlStatus
		if err := json.Unmarshal(out.Bytes(), &st); err != nil {
			t.Fatal(err)
		}
		if st.URL != srv.URL+"/list?a=1&b=2" || st.Found != srv.URL+"/list?b=2&a=1&utm=x" || st.Requested != srv.URL+"/list?b=2&a=1" {
			t.Errorf("status -url %s: key %s, found as %q, requested as %q", typed, st.URL, st.Found, st.Requested)
		}
		if d := st.Decision; d == nil || d.URL != st.Found || d.Fetch != st.Requested || d.Key != st.URL {
			t.Errorf("status -url %s: decision %+v", typed, st.Decision)
		}
	}
	var text bytes.Buffer
	statusOfURL(&text, cfg, set, front, srv.URL+"/list?a=1&b=2", false)
	for _, want := range []string{"  found as " + srv.URL + "/list?b=2&a=1&utm=x\n", "  requested as " + srv.URL + "/list?b=2&a=1\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("status -url text lacks %q:\n%s", want, text.String())
		}
	}
}
