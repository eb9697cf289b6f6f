package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/provider"
)

// logRecords parses JSON log lines.
func logRecords(t *testing.T, text string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", sc.Text(), err)
		}
		out = append(out, rec)
	}
	return out
}

func get(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, res.Status)
	}
	return string(b)
}

// runOneCycle runs `crawlspace run` in-process for one cycle and returns
// what its status server served during it.
func runOneCycle(t *testing.T, path string, o output, reportPath string, pages ...string) (served map[string]string) {
	t.Helper()
	var stderr bytes.Buffer
	cfg, set, ok := loadConfig(path, &stderr)
	if !ok {
		t.Fatal(stderr.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served = map[string]string{}
	var addr net.Addr
	hooks := serveHooks{
		listening: func(a net.Addr) { addr = a },
		cycleDone: func(*provider.Report, error) {
			for _, p := range pages {
				served[p] = get(t, "http://"+addr.String()+p)
			}
			cancel()
		},
	}
	if code := serve(ctx, cfg, set, o, reportPath, hooks); code != exitOK {
		t.Fatalf("run exit %d", code)
	}
	return served
}

func TestCredentialsAndAuthHeadersAppearInNoLogReportStatusExplainOrStore(t *testing.T) {
	esURL := estest.URL(t)
	index := estest.Index(t)
	const (
		sitePass = "site-Pa55-77c2d0"
		token    = "hdr-T0ken-5e8a41"
		esPass   = "es-Pa55-3b1f9e"
	)
	siteAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:"+sitePass))
	secrets := []string{sitePass, token, esPass, siteAuth[len("Basic "):],
		base64.StdEncoding.EncodeToString([]byte("crawler:" + esPass))}
	// robots.txt is public: the crawler fetches it without the source's credentials.
	site := opsSite(t, func(r *http.Request) bool {
		return r.URL.Path == "/robots.txt" || r.Header.Get("Authorization") == siteAuth && r.Header.Get("X-Api-Token") == token
	})
	dir := t.TempDir()
	_, _, path := writeConfig(t, fmt.Sprintf(`
elasticsearch:
  addresses: [%q]
  index: %s
  replicas: 0
  username: crawler
  password: %s
allow_private_networks: true
metrics_addr: 127.0.0.1:0
log: {format: json, level: debug}
sources:
  - name: intranet
    start_urls: [%q]
    auth: {username: alice, password: %s}
    headers: {X-Api-Token: %s}
`, esURL, index, esPass, site.URL+"/", sitePass, token))
	var logs, summary lockedBuffer
	reportPath := filepath.Join(dir, "report.json")
	served := runOneCycle(t, path, jsonOutput(&logs, &summary), reportPath, "/", "/metrics", "/status.json")

	texts := map[string]string{"log": logs.String(), "summary": summary.String()}
	for p, body := range served {
		texts["served "+p] = body
	}
	raw, err := os.ReadFile(reportPath)
	if err != nil {
		t.Fatal(err)
	}
	texts["report"] = string(raw)
	var report provider.Report
	if err := json.Unmarshal(raw, &report); err != nil {
		t.Fatal(err)
	}
	// The credentials were used: every page answered, none with a 401.
	if report.Total.Fetched != 8 || report.Total.Created != 4 || report.Total.Reasons["http_401"] != 0 {
		t.Fatalf("the crawl did not get through the site's authentication: %s", raw)
	}

	// status and status -url for every URL the store knows.
	var stderr bytes.Buffer
	cfg, set, _ := loadConfig(path, &stderr)
	front, err := frontier.Open(cfg.StateDir, frontier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	frontier.ForEach(front, frontier.Query{}, func(r frontier.Record) error { urls = append(urls, r.URL); return nil })
	var statusOut bytes.Buffer
	list, err := sourceStatuses(cfg, front)
	if err != nil {
		t.Fatal(err)
	}
	printStatuses(&statusOut, list)
	for _, u := range urls {
		statusOfURL(&statusOut, cfg, set, front, u, true)
		statusOfURL(&statusOut, cfg, set, front, u, false)
	}
	front.Close()
	texts["status"] = statusOut.String()
	// explain, live (robots.txt read with the source's credentials) and offline.
	var explainOut bytes.Buffer
	explain(append([]string{"-config", path, "-json"}, urls...), &explainOut, &explainOut)
	explain(append([]string{"-config", path, "-offline"}, urls...), &explainOut, &explainOut)
	texts["explain"] = explainOut.String()
	if !strings.Contains(texts["explain"], `"auth":"basic as alice"`) {
		t.Errorf("explain does not name the authentication:\n%s", texts["explain"])
	}
	if !strings.Contains(texts["status"], "write_done") {
		t.Errorf("status -url shows no index acknowledgement:\n%s", texts["status"])
	}

	// Every file of the state store, byte for byte.
	filepath.WalkDir(cfg.StateDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, rerr := os.ReadFile(p)
			if rerr != nil {
				t.Fatal(rerr)
			}
			texts["state store "+p] = string(b)
		}
		return nil
	})

	if len(logRecords(t, texts["log"])) < 15 {
		t.Errorf("only %d log lines at debug level:\n%s", len(logRecords(t, texts["log"])), texts["log"])
	}
	for name, text := range texts {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s contains the secret %q", name, s)
			}
		}
	}
}

func TestEveryLogLineAboutAURLNamesItsSourceAndReason(t *testing.T) {
	site := opsSite(t, nil)
	dir := t.TempDir()
	cfg, set, _ := writeConfig(t, fmt.Sprintf(`
output: {file: %s}
allow_private_networks: true
sources:
  - name: docs
    start_urls: [%q]
`, filepath.Join(dir, "docs.ndjson"), site.URL+"/"))
	var logs lockedBuffer
	if code := crawlOnce(context.Background(), cfg, set, jsonOutput(&logs, io.Discard), ""); code != exitOK {
		t.Fatalf("crawl exit %d", code)
	}
	recs := logRecords(t, logs.String())
	about := 0
	msgs := map[string]int{}
	for _, rec := range recs {
		u, ok := rec["url"].(string)
		if !ok {
			continue
		}
		about++
		msg, _ := rec["msg"].(string)
		msgs[msg]++
		if rec["source"] != "docs" {
			t.Errorf("log line about %s lacks its source: %v", u, rec)
		}
		switch msg {
		case "fetch failed", "excluded", "not indexed", "index write failed", "temporary failure, retrying later":
			if r, _ := rec["reason"].(string); r == "" {
				t.Errorf("%q line lacks its reason: %v", msg, rec)
			}
		}
		switch msg {
		case "fetch failed", "fetched", "unchanged", "not indexed":
			if _, ok := rec["status"].(float64); !ok && rec["err"] == nil {
				t.Errorf("%q line lacks its status: %v", msg, rec)
			}
		}
	}
	// The site gives every kind of line: make sure they were checked.
	for _, msg := range []string{"fetched", "fetch failed", "excluded", "not indexed", "index write acknowledged"} {
		if msgs[msg] == 0 {
			t.Errorf("no %q line about a URL; lines: %v", msg, msgs)
		}
	}
	if about < 10 {
		t.Errorf("only %d lines about URLs", about)
	}
}
