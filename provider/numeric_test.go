package provider_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/rules"
)

// countingServer is a loopback site on addr answering every path with a
// page, counting its requests.
func countingServer(t *testing.T, addr string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	var hits atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<title>secret %s</title>", r.URL.Path)
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestNumericHostsAreTheLoopbackAddressTheyNameForTheAddressRulesWithoutDNS(t *testing.T) {
	t.Parallel()
	target, hits := countingServer(t, "127.0.0.1:0")
	_, port, _ := net.SplitHostPort(target.Listener.Addr().String())
	// 2130706433, 0x7f.1, 0177.0.0.1 and 127.1 are all 127.0.0.1.
	numeric := []string{"2130706433", "0x7f.1", "0177.0.0.1", "127.1"}

	t.Run("a start URL is refused as a private address unless allowed", func(t *testing.T) {
		for _, host := range numeric {
			cfg := crawltest.Config(t, fmt.Sprintf("output: {file: %q}\nsources:\n  - name: s\n    start_urls: [\"http://%s:%s/\"]\n",
				filepath.Join(t.TempDir(), "out.ndjson"), host, port))
			if _, err := rules.Compile(cfg); err == nil || !strings.Contains(err.Error(), "forbidden_address") {
				t.Errorf("start URL on host %s: want a forbidden_address config error, got %v", host, err)
			}
		}
		if hits.Load() != 0 {
			t.Errorf("the loopback site got %d requests", hits.Load())
		}
		cfg, out := testConfig(t, "", "", fmt.Sprintf("http://0x7f.1:%s/", port))
		c, _ := crawlKeep(t, cfg)
		wantState(t, c, "http://127.0.0.1:"+port+"/", frontier.Fetched, "")
		if got := indexedURLs(t, out); len(got) != 1 || got[0] != "http://127.0.0.1:"+port+"/" {
			t.Errorf("indexed %v, want the page under its dotted address", got)
		}
	})

	t.Run("a link is refused by an address rule that names its IP", func(t *testing.T) {
		// The linking site is on another loopback address, which the rule allows.
		site, _ := countingServer(t, "127.0.0.2:0")
		var body strings.Builder
		for _, host := range numeric {
			fmt.Fprintf(&body, `<a href="http://%s:%s/%s.html">x</a>`, host, port, strings.ReplaceAll(host, ".", "-"))
		}
		site.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/robots.txt" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, "<title>links</title>%s", body.String())
		})
		before := hits.Load()
		cfg, _ := testConfig(t, "", "stay_on_start_hosts: false\nrules: [\"forbid address 127.0.0.1\"]", site.URL+"/")
		c, report := crawlKeep(t, cfg)
		for _, host := range numeric {
			u := fmt.Sprintf("http://127.0.0.1:%s/%s.html", port, strings.ReplaceAll(host, ".", "-"))
			// An IP-literal host is judged by the address rules as it is
			// found, like explain judges it: refused before any request.
			wantState(t, c, u, frontier.Excluded, "forbidden_address")
			unknown(t, c, fmt.Sprintf("http://%s:%s/%s.html", host, port, strings.ReplaceAll(host, ".", "-")))
		}
		if n := hits.Load() - before; n != 0 {
			t.Errorf("the forbidden address got %d requests", n)
		}
		if got := report.Total.Reasons["forbidden_address"]; got != len(numeric) {
			t.Errorf("report counts %d forbidden_address, want %d: %v", got, len(numeric), report.Total.Reasons)
		}
	})
}
