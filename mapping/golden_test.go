package mapping

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/crawlspace/crawlspace/config"
)

var update = flag.Bool("update", false, "rewrite the expected JSON of the golden pages")

// goldenDir holds real-world-shaped pages: NAME.html (the bytes as served),
// an optional NAME.http (the response headers, with a "URL:" line for the
// page's URL) and NAME.json (the expected Result).
const goldenDir = "../testdata/pages"

var goldenFetched = time.Date(2025, 1, 15, 9, 30, 0, 0, time.UTC)

// goldenConfig is the configuration every golden page is extracted with.
func goldenConfig(t testing.TB) *config.Config {
	return loadConfig(t, `user_agent: "ExampleBot/2.0 (+http://bot.example.test/)"
extra_fields:
  extra_category:
  extra_subject: keyword
  extra_tags: keyword
  extra_section: keyword
  extra_published: date
  extra_rating: double
sources:
  - name: golden
    start_urls: ["http://www.example.test/"]
    extraction:
      remove_elements: [header, footer, nav, aside]
      remove_classes: [noindex, Cookie-Banner, headerlink, related, sphinxsidebar]
      meta_mappings:
        - category:extra_category
        - Category:extra_category
        - DC.subject:extra_subject
        - DCTERMS.subject:extra_subject
        - article:tag:extra_tags
        - article:section:extra_section
        - article:published_time:extra_published
        - rating:extra_rating
`)
}

func goldenPage(t *testing.T, htmlPath string) Page {
	t.Helper()
	body, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimSuffix(filepath.Base(htmlPath), ".html")
	rawURL := "http://www.example.test/pages/" + name + ".html"
	header := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
	if f, err := os.Open(strings.TrimSuffix(htmlPath, ".html") + ".http"); err == nil {
		defer f.Close()
		mh, err := textproto.NewReader(bufio.NewReader(f)).ReadMIMEHeader()
		if err != nil && mh == nil {
			t.Fatalf("%s.http: %v", name, err)
		}
		header = http.Header(mh)
		if u := header.Get("Url"); u != "" {
			rawURL = u
		}
		header.Del("Url")
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return Page{URL: u, Header: header, Body: body, Depth: 1, Source: "golden", Fetched: goldenFetched}
}

func TestGoldenPages(t *testing.T) {
	cfg := goldenConfig(t)
	x := New(cfg, &cfg.Sources[0])
	pages, _ := filepath.Glob(filepath.Join(goldenDir, "*.html"))
	if len(pages) == 0 {
		t.Fatal("no golden pages")
	}
	for _, path := range pages {
		name := strings.TrimSuffix(filepath.Base(path), ".html")
		t.Run(name, func(t *testing.T) {
			res, err := x.Extract(goldenPage(t, path))
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(res); err != nil {
				t.Fatal(err)
			}
			got := buf.Bytes()
			if !utf8.ValidString(res.Doc.Body) || !utf8.ValidString(res.Doc.Title) {
				t.Error("document text is not valid UTF-8")
			}
			want := strings.TrimSuffix(path, ".html") + ".json"
			if *update {
				if err := os.WriteFile(want, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			exp, err := os.ReadFile(want)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, exp) {
				t.Errorf("result differs from %s (run with -update to accept):\n%s", want, lineDiff(string(exp), string(got)))
			}
		})
	}
}

// lineDiff shows the lines that differ, with their line numbers.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	n := max(len(w), len(g))
	shown := 0
	for i := 0; i < n && shown < 40; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want: %s\n  got:  %s\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}
