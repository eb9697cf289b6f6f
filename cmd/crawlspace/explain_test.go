package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// explainSite serves a robots.txt that disallows /private and counts its fetches.
func explainSite(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var robotsHits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			robotsHits.Add(1)
			w.Write([]byte("User-agent: *\nDisallow: /private\n"))
			return
		}
		w.Write([]byte("<html><body>page</body></html>"))
	}))
	t.Cleanup(srv.Close)
	return srv, &robotsHits
}

// explainConfig writes a config whose source starts at site; the line and
// column numbers the tests expect follow this layout.
func explainConfig(t *testing.T, site, exclude string) string {
	path := filepath.Join(t.TempDir(), "crawl.yaml")
	yaml := "allow_private_networks: true\n" + // 1
		"user_agent: \"crawlspace/0.1\"\n" + // 2
		"extra_fields: {extra_section: keyword}\n" + // 3
		"sources:\n" + // 4
		"  - name: docs\n" + // 5
		"    start_urls: [\"" + site + "/\"]\n" + // 6
		"    exclude: ['" + exclude + "']\n" + // 7
		"    crawl_rules:\n" + // 8
		"      - {match: {path: /news/}, index: false, priority: -1, add_meta: {section: news}}\n" // 9
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runExplainCmd(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = explain(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// decodeLines reads explain -json output, checking every line has the keys
// docs/commands.md lists, in their order: those up to key always, then auth,
// render and delay where they apply.
func decodeLines(t *testing.T, out string) []explanation {
	t.Helper()
	// auth comes only for a source with an auth block, render only for a
	// page that is rendered, delay only for a host the crawler pauses on.
	keys := []string{"url", "source", "crawl", "index", "follow", "priority", "reason", "rule", "fetch", "key", "auth", "render", "delay"}
	required := slices.Index(keys, "key") + 1
	var got []explanation
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		dec := json.NewDecoder(strings.NewReader(l))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("line %q does not start an object", l)
		}
		next := 0
		for dec.More() {
			tok, err := dec.Token()
			key, _ := tok.(string)
			i := slices.Index(keys[next:], key)
			if err != nil || i < 0 || next < required && i != 0 {
				t.Fatalf("line %q: key %v after %v, want the keys %v in order, those up to key all there", l, tok, keys[:next], keys)
			}
			next += i + 1
			var skip any
			if err := dec.Decode(&skip); err != nil {
				t.Fatal(err)
			}
		}
		if next < required {
			t.Fatalf("line %q ends before key", l)
		}
		var e explanation
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	return got
}

func TestExplainJSONGivesEachDecisionAndTheLineThatMadeIt(t *testing.T) {
	srv, _ := explainSite(t)
	cfg := explainConfig(t, srv.URL, "/drafts/")
	code, out, errOut := runExplainCmd("-config", cfg, "-json",
		srv.URL+"/page",
		strings.Replace(srv.URL, "http://", "HTTP://", 1)+"/a/../page#top",
		srv.URL+"/private/report",
		srv.URL+"/drafts/a",
		srv.URL+"/news/today",
		"http://elsewhere.example/",
		"mailto:someone@example.com",
	)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	got := decodeLines(t, out)
	wantLines := []explanation{
		{URL: srv.URL + "/page", Source: "docs", Crawl: true, Index: true, Follow: true},
		{URL: srv.URL + "/page", Source: "docs", Crawl: true, Index: true, Follow: true},
		{URL: srv.URL + "/private/report", Source: "docs", Reason: "robots", Rule: srv.URL + "/robots.txt:2: Disallow: /private"},
		{URL: srv.URL + "/drafts/a", Source: "docs", Reason: "excluded", Rule: cfg + ":7:15 sources[0].exclude[0]"},
		{URL: srv.URL + "/news/today", Source: "docs", Crawl: true, Index: false, Follow: true, Priority: -1,
			Reason: "rule_noindex", Rule: cfg + ":9:9 sources[0].crawl_rules[0]"},
		{URL: "http://elsewhere.example/", Source: "", Reason: "offsite", Rule: cfg + ":5:5 sources[0].stay_on_start_hosts"},
		{URL: "mailto:someone@example.com", Source: "", Reason: "invalid_url"},
	}
	if len(got) != len(wantLines) {
		t.Fatalf("%d lines, want %d:\n%s", len(got), len(wantLines), out)
	}
	checkLines(t, got, wantLines)
	if !strings.Contains(errOut, "mailto") {
		t.Errorf("the invalid URL's error is not on stderr: %q", errOut)
	}
}

// checkLines compares explain lines field by field; a want without Fetch
// expects the URL itself, no query filter rewrite, and one without Key
// expects Fetch.
func checkLines(t *testing.T, got, want []explanation) {
	t.Helper()
	for i, w := range want {
		if w.Fetch == "" && w.Reason != "invalid_url" {
			w.Fetch = w.URL
		}
		if w.Key == "" && w.Reason != "invalid_url" {
			w.Key = w.Fetch
		}
		g := got[i]
		for _, f := range []struct {
			name      string
			got, want any
		}{
			{"url", g.URL, w.URL}, {"source", g.Source, w.Source}, {"crawl", g.Crawl, w.Crawl},
			{"index", g.Index, w.Index}, {"follow", g.Follow, w.Follow}, {"priority", g.Priority, w.Priority},
			{"reason", g.Reason, w.Reason}, {"rule", g.Rule, w.Rule}, {"fetch", g.Fetch, w.Fetch},
			{"key", g.Key, w.Key}, {"auth", g.Auth, w.Auth},
		} {
			if f.got != f.want {
				t.Errorf("line %d (%s): %s = %v, want %v", i+1, w.URL, f.name, f.got, f.want)
			}
		}
	}
}

// Flags may also follow the URLs, as -offline does here.
func TestExplainOfflineDoesNotConsultRobots(t *testing.T) {
	srv, robotsHits := explainSite(t)
	cfg := explainConfig(t, srv.URL, "/drafts/")
	code, out, errOut := runExplainCmd("-config", cfg, "-json", srv.URL+"/private/report", "-offline", srv.URL+"/drafts/a")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	got := decodeLines(t, out)
	if len(got) != 2 || !got[0].Crawl || got[0].Reason != "" || got[0].Rule != "" || got[1].Reason != "excluded" {
		t.Errorf("offline decisions: %+v", got)
	}
	if n := robotsHits.Load(); n != 0 {
		t.Errorf("robots.txt fetched %d times offline", n)
	}
}

func TestExplainTextIsOneAlignedLinePerURL(t *testing.T) {
	srv, _ := explainSite(t)
	cfg := explainConfig(t, srv.URL, "/drafts/")
	code, out, _ := runExplainCmd("-config", cfg, "-offline", srv.URL+"/page", srv.URL+"/drafts/a")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != exitOK || len(lines) != 3 {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	col := strings.Index(lines[0], "REASON")
	if col < 0 || !strings.Contains(lines[1], "-") || !strings.HasPrefix(lines[2][col:], "excluded") {
		t.Errorf("columns not aligned:\n%s", out)
	}
	if !strings.Contains(lines[1], "docs") || !strings.Contains(lines[1], "yes") {
		t.Errorf("allowed line: %q", lines[1])
	}
}

func TestExplainBadConfigExitsTwoWithPositionedErrors(t *testing.T) {
	cfg := explainConfig(t, "http://127.0.0.1:9", `regexp:/(?=draft)`)
	code, out, errOut := runExplainCmd("-config", cfg, "http://127.0.0.1:9/")
	if code != exitUsage || out != "" {
		t.Errorf("exit %d, stdout %q", code, out)
	}
	if !strings.Contains(errOut, cfg+":7:15: sources[0].exclude[0]: the lookahead (?=...) is not supported") {
		t.Errorf("stderr: %q", errOut)
	}
	if code, _, _ := runExplainCmd("http://x/"); code != exitUsage {
		t.Errorf("without -config: exit %d", code)
	}
	if code, _, _ := runExplainCmd("-config", cfg); code != exitUsage {
		t.Errorf("without URLs: exit %d", code)
	}
}

// writeYAML writes a config file and returns its path.
func writeYAML(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "crawl.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// explain shows the rewrite: the URL as found, which the rules judge, and
// the URL the query filter makes of it, which would be fetched. Funnelback's
// exclude and FDSE's follow_query_strings: false refuse the URL as found.
func TestExplainShowsTheURLAsFoundAndTheURLFetched(t *testing.T) {
	cfg := writeYAML(t, "sources:\n"+ // 1
		"  - name: docs\n"+ // 2
		"    start_urls: [\"http://docs.example/\"]\n"+ // 3
		"    exclude: ['regexp:search\\?date=|\\?OpenImageResource']\n"+ // 4
		"  - name: fdse\n"+ // 5
		"    start_urls: [\"http://fdse.example/\"]\n"+ // 6
		"    follow_query_strings: false\n") // 7
	code, out, errOut := runExplainCmd("-config", cfg, "-json", "-offline",
		"http://docs.example/search?date=2018-01-01&id=2",
		"http://docs.example/img?OpenImageResource",
		"http://docs.example/list?sort=asc&id=3#top",
		"http://fdse.example/file.pl?test",
	)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	checkLines(t, decodeLines(t, out), []explanation{
		{URL: "http://docs.example/search?date=2018-01-01&id=2", Fetch: "http://docs.example/search?id=2", Source: "docs",
			Reason: "excluded", Rule: cfg + ":4:15 sources[0].exclude[0]"},
		{URL: "http://docs.example/img?OpenImageResource", Fetch: "http://docs.example/img", Source: "docs",
			Reason: "excluded", Rule: cfg + ":4:15 sources[0].exclude[0]"},
		{URL: "http://docs.example/list?sort=asc&id=3", Fetch: "http://docs.example/list?id=3", Source: "docs",
			Crawl: true, Index: true, Follow: true},
		{URL: "http://fdse.example/file.pl?test", Fetch: "http://fdse.example/file.pl", Source: "fdse",
			Reason: "query_string", Rule: cfg + ":7:27 sources[1].follow_query_strings"},
	})

	_, text, _ := runExplainCmd("-config", cfg, "-offline", "http://docs.example/list?sort=asc", "http://docs.example/a")
	lines := strings.Split(text, "\n")
	if f := strings.Fields(lines[1]); len(f) < 2 || f[0] != "http://docs.example/list?sort=asc" || f[1] != "http://docs.example/list" {
		t.Errorf("text line for a rewritten URL: %q", lines[1])
	}
	if f := strings.Fields(lines[2]); len(f) < 3 || f[1] != "=" || f[2] != "=" {
		t.Errorf("text line for a URL fetched as found: %q", lines[2])
	}
}

// The URL as found keeps its parameters in the order the site wrote them:
// the rules and robots.txt judge it so, it is requested so (less what
// the query filter drops), and its key, under which it is stored and
// indexed, has them sorted.
func TestExplainJudgesTheURLAsTheSiteWroteItAndShowsItsKey(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			w.Write([]byte("User-agent: *\nDisallow: /list?sort=\nDisallow: /item?id=9$\n"))
			return
		}
		w.Write([]byte("<html><body>page</body></html>"))
	}))
	t.Cleanup(srv.Close)
	cfg := writeYAML(t, "allow_private_networks: true\nsources:\n  - name: docs\n    start_urls: [\""+srv.URL+"/\"]\n"+
		"    honored_query_params: [id, page]\n")
	code, out, errOut := runExplainCmd("-config", cfg, "-json",
		srv.URL+"/list?sort=asc&page=2",
		srv.URL+"/list?page=2&sort=asc&id=1",
		srv.URL+"/item?utm=x&id=9",
		srv.URL+`\images\photo.html`,
	)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	robots := srv.URL + "/robots.txt:2: Disallow: /list?sort="
	checkLines(t, decodeLines(t, out), []explanation{
		{URL: srv.URL + "/list?sort=asc&page=2", Fetch: srv.URL + "/list?page=2", Source: "docs", Reason: "robots", Rule: robots},
		{URL: srv.URL + "/list?page=2&sort=asc&id=1", Fetch: srv.URL + "/list?page=2&id=1", Key: srv.URL + "/list?id=1&page=2",
			Source: "docs", Crawl: true, Index: true, Follow: true},
		{URL: srv.URL + "/item?utm=x&id=9", Fetch: srv.URL + "/item?id=9", Source: "docs", Reason: "robots", Rule: srv.URL + "/robots.txt:3: Disallow: /item?id=9$"},
		{URL: srv.URL + "/images/photo.html", Source: "docs", Crawl: true, Index: true, Follow: true},
	})
}

// validate warns about a start URL the query filter rewrites, placed at
// the URL, and still exits 0: the crawl can run, fetching the rewrite.
func TestValidateWarnsAboutAStartURLTheQueryFilterRewritesAndExitsZero(t *testing.T) {
	cfg := writeYAML(t, "sources:\n  - name: docs\n    start_urls: [\"http://docs.example/list?sort=asc\"]\n")
	var out, errOut bytes.Buffer
	if code := validate([]string{"-config", cfg}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	want := "warning: " + cfg + ":3:18: sources[0].start_urls[0]: the query filter drops sort from start URL http://docs.example/list?sort=asc, so http://docs.example/list is fetched instead (list it in honored_query_params to keep it)\n"
	if errOut.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", errOut.String(), want)
	}
	if out.String() != cfg+": ok, 1 source(s)\n" {
		t.Errorf("stdout %q", out.String())
	}
}

// A site behind basic authentication serves its robots.txt behind it too:
// explain reads it with the source's credentials, as the crawl does, so it
// refuses what the crawl refuses instead of taking the 401 for "everything
// allowed".
func TestExplainReadsRobotsTxtWithTheSourcesCredentials(t *testing.T) {
	var withAuth, without atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, pass, ok := r.BasicAuth(); !ok || user != "crawler" || pass != "s3cret" {
			without.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="intranet"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		withAuth.Add(1)
		if r.URL.Path == "/robots.txt" {
			w.Write([]byte("User-agent: *\nDisallow: /private\n"))
			return
		}
		w.Write([]byte("<html><body>page</body></html>"))
	}))
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "crawl.yaml")
	yaml := "allow_private_networks: true\n" +
		"sources:\n" +
		"  - name: intranet\n" +
		"    start_urls: [\"" + srv.URL + "/\"]\n" +
		"    auth: {username: crawler, password: s3cret}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runExplainCmd("-config", path, "-json", srv.URL+"/private/report", srv.URL+"/page")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	got := decodeLines(t, out)
	checkLines(t, got, []explanation{
		{URL: srv.URL + "/private/report", Source: "intranet", Reason: "robots", Rule: srv.URL + "/robots.txt:2: Disallow: /private", Auth: "basic as crawler"},
		{URL: srv.URL + "/page", Source: "intranet", Crawl: true, Index: true, Follow: true, Auth: "basic as crawler"},
	})
	if withAuth.Load() != 1 || without.Load() != 0 {
		t.Errorf("robots.txt requested %d times with the credentials and %d without, want once with them", withAuth.Load(), without.Load())
	}
}

func TestExplainSaysWhichPagesAreRenderedAndByWhichLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crawl.yaml")
	yaml := "allow_private_networks: true\n" + // 1
		"browser: {path: /bin/sh}\n" + // 2
		"sources:\n" + // 3
		"  - name: app\n" + // 4
		"    start_urls: [\"http://127.0.0.1:9/\"]\n" + // 5
		"    exclude: [/old/]\n" + // 6
		"    crawl_rules:\n" + // 7
		"      - {match: {path: /app/}, render: {wait: element, selector: \"#main\", timeout: 5s}}\n" // 8
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runExplainCmd("-config", path, "-json", "-offline",
		"http://127.0.0.1:9/app/inbox", "http://127.0.0.1:9/about", "http://127.0.0.1:9/old/app/")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	got := decodeLines(t, out)
	want := `wait element "#main", timeout 5s (` + path + `:8:9 sources[0].crawl_rules[0])`
	if len(got) != 3 || got[0].Render != want {
		t.Fatalf("render of /app/inbox: %+v\nwant %q", got, want)
	}
	if got[1].Render != "" || got[2].Render != "" {
		t.Errorf("a page the rules do not render, or one not crawled, said rendered: %q, %q", got[1].Render, got[2].Render)
	}
}
