package provider_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/provider"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/sink"
)

// TestFetchThroughAProxyWithCredentialsLogsNoPassword crawls through a
// proxy whose URL carries a password and that refuses every request: the
// failure is logged, reported and stored, the password nowhere.
func TestFetchThroughAProxyWithCredentialsLogsNoPassword(t *testing.T) {
	t.Parallel()
	const secret = "pr0xy-S3cret"
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "who are you", http.StatusProxyAuthRequired)
	}))
	defer proxy.Close()
	proxyURL := strings.Replace(proxy.URL, "http://", "http://crawler:"+secret+"@", 1)
	cfg, _ := testConfig(t, fmt.Sprintf("fetch: {proxy: %q}", proxyURL), "robots: {obey: false}", "https://intranet.example/")
	var log syncBuffer
	c := crawltest.NewLogged(t, cfg, slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})))
	report, err := c.Crawl(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	failed := log.lines("fetch failed")
	if len(failed) != 1 || !strings.Contains(failed[0], "Proxy Authentication Required") {
		t.Fatalf("fetch failures logged: %q, want the proxy's refusal", failed)
	}
	texts := map[string]string{"log": log.String(), "report": fmt.Sprintf("%+v", report.Examples)}
	err = filepath.WalkDir(cfg.StateDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		texts[path] = string(raw)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for where, text := range texts {
		if strings.Contains(text, secret) {
			t.Errorf("the proxy's password is in the %s", where)
		}
	}
}

// TestBadProxyURLIsNamedWithoutItsPassword gives the crawler, past
// validation, a proxy URL that does not parse: Go's parse error quotes the
// URL, and the crawler's error must not.
func TestBadProxyURLIsNamedWithoutItsPassword(t *testing.T) {
	t.Parallel()
	const secret = "pr0xy-S3cret"
	cfg, _ := testConfig(t, "", "", "http://127.0.0.1:9/")
	cfg.Fetch.Proxy = "http://crawler:" + secret + "@proxy.example:badport"
	set, err := rules.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = provider.New(cfg, set, sink.Opener(context.Background(), cfg), nil)
	if err == nil {
		t.Fatal("a crawler opened with a proxy URL that does not parse")
	}
	if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "fetch.proxy") {
		t.Errorf("error %q: want fetch.proxy named without the password", err)
	}
}
