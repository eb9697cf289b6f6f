package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/crawlspace/crawlspace/internal/chromiumtest"
	"github.com/crawlspace/crawlspace/provider"
)

// artifactDir is where tests leave files for people to look at:
// $CRAWLSPACE_TEST_ARTIFACTS, else out/test-artifacts in the repository
// (ignored by git).
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CRAWLSPACE_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "out", "test-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// headless runs chromium on url with extra flags and returns its stdout.
func headless(t *testing.T, chromium, url string, flags ...string) string {
	t.Helper()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir()}, flags...)
	args = append(args, url)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), chromium, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(flags, " "), err, stderr.String())
	}
	return stdout.String()
}

// service runs `crawlspace run` in-process against cfgPath until the test
// ends, and returns the status server's base URL once the first cycle has
// been reported.
func service(t *testing.T, cfgPath string) (base string, first *provider.Report) {
	t.Helper()
	var stderr bytes.Buffer
	cfg, set, ok := loadConfig(cfgPath, &stderr)
	if !ok {
		t.Fatal(stderr.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan net.Addr, 1)
	cycles := make(chan *provider.Report, 1)
	var once sync.Once
	hooks := serveHooks{
		listening: func(a net.Addr) { addrs <- a },
		cycleDone: func(r *provider.Report, err error) {
			if err != nil {
				t.Errorf("cycle failed: %v", err)
			}
			once.Do(func() { cycles <- r })
		},
	}
	var logs lockedBuffer
	done := make(chan int)
	go func() { done <- serve(ctx, cfg, set, jsonOutput(&logs, &lockedBuffer{}), "", hooks) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("run exit %d; log:\n%s", code, logs.String())
		}
	})
	select {
	case a := <-addrs:
		base = "http://" + a.String()
	case code := <-done:
		t.Fatalf("run exited with %d before serving; log:\n%s", code, logs.String())
	}
	return base, <-cycles
}

var nextDiscovery = regexp.MustCompile(`discovery \(start URLs, sitemaps, feeds\) in [1-5]?[0-9]m[0-9]+s \(\d{4}-\d\d-\d\d \d\d:\d\d\), every 1h;`)

func TestRunServesAStatusPageThatChromiumRenders(t *testing.T) {
	chromium := chromiumtest.Path(t)
	site := httptest.NewServer(http.FileServer(http.Dir(filepath.Join("..", "..", "testdata", "site"))))
	defer site.Close()
	dir := t.TempDir()
	_, _, path := writeConfig(t, fmt.Sprintf(`
output: {file: %s}
allow_private_networks: true
metrics_addr: 127.0.0.1:0
sources:
  - name: northwind
    start_urls: [%q]
    max_age: 48h
`, filepath.Join(dir, "docs.ndjson"), site.URL+"/"))
	base, report := service(t, path)
	if report == nil || report.Total.Fetched != 17 {
		t.Fatalf("first cycle report = %+v, want the demo site's 17 responses (12 pages, a 404 and 4 documents)", report)
	}

	// The metrics of the running service, scraped as Prometheus does.
	metrics := get(t, base+"/metrics")
	for _, want := range []string{
		`crawlspace_pages_fetched_total{code="2xx",source="northwind"} 16`,
		`crawlspace_pages_fetched_total{code="4xx",source="northwind"} 1`,
		`crawlspace_documents_total{outcome="written",source="northwind"} 15`,
		`crawlspace_urls_by_reason_total{reason="http_404",source="northwind"} 1`,
		`crawlspace_cycles_total 1`,
	} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	dom := headless(t, chromium, base+"/", "--dump-dom")
	for _, want := range []string{
		"<title>crawlspace status</title>",
		"Idle. Next cycle in",
		`<td class="l">northwind</td><td>17</td>`,
		"<h2>Last cycle</h2>",
		"<code>http_404</code>",
		site.URL + "/policies/travel.html",
		"0 URL(s) due for an aged check (max_age 48h)",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page chromium rendered lacks %q", want)
		}
	}
	// The next discovery is due within the hour from the cycle's end, however long the
	// render took on a busy machine.
	if !nextDiscovery.MatchString(dom) {
		t.Errorf("the page chromium rendered does not match %s", nextDiscovery)
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}

	shot := filepath.Join(artifactDir(t), "status-page.png")
	os.Remove(shot)
	headless(t, chromium, base+"/", "--screenshot="+shot, "--window-size=1200,900")
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	if len(png) < 10_000 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("screenshot %s is %d bytes, not a rendered page", shot, len(png))
	}
	t.Logf("screenshot of the status page: %s", shot)
}
