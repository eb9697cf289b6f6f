package monitor_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/internal/crawltest"
)

// mixedSite serves pages with every kind of outcome: good pages, a 404, a
// 500, a redirect, a page robots.txt disallows, a noindex page and a CSV
// file, of a type outside the default mime_types.
func mixedSite(t testing.TB) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, "<html><head><title>%s</title></head><body>%s</body></html>", r.URL.Path, body)
		}
	}
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "User-agent: *\nDisallow: /private\n")
	})
	mux.HandleFunc("/{$}", page(`<a href="/a">a</a> <a href="/b">b</a> <a href="/missing">m</a> <a href="/broken">x</a>
		<a href="/old">o</a> <a href="/private/secret">p</a> <a href="/quiet">q</a> <a href="/figures">d</a>`))
	mux.HandleFunc("/a", page(`<p>Page a.</p><a href="/b">b</a>`))
	mux.HandleFunc("/b", page(`<p>Page b.</p>`))
	mux.HandleFunc("/new", page(`<p>Where /old went.</p>`))
	mux.HandleFunc("/quiet", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<html><head><meta name="robots" content="noindex"></head><body>hidden</body></html>`)
	})
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/new", http.StatusMovedPermanently) })
	mux.HandleFunc("/broken", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) })
	mux.HandleFunc("/figures", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/csv")
		io.WriteString(w, "quarter,orders\nQ1,12840\n")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func fileConfig(t testing.TB, site string) *config.Config {
	dir := t.TempDir()
	return crawltest.Config(t, fmt.Sprintf(`
output: {file: %s}
allow_private_networks: true
sources:
  - name: site
    start_urls: [%q]
    max_age: 1h
`, filepath.Join(dir, "docs.ndjson"), site+"/"))
}

// scrape reads a Prometheus text exposition into series → value, the
// series written as the exposition writes them (labels sorted by name).
func scrape(t testing.TB, url string) map[string]float64 {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, res.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
