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

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/rules"
)

// statusJSON is `status -json -url u`.
func statusJSON(t *testing.T, cfg *config.Config, set *rules.Set, front statusStore, u string) urlStatus {
	t.Helper()
	var out bytes.Buffer
	if code := statusOfURL(&out, cfg, set, front, u, true); code != exitOK {
		t.Fatalf("status -url %s: exit %d", u, code)
	}
	var st urlStatus
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestStatusURLShowsTheWholeHistoryOfAURL(t *testing.T) {
	site := opsSite(t, nil)
	dir := t.TempDir()
	cfg, set, _ := writeConfig(t, fmt.Sprintf(`
output: {file: %s}
allow_private_networks: true
sources:
  - name: docs
    start_urls: [%q]
`, filepath.Join(dir, "docs.ndjson"), site.URL+"/"))
	for range 2 { // the second crawl finds the start page again, unchanged
		if code := crawlOnce(context.Background(), cfg, set, jsonOutput(io.Discard, io.Discard), ""); code != exitOK {
			t.Fatalf("crawl exit %d", code)
		}
	}
	front, err := frontier.Open(cfg.StateDir, frontier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()

	status := func(u string) urlStatus { return statusJSON(t, cfg, set, front, u) }
	events := func(st urlStatus) string {
		var parts []string
		for _, h := range st.History {
			p := h.Event.String()
			if h.Reason != "" {
				p += ":" + h.Reason
			}
			if h.Status != 0 {
				p += fmt.Sprintf("(%d)", h.Status)
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, " ")
	}

	home := status(site.URL + "/")
	if got, want := events(home), "queued fetched(200) write_sent:index write_done:written queued fetched(200)"; got != want {
		t.Errorf("history of the start page = %s\nwant %s", got, want)
	}
	a := status(site.URL + "/a.html")
	if got, want := events(a), "queued fetched(200) write_sent:index write_done:written"; got != want {
		t.Errorf("history of a page = %s\nwant %s", got, want)
	}
	if q := a.History[0]; q.Via != site.URL+"/" || q.Queue != "index_follow" || q.Depth != 1 || q.Source != "docs" {
		t.Errorf("queued event = %+v, want found on the start page, index_follow, depth 1", q)
	}
	if f := a.History[1]; f.Bytes == 0 || f.Seconds <= 0 {
		t.Errorf("fetched event = %+v, want its size and duration", f)
	}
	if got, want := events(status(site.URL+"/missing.html")), "queued error:http_404(404)"; got != want {
		t.Errorf("history of a 404 = %s, want %s", got, want)
	}
	old := status(site.URL + "/old.html")
	if got, want := events(old), "queued fetched(301)"; got != want || old.History[1].Detail != site.URL+"/new.html" {
		t.Errorf("history of a redirect = %s %+v, want %s to /new.html", got, old.History, want)
	}
	if got, want := events(status(site.URL+"/new.html")), "queued fetched(200) write_sent:index write_done:written"; got != want {
		t.Errorf("history of a redirect target = %s, want %s", got, want)
	}
	if st := status(site.URL + "/new.html"); st.History[0].Via != site.URL+"/old.html" || st.History[0].Queue != "redirect" {
		t.Errorf("a redirect target's queued event = %+v, want via /old.html in the redirect queue", st.History[0])
	}
	private := status(site.URL + "/private/p.html")
	if got, want := events(private), "queued excluded:robots"; got != want || !strings.Contains(private.History[1].Detail, "Disallow: /private") {
		t.Errorf("history of a URL robots.txt disallows = %s %+v, want %s with the robots.txt line", got, private.History, want)
	}
	if got, want := events(status(site.URL+"/quiet.html")), "queued fetched(200)"; got != want {
		t.Errorf("history of a noindex page = %s, want %s", got, want)
	}

	// The text form says the same for people.
	var text bytes.Buffer
	statusOfURL(&text, cfg, set, front, site.URL+"/a.html", false)
	for _, want := range []string{
		site.URL + "/a.html\n",
		"  source docs, fetched, last status 200, depth 1, queue index_follow\n",
		"  found on " + site.URL + "/\n",
		"history, oldest first:\n",
		"queued       queue index_follow, depth 1, source docs, via " + site.URL + "/\n",
		"write_done   written\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("status -url text lacks %q:\n%s", want, text.String())
		}
	}
}

func TestStatusURLShowsTheHistoryKeptInTheSharedStore(t *testing.T) {
	t.Parallel()
	site := opsSite(t, nil)
	name := estest.Index(t)
	cfg, set, _ := writeConfig(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0, bulk_flush_interval: 50ms}
cluster: {state_index: %s-state, node_name: a, partitions: 4, lease_ttl: 3s}
allow_private_networks: true
sources:
  - name: docs
    start_urls: [%q]
`, estest.URL(t), name, name, site.URL+"/"))
	if code := crawlOnce(context.Background(), cfg, set, jsonOutput(io.Discard, io.Discard), ""); code != exitOK {
		t.Fatalf("crawl exit %d", code)
	}
	front, err := openClusterStatus(cfg)
	if err != nil || front == nil {
		t.Fatalf("open the shared store: %v", err)
	}
	defer front.Close()
	var out bytes.Buffer
	if code := statusOfURL(&out, cfg, set, front, site.URL+"/a.html", true); code != exitOK {
		t.Fatalf("status -url: exit %d", code)
	}
	var st urlStatus
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, h := range st.History {
		parts = append(parts, h.Event.String()+":"+h.Reason)
	}
	if got, want := strings.Join(parts, " "), "queued: fetched: write_sent:index write_done:created"; got != want {
		t.Errorf("history of a page = %s\nwant %s", got, want)
	}
	if q := st.History[0]; q.Via != site.URL+"/" || q.Depth != 1 || q.Source != "docs" {
		t.Errorf("queued event = %+v, want found on the start page at depth 1", q)
	}
	if f := st.History[1]; f.Bytes == 0 || f.Seconds <= 0 {
		t.Errorf("fetched event = %+v, want its size and duration", f)
	}
}

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
	cfg, set, _ := writeConfig(t, fmt.Sprintf("output: {file: %s}\nallow_private_networks: true\n"+
		"sources: [{name: docs, start_urls: [%q], honored_query_params: [a, b], robots: {obey: false}}]\n",
		filepath.Join(dir, "docs.ndjson"), srv.URL+"/"))
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
		st := statusJSON(t, cfg, set, front, typed)
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
