package monitor_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/monitor"
	"github.com/crawlspace/crawlspace/provider"
)

// fetch GETs url and returns its status, body and header.
func fetch(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(body), res.Header
}

func get(t *testing.T, url string) (string, http.Header) {
	t.Helper()
	code, body, hdr := fetch(t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", url, code, body)
	}
	return body, hdr
}

func TestStatusPageShowsProgressTheLastCycleReasonsAndWhatIsDue(t *testing.T) {
	site := mixedSite(t)
	cfg := fileConfig(t, site.URL)
	c := crawltest.New(t, cfg)
	m := monitor.NewMetrics("v1.2.3", []string{"site"})
	c.SetObserver(m)
	report, err := c.Crawl(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	states := monitor.NewStates(c.Frontier(), cfg)
	if _, err := states.Refresh(); err != nil {
		t.Fatal(err)
	}
	srv := monitor.NewServer(cfg, c, m, states, "crawlspace v1.2.3", nil)
	srv.CycleDone(report, errors.New("sink: elasticsearch unreachable"), time.Now().Add(10*time.Minute))
	web := httptest.NewServer(srv.Handler())
	defer web.Close()

	page, hdr := get(t, web.URL+"/")
	if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("Content-Type = %q", ct)
	}
	for _, want := range []string{
		"crawlspace v1.2.3",
		"Idle. Next cycle in 9m5", // 9m59s or 9m58s
		"The last cycle failed: sink: elasticsearch unreachable",
		`<td class="l">site</td><td>9</td>`, // fetched this cycle
		"<code>http_404</code></td><td>1</td>",
		`<a href="` + site.URL + `/missing">` + site.URL + `/missing</a>`,
		"<code>robots</code>",
		"discovery (start URLs, sitemaps, feeds) in 59m",
		"0 URL(s) due for an aged check (max_age 1h)",
		`<a href="/metrics">`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script") {
		t.Error("the status page must not need a script")
	}

	raw, _ := get(t, web.URL+"/status.json")
	var v monitor.View
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatal(err)
	}
	if v.Cycles != 1 || v.Running || len(v.Sources) != 1 || v.Sources[0].Cycle.Fetched != 9 || v.Sources[0].States["fetched"] < 5 {
		t.Errorf("status.json = %s", raw)
	}
	if v.Last == nil || v.Last.Total.Fetched != report.Total.Fetched {
		t.Errorf("status.json last cycle = %+v, want the report's counts", v.Last)
	}
}

// stubCrawler is a crawler whose report and pauses a test writes.
type stubCrawler struct {
	r      *provider.Report
	paused map[string]provider.Pause
}

func (s stubCrawler) Current() *provider.Report               { return s.r }
func (s stubCrawler) NextDiscovery(string) (time.Time, error) { return time.Time{}, nil }
func (s stubCrawler) Paused() map[string]provider.Pause       { return s.paused }

func TestStatusPageAndJSONSayASourceIsPausedSinceWhenAndByWhom(t *testing.T) {
	cfg := fileConfig(t, "http://127.0.0.1:1")
	cfg.Sources[0].Name = "site"
	since := time.Date(2026, 11, 27, 10, 12, 0, 0, time.UTC)
	srv := monitor.NewServer(cfg, stubCrawler{provider.NewReport("x"), map[string]provider.Pause{"site": {Since: since, By: "ops"}}},
		monitor.NewMetrics("t", nil), nil, "t", nil)
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	page, _ := get(t, web.URL+"/")
	if !strings.Contains(page, "paused</span> since 2026-11-27 10:12 by ops") {
		t.Errorf("the status page does not say the source is paused:\n%s", page)
	}
	var v monitor.View
	body, _ := get(t, web.URL+"/status.json")
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	if p := v.Sources[0].Paused; p == nil || !p.Since.Equal(since) || p.By != "ops" {
		t.Errorf("status.json's paused = %+v", p)
	}
}

func TestStatusPageEscapesWhatSitesControl(t *testing.T) {
	cfg := fileConfig(t, "http://127.0.0.1:1")
	cfg.Sources[0].Name = "site"
	r := provider.NewReport("file x")
	evil := `http://127.0.0.1:1/"><script>alert(1)</script>`
	r.Failure("site", evil, "http_404", `<img src=x onerror=alert(2)>`)
	r.Reason("site", "javascript:alert(3)", "invalid_url", "")
	srv := monitor.NewServer(cfg, stubCrawler{r: r}, monitor.NewMetrics("t", nil), nil, "t", nil)
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	page, _ := get(t, web.URL+"/")
	for _, bad := range []string{"<script>alert(1)", "<img src=x", `href="javascript:`} {
		if strings.Contains(page, bad) {
			t.Errorf("status page contains %q unescaped", bad)
		}
	}
	if !strings.Contains(page, "Cycle running since") {
		t.Error("a report without a finish time is a running cycle")
	}
}
