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
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/provider"
)

// A host whose robots.txt asks for a Crawl-delay past
// politeness.max_crawl_delay is named, with the delay asked and the one
// kept, by status (for its source and for a URL of the host) and by
// explain, which reads robots.txt live.
func TestStatusAndExplainNameAHostsCrawlDelayAndItsCap(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			io.WriteString(w, "User-agent: *\nCrawl-delay: 86400\n")
			return
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<html><head><title>home</title></head><body><a href="/a.html">a</a></body></html>`)
	}))
	t.Cleanup(srv.Close)
	cfg, set, path := writeConfig(t, fmt.Sprintf(`
output: {file: %s}
allow_private_networks: true
sources:
  - name: docs
    start_urls: [%q]
    politeness: {max_crawl_delay: 100ms}
`, filepath.Join(t.TempDir(), "docs.ndjson"), srv.URL+"/"))
	if code := crawlOnce(context.Background(), cfg, set, jsonOutput(io.Discard, io.Discard), ""); code != exitOK {
		t.Fatalf("crawl exit %d", code)
	}
	want := provider.CrawlDelay{Host: srv.URL, Source: "docs", Asked: 24 * time.Hour, Delay: 100 * time.Millisecond, Capped: true}
	const said = "100ms (robots.txt Crawl-delay 24h0m0s, cut to politeness.max_crawl_delay)"

	front, err := frontier.Open(cfg.StateDir, frontier.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()
	list, err := sourceStatuses(cfg, front)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || len(list[0].CrawlDelays) != 1 || list[0].CrawlDelays[0] != want {
		t.Errorf("status of the source: Crawl-delays %+v, want [%+v]", list[0].CrawlDelays, want)
	}
	var text bytes.Buffer
	printStatuses(&text, list)
	if line := "crawl-delay: " + srv.URL + " keeps " + said; !strings.Contains(text.String(), line) {
		t.Errorf("status prints\n%s\nwithout %q", text.String(), line)
	}

	var out bytes.Buffer
	if code := statusOfURL(&out, cfg, set, front, srv.URL+"/a.html", true); code != exitOK {
		t.Fatalf("status -url: exit %d", code)
	}
	var st urlStatus
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if st.HostDelay == nil || *st.HostDelay != want {
		t.Errorf("status -url: host_delay %+v, want %+v", st.HostDelay, want)
	}
	out.Reset()
	statusOfURL(&out, cfg, set, front, srv.URL+"/a.html", false)
	if line := "the host's delay: " + said; !strings.Contains(out.String(), line) {
		t.Errorf("status -url prints\n%s\nwithout %q", out.String(), line)
	}

	code, stdout, stderr := runExplainCmd("-config", path, "-json", srv.URL+"/a.html")
	if code != exitOK {
		t.Fatalf("explain exit %d: %s", code, stderr)
	}
	if lines := decodeLines(t, stdout); len(lines) != 1 || lines[0].Delay != said {
		t.Errorf("explain: %+v, want delay %q", lines, said)
	}
	code, stdout, _ = runExplainCmd("-config", path, "-offline", srv.URL+"/a.html")
	if code != exitOK || !strings.Contains(stdout, "DELAY") {
		t.Errorf("explain -offline: exit %d\n%s\nwant a DELAY column", code, stdout)
	}
}
