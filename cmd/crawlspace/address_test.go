package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/provider"
)

// addressSite serves a home page linking to the URLs given, and an empty
// robots.txt; it returns the server and its port.
func addressSite(t *testing.T, links ...string) (*httptest.Server, string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>")
		for _, l := range links {
			fmt.Fprintf(w, `<a href="%s">x</a>`, l)
		}
		fmt.Fprint(w, "</body></html>")
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return srv, port
}

// explainBoth runs explain offline and live on urls and checks they say
// the same of each; it returns the lines and the offline stderr.
func explainBoth(t *testing.T, cfg string, urls ...string) ([]explanation, string) {
	t.Helper()
	code, offline, offErr := runExplainCmd(append([]string{"-config", cfg, "-json", "-offline"}, urls...)...)
	if code != exitOK {
		t.Fatalf("explain -offline: exit %d: %s", code, offErr)
	}
	code, live, liveErr := runExplainCmd(append([]string{"-config", cfg, "-json"}, urls...)...)
	if code != exitOK {
		t.Fatalf("explain: exit %d: %s", code, liveErr)
	}
	if offline != live {
		t.Errorf("offline and live disagree:\noffline:\n%slive:\n%s", offline, live)
	}
	return decodeLines(t, offline), offErr
}

// crawlAndRead runs one crawl cycle of cfg and returns the report and the
// stored record of each URL.
func crawlAndRead(t *testing.T, path string, urls ...string) (*provider.Report, map[string]frontier.Record) {
	t.Helper()
	var stderr bytes.Buffer
	cfg, set, ok := loadConfig(path, &stderr)
	if !ok {
		t.Fatalf("config:\n%s", stderr.String())
	}
	reportPath := filepath.Join(t.TempDir(), "report.json")
	if code := crawlOnce(context.Background(), cfg, set, jsonOutput(io.Discard, io.Discard), reportPath); code != exitOK {
		t.Fatalf("crawl exit %d", code)
	}
	raw, err := os.ReadFile(reportPath)
	if err != nil {
		t.Fatal(err)
	}
	report := new(provider.Report)
	if err := json.Unmarshal(raw, report); err != nil {
		t.Fatal(err)
	}
	front, err := frontier.Open(cfg.StateDir, frontier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()
	recs := map[string]frontier.Record{}
	for _, u := range urls {
		r, ok, err := front.Get(u)
		if err != nil || !ok {
			t.Fatalf("%s not stored (%v)", u, err)
		}
		recs[u] = r
	}
	return report, recs
}

// exampleDetail is the detail of the report's example for reason.
func exampleDetail(r *provider.Report, reason string) string {
	for _, e := range r.Examples {
		if e.Reason == reason {
			return e.Detail
		}
	}
	return ""
}

// IBM address rules decide an IP-literal host with no DNS: explain says so
// offline as it does live, and as the crawl does (its dialer refuses the
// address, with the rule). Before, offline explain said crawl yes.
func TestExplainJudgesIPLiteralsByAddressRulesOfflineAsLiveAndAsTheCrawl(t *testing.T) {
	srv, port := addressSite(t)
	forbidden := "http://127.0.0.2:" + port + "/x"
	forbidden6 := "http://[::1]:" + port + "/x"
	allowed := srv.URL + "/ok"
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<html><body><a href="%s">f</a> <a href="%s">f6</a> <a href="/ok">ok</a></body></html>`, forbidden, forbidden6)
	})
	dir := t.TempDir()
	cfg := writeYAML(t, fmt.Sprintf("state_dir: %s\noutput: {file: %s}\nallow_private_networks: true\nsources:\n"+
		"  - name: docs\n"+
		"    start_urls: [%q]\n"+
		"    stay_on_start_hosts: false\n"+
		"    rules: [\"allow address 127.0.0.1\", \"forbid address 0.0.0.0 0.0.0.0\"]\n", // line 8
		filepath.Join(dir, "state"), filepath.Join(dir, "docs.ndjson"), srv.URL+"/"))

	got, _ := explainBoth(t, cfg, forbidden, forbidden6, allowed)
	rule := cfg + ":8:40 sources[0].rules[1]"
	checkLines(t, got, []explanation{
		{URL: forbidden, Source: "docs", Reason: "forbidden_address", Rule: rule},
		{URL: forbidden6, Source: "docs", Reason: "forbidden_address", Rule: rule},
		{URL: allowed, Source: "docs", Crawl: true, Index: true, Follow: true},
	})

	// The crawl refuses the links as found, with the same reason and rule,
	// and never tries their robots.txt.
	report, recs := crawlAndRead(t, cfg, forbidden, forbidden6, allowed)
	for _, u := range []string{forbidden, forbidden6} {
		if r := recs[u]; r.State != frontier.Excluded || r.Reason != "forbidden_address" {
			t.Errorf("the crawl recorded %s as %s %q, explain says forbidden_address", u, r.State, r.Reason)
		}
	}
	if d := exampleDetail(report, "forbidden_address"); d != rule {
		t.Errorf("the crawl's rule for forbidden_address is %q, explain's %q", d, rule)
	}
	if r := recs[allowed]; r.State != frontier.Fetched {
		t.Errorf("the crawl recorded %s as %s %q, explain says crawl", allowed, r.State, r.Reason)
	}
}

// Without allow_private_networks a loopback literal is refused offline as
// live, and as a crawl starting there is (a config error); a host name's
// address is unknown offline, which explain says instead of guessing, while
// live it resolves the name and refuses it as the crawler's dialer does.
func TestExplainJudgesPrivateIPLiteralsOfflineAsLiveAndAsTheCrawl(t *testing.T) {
	srv, port := addressSite(t)
	literal := srv.URL + "/a"
	named := "http://localhost:" + port + "/"
	dir := t.TempDir()
	yaml := func(start string) string {
		return writeYAML(t, fmt.Sprintf("state_dir: %s\noutput: {file: %s}\nsources:\n  - name: docs\n    start_urls: [%q]\n    stay_on_start_hosts: false\n",
			filepath.Join(dir, "state"), filepath.Join(dir, "docs.ndjson"), start))
	}
	cfg := yaml(named)
	private := "allow_private_networks"

	got, offErr := explainBoth(t, cfg, literal)
	checkLines(t, got, []explanation{{URL: literal, Source: "docs", Reason: "forbidden_address", Rule: private}})

	code, out, errOut := runExplainCmd("-config", cfg, "-json", "-offline", named)
	if l := decodeLines(t, out); code != exitOK || len(l) != 1 || !l[0].Crawl {
		t.Errorf("offline, a host name: exit %d %s", code, out)
	}
	if !strings.Contains(errOut, "localhost: offline, a host name's address is unknown") {
		t.Errorf("offline explain does not say it cannot know the address: %q (for the literal: %q)", errOut, offErr)
	}
	_, out, _ = runExplainCmd("-config", cfg, "-json", named)
	checkLines(t, decodeLines(t, out), []explanation{{URL: named, Source: "docs", Reason: "forbidden_address", Rule: private}})

	// A crawl cannot start at the literal: the same refusal, as a config error.
	var stderr bytes.Buffer
	if _, _, ok := loadConfig(yaml(literal), &stderr); ok || !strings.Contains(stderr.String(), "outside its own source's crawl space: forbidden_address ("+private+")") {
		t.Errorf("a crawl starting at %s: %q", literal, stderr.String())
	}
}

// Behind fetch.proxy the crawler dials only the proxy and applies no
// address rule; explain agrees, offline and live, and says why.
func TestExplainAppliesNoAddressRuleBehindAProxyAsTheCrawlerDoes(t *testing.T) {
	cfg := writeYAML(t, "fetch: {proxy: \"http://proxy.example:3128\"}\nsources:\n  - name: docs\n"+
		"    start_urls: [\"http://docs.example/\"]\n    stay_on_start_hosts: false\n    rules: [\"forbid address 10.0.0.0 255.0.0.0\"]\n")
	code, out, errOut := runExplainCmd("-config", cfg, "-json", "-offline", "http://10.1.1.1/a")
	if l := decodeLines(t, out); code != exitOK || len(l) != 1 || !l[0].Crawl {
		t.Errorf("behind a proxy: exit %d %s", code, out)
	}
	if !strings.Contains(errOut, "fetch.proxy is set") {
		t.Errorf("stderr %q does not say why no address rule applies", errOut)
	}
}
