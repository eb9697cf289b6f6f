// Command rendercompare measures what rendering costs: the same synthetic
// site crawled by crawlspace twice, once served as plain HTML and read as
// fetched, once served as a single-page app (a shell whose script builds
// the page from a JSON API after load) and rendered in headless Chromium.
// For each it prints pages per second and the peak resident memory of the
// crawler with every process it started (Chromium's included), sampled
// from /proc every 250 ms (proportional set sizes, so the pages Chromium's
// processes share count once; a crawl over before the first sample gives
// the crawler's own peak resident size), and the ratio of the two.
//
//	go run ./bench/rendercompare -pages 500 -crawlspace /tmp/crawlspace
//
// bench/render builds crawlspace and runs it; bench/README.md has the
// numbers.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/crawlspace/crawlspace/render"
)

func main() {
	pages := flag.Int("pages", 500, "pages of the site")
	bin := flag.String("crawlspace", "crawlspace", "the crawlspace binary")
	browser := flag.String("browser", "/usr/bin/chromium", "Chromium")
	tabs := flag.Int("tabs", 4, "browser.tabs")
	parallel := flag.Int("parallel", 8, "politeness.max_parallel_per_host, both crawls")
	runs := flag.Int("runs", 1, "runs of each crawl; the best is kept")
	flag.Parse()
	if err := run(*pages, *bin, *browser, *tabs, *parallel, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "rendercompare:", err)
		os.Exit(1)
	}
}

type result struct {
	pages   int
	seconds float64
	peakRSS int64
}

func run(pages int, bin, browser string, tabs, parallel, runs int) error {
	plain, err := serve(pages, false)
	if err != nil {
		return err
	}
	spa, err := serve(pages, true)
	if err != nil {
		return err
	}
	var best [2]result
	for i := 0; i < runs; i++ {
		for j, tc := range []struct {
			url    string
			render bool
		}{{plain, false}, {spa, true}} {
			r, err := crawl(bin, browser, tc.url, tc.render, tabs, parallel)
			if err != nil {
				return err
			}
			if r.pages != pages {
				return fmt.Errorf("crawl (render %v) indexed %d pages of %d", tc.render, r.pages, pages)
			}
			if best[j].seconds == 0 || r.seconds < best[j].seconds {
				peak := max(best[j].peakRSS, r.peakRSS)
				best[j], best[j].peakRSS = r, peak
			}
		}
	}
	p, s := best[0], best[1]
	fmt.Printf("%d pages, politeness.max_parallel_per_host %d, browser.tabs %d, best of %d\n\n", pages, parallel, tabs, runs)
	fmt.Println("| crawl | pages/s | peak memory (PSS), crawler + browser |")
	fmt.Println("|---|---|---|")
	fmt.Printf("| plain HTML, read as fetched | %.1f | %d MiB |\n", float64(p.pages)/p.seconds, p.peakRSS>>20)
	fmt.Printf("| single-page app, rendered in Chromium | %.1f | %d MiB |\n", float64(s.pages)/s.seconds, s.peakRSS>>20)
	fmt.Printf("\nrendering costs %.1fx the time per page and %.1fx the peak memory\n", s.seconds/p.seconds, float64(s.peakRSS)/float64(p.peakRSS))
	return nil
}

// serve starts the site: page i links to pages 2i+1 and 2i+2, as plain
// HTML or as a shell whose script fetches the same content from /api.
func serve(pages int, spa bool) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	content := func(i int) (title, text string, links []string) {
		title = fmt.Sprintf("Page %d", i)
		text = strings.Repeat(fmt.Sprintf("Paragraph of page %d about lamps, chairs and tables. ", i), 40)
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < pages {
				links = append(links, fmt.Sprintf("/p/%d", c))
			}
		}
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/p/{i}", func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(r.PathValue("i"))
		if err != nil || i >= pages {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if spa {
			fmt.Fprint(w, `<!doctype html><html><head><title>App</title><link rel="stylesheet" href="/app.css"></head><body>
<img src="/logo.png"><div id="app"></div><script src="/app.js"></script></body></html>`)
			return
		}
		title, text, links := content(i)
		fmt.Fprintf(w, "<!doctype html><html><head><title>%s</title></head><body><h1>%s</h1><p>%s</p>", title, title, text)
		for _, l := range links {
			fmt.Fprintf(w, `<a href="%s">%s</a> `, l, l)
		}
		fmt.Fprint(w, "</body></html>")
	})
	mux.HandleFunc("/api/p/{i}", func(w http.ResponseWriter, r *http.Request) {
		i, _ := strconv.Atoi(r.PathValue("i"))
		title, text, links := content(i)
		w.Header().Set("Content-Type", "application/json")
		if links == nil {
			links = []string{} // a leaf page: no links, not null
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"title": title, "text": text, "links": links})
	})
	mux.HandleFunc("/app.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `fetch('/api' + location.pathname).then(r => r.json()).then(d => {
  document.title = d.title;
  document.getElementById('app').innerHTML = '<h1>' + d.title + '</h1><p>' + d.text + '</p>' +
    d.links.map(l => '<a href="' + l + '">' + l + '</a>').join(' ');
});`)
	})
	mux.HandleFunc("/app.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css")
		fmt.Fprint(w, "body { font-family: sans-serif; }")
	})
	go http.Serve(l, mux)
	return "http://" + l.Addr().String() + "/p/0", nil
}

func crawl(bin, browser, start string, render bool, tabs, parallel int) (result, error) {
	dir, err := os.MkdirTemp("", "rc")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "docs.ndjson")
	cfg := fmt.Sprintf(`output: {file: %q}
state_dir: %q
allow_private_networks: true
browser: {path: %s, tabs: %d}
sources:
  - name: bench
    start_urls: [%q]
    max_link_depth: 100
    politeness: {max_parallel_per_host: %d}
    render: {enabled: %v, wait: network_idle}
`, out, filepath.Join(dir, "state"), browser, tabs, start, parallel, render)
	path := filepath.Join(dir, "crawl.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return result{}, err
	}
	report := filepath.Join(dir, "report.json")
	cmd := exec.Command(bin, "crawl", "-config", path, "-quiet", "-report", report)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start0 := time.Now()
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	var peak int64
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if rss := treeRSS(cmd.Process.Pid); rss > 0 {
					mu.Lock()
					peak = max(peak, rss)
					mu.Unlock()
				}
			}
		}
	}()
	err = cmd.Wait()
	secs := time.Since(start0).Seconds()
	close(done)
	if err != nil {
		return result{}, fmt.Errorf("crawl: %v\n%s", err, stderr.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return result{}, err
	}
	// The file sink writes an action line and a document line per page.
	n := bytes.Count(data, []byte("\n")) / 2
	mu.Lock()
	defer mu.Unlock()
	if peak == 0 {
		// Done before the first sample (the plain crawl of a small site
		// takes under 250 ms): the crawler alone, its own peak resident
		// size, which for a single process is its PSS but for shared
		// libraries' pages.
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peak = ru.Maxrss << 10
		}
	}
	var rep struct {
		Total struct {
			Reasons map[string]int `json:"reasons"`
		} `json:"total"`
	}
	if raw, err := os.ReadFile(report); err == nil && json.Unmarshal(raw, &rep) == nil && len(rep.Total.Reasons) > 0 {
		fmt.Fprintf(os.Stderr, "render %v: reasons %v\n", render, rep.Total.Reasons)
	}
	return result{pages: n, seconds: secs, peakRSS: peak}, nil
}

// treeRSS sums the proportional set sizes of pid and all its descendants:
// the memory they take from the machine, shared pages counted once.
func treeRSS(pid int) int64 {
	parent := map[int]int{}
	for _, p := range render.Processes() {
		parent[p.PID] = p.PPID
	}
	var total int64
	for p := range parent {
		for q := p; q > 1; q = parent[q] {
			if q == pid {
				total += render.Memory(p)
				break
			}
		}
	}
	return total
}
