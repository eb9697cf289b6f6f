package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/provider"
	"github.com/crawlspace/crawlspace/rules"
)

// opsSite serves a small site with good pages, a 404, a 500, a redirect,
// a page robots.txt disallows and a noindex page. With auth set, every
// request must carry it, else 401.
func opsSite(t *testing.T, auth func(*http.Request) bool) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, "<html><head><title>Page %s</title></head><body>%s</body></html>", r.URL.Path, body)
		}
	}
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "User-agent: *\nDisallow: /private\n")
	})
	mux.HandleFunc("/{$}", page(`<a href="/a.html">a</a> <a href="/b.html">b</a> <a href="/missing.html">m</a>
		<a href="/broken.html">x</a> <a href="/old.html">o</a> <a href="/private/p.html">p</a> <a href="/quiet.html">q</a>`))
	mux.HandleFunc("/a.html", page(`<p>The warehouse in Osaka.</p><a href="/b.html">b</a>`))
	mux.HandleFunc("/b.html", page(`<p>Annual report.</p>`))
	mux.HandleFunc("/new.html", page(`<p>Where the old page went.</p>`))
	mux.HandleFunc("/quiet.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<html><head><meta name="robots" content="noindex"></head><body>hidden</body></html>`)
	})
	mux.HandleFunc("/old.html", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/new.html", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/broken.html", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	})
	var h http.Handler = mux
	if auth != nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !auth(r) {
				http.Error(w, "who are you", http.StatusUnauthorized)
				return
			}
			mux.ServeHTTP(w, r)
		})
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// writeConfig writes yaml as crawltest.WriteConfig does and loads it the
// way the commands do.
func writeConfig(t *testing.T, yaml string) (*config.Config, *rules.Set, string) {
	t.Helper()
	path := crawltest.WriteConfig(t, yaml)
	var stderr bytes.Buffer
	cfg, set, ok := loadConfig(path, &stderr)
	if !ok {
		t.Fatalf("config:\n%s", stderr.String())
	}
	return cfg, set, path
}

// lockedBuffer collects a log written from many goroutines.
type lockedBuffer = crawltest.LockedBuffer

// quietOutput logs JSON at debug level into log and the summary into summary, with no progress.
func jsonOutput(log io.Writer, summary io.Writer) output {
	return output{log: slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})), summary: summary}
}

// summaryLine is the per-source line of Report.Summary.
var summaryLine = regexp.MustCompile(`^  (\S+)\s+fetched (\d+), created (\d+), updated (\d+), unchanged (\d+), deleted (\d+), written (\d+), errors (\d+)$`)
var reasonLine = regexp.MustCompile(`^ {15}\s*(\S+)\s+(\d+)$`)
var headLine = regexp.MustCompile(`^crawl finished in ([0-9.]+)s into (.+)$`)

// parseSummary reads the printed summary back into counts by source ("total" included).
func parseSummary(t *testing.T, text string) (secs float64, sinkName string, counts map[string]*provider.Counts, warnings []string) {
	t.Helper()
	counts = map[string]*provider.Counts{}
	var cur *provider.Counts
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
		switch m := summaryLine.FindStringSubmatch(line); {
		case m != nil:
			cur = &provider.Counts{Fetched: atoi(m[2]), Created: atoi(m[3]), Updated: atoi(m[4]), Unchanged: atoi(m[5]),
				Deleted: atoi(m[6]), Written: atoi(m[7]), Errors: atoi(m[8]), Reasons: map[string]int{}}
			counts[m[1]] = cur
		case reasonLine.MatchString(line) && cur != nil:
			r := reasonLine.FindStringSubmatch(line)
			cur.Reasons[r[1]] = atoi(r[2])
		case headLine.MatchString(line):
			h := headLine.FindStringSubmatch(line)
			secs, _ = strconv.ParseFloat(h[1], 64)
			sinkName = h[2]
		case strings.HasPrefix(line, "  warning: "):
			warnings = append(warnings, strings.TrimPrefix(line, "  warning: "))
		default:
			t.Errorf("summary line not understood: %q", line)
		}
	}
	return secs, sinkName, counts, warnings
}

func TestSummaryAndReportFileGiveTheSameCounts(t *testing.T) {
	site := opsSite(t, nil)
	other := opsSite(t, nil)
	dir := t.TempDir()
	cfg, set, _ := writeConfig(t, fmt.Sprintf(`
output: {file: %s}
allow_private_networks: true
fetch: {insecure_skip_verify: true}
sources:
  - name: docs
    start_urls: [%q]
  - name: news
    start_urls: [%q]
    exclude: [/b.html]
`, filepath.Join(dir, "docs.ndjson"), site.URL+"/", other.URL+"/"))
	var summary bytes.Buffer
	reportPath := filepath.Join(dir, "report.json")
	if code := crawlOnce(context.Background(), cfg, set, jsonOutput(io.Discard, &summary), reportPath); code != exitOK {
		t.Fatalf("crawl exit %d", code)
	}
	raw, err := os.ReadFile(reportPath)
	if err != nil {
		t.Fatal(err)
	}
	var report provider.Report
	if err := json.Unmarshal(raw, &report); err != nil {
		t.Fatal(err)
	}
	secs, sinkName, printed, warnings := parseSummary(t, summary.String())
	if fmt.Sprintf("%.1f", report.Seconds) != fmt.Sprintf("%.1f", secs) || sinkName != report.Sink {
		t.Errorf("summary head: %.1fs into %q; report: %vs into %q", secs, sinkName, report.Seconds, report.Sink)
	}
	if strings.Join(warnings, "\n") != strings.Join(report.Warnings, "\n") || len(warnings) == 0 {
		t.Errorf("summary warnings %q, report warnings %q (insecure_skip_verify must warn)", warnings, report.Warnings)
	}
	want := map[string]*provider.Counts{"total": &report.Total}
	for name, c := range report.Sources {
		want[name] = c
	}
	if len(printed) != len(want) {
		t.Errorf("summary has %d count lines, report %d: %q", len(printed), len(want), summary.String())
	}
	for name, w := range want {
		p := printed[name]
		if p == nil {
			t.Errorf("summary lacks %s", name)
			continue
		}
		type nums struct{ Fetched, Created, Updated, Unchanged, Deleted, Written, Errors int }
		pn := nums{p.Fetched, p.Created, p.Updated, p.Unchanged, p.Deleted, p.Written, p.Errors}
		wn := nums{w.Fetched, w.Created, w.Updated, w.Unchanged, w.Deleted, w.Written, w.Errors}
		if pn != wn {
			t.Errorf("%s: summary %+v, report %+v", name, pn, wn)
		}
		if fmt.Sprint(p.Reasons) != fmt.Sprint(w.Reasons) {
			t.Errorf("%s reasons: summary %v, report %v", name, p.Reasons, w.Reasons)
		}
		// Index failures are printed as the index_failed reason.
		if w.IndexFailures != p.Reasons["index_failed"] {
			t.Errorf("%s: %d index failures in the report, %d in the summary", name, w.IndexFailures, p.Reasons["index_failed"])
		}
	}
	// The crawl did what the site holds, so the comparison compared something.
	if d := report.Sources["docs"]; d == nil || d.Fetched != 8 || d.Written != 4 || d.Errors != 2 || report.Sources["news"].Reasons["excluded"] < 1 {
		t.Errorf("report sources = %s", raw)
	}
}
