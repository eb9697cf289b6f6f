package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/crawlspace/crawlspace/internal/chromiumtest"
	"github.com/crawlspace/crawlspace/internal/proctest"
	"github.com/crawlspace/crawlspace/render"
)

// browserProcesses lists the live processes whose command line names dir:
// Chromium passes its --user-data-dir, made under the crawler's TMPDIR, to
// every process of it.
func browserProcesses(dir string) []string {
	var out []string
	for _, p := range render.Processes() {
		if p.State == 'Z' {
			continue // a zombie holds nothing; its parent has yet to reap it
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
		if err != nil || !bytes.Contains(cmdline, []byte(dir)) {
			continue
		}
		out = append(out, fmt.Sprintf("%d %s", p.PID, strings.ReplaceAll(string(cmdline[:min(len(cmdline), 80)]), "\x00", " ")))
	}
	return out
}

// childOf is a child process of pid: the browser, the crawler's only one.
func childOf(pid int) int {
	for _, p := range render.Processes() {
		if p.PPID == pid {
			return p.PID
		}
	}
	return 0
}

// TestNoBrowserProcessOutlivesACrawlerKilledOrStopped starts `crawlspace
// crawl` in a child process on a page whose render never ends, and once
// Chromium is rendering it kills the crawler with SIGKILL, or stops it
// with SIGTERM: no process of the browser may remain.
func TestNoBrowserProcessOutlivesACrawlerKilledOrStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("runs crawlspace in a child process")
	}
	browser := chromiumtest.Path(t)
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		// hung stops the browser's main process first: a browser that
		// cannot notice its crawler is gone must be killed by the kernel.
		hung bool
	}{
		{"killed", syscall.SIGKILL, false},
		{"killed while the browser hangs", syscall.SIGKILL, true},
		{"terminated", syscall.SIGTERM, false},
	} {
		sig := tc.sig
		t.Run(tc.name, func(t *testing.T) {
			rendering := make(chan struct{}, 1)
			site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/api" {
					// The page's script asks; the answer never comes while the crawler lives.
					select {
					case rendering <- struct{}{}:
					default:
					}
					<-r.Context().Done()
					return
				}
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprint(w, `<!doctype html><title>x</title><p id="p"></p><script>fetch('/api').then(r => r.text()).then(t => { document.getElementById('p').textContent = t; });</script>`)
			}))
			t.Cleanup(site.Close)
			// Chromium's socket path must stay short: not t.TempDir().
			tmp, err := os.MkdirTemp("", "cs")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(tmp) })
			_, _, path := writeConfig(t, fmt.Sprintf(`
output: {file: %q}
allow_private_networks: true
browser: {path: %s}
sources:
  - name: site
    start_urls: [%q]
    render: {enabled: true, timeout: 10m}
`, filepath.Join(tmp, "docs.ndjson"), browser, site.URL+"/"))

			child, stderr, exited := startChild(t, "crawl\n-config\n"+path, "TMPDIR="+tmp)
			select {
			case <-rendering:
			case <-exited:
				t.Fatalf("the crawler ended before its page was rendering:\n%s", stderr.String())
			}
			if len(browserProcesses(tmp)) == 0 {
				t.Fatal("no browser process found while a page renders: the check below would prove nothing")
			}
			if tc.hung {
				main := childOf(child.Process.Pid)
				if main == 0 {
					t.Fatal("no process of the crawler found to stop")
				}
				if err := syscall.Kill(main, syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { syscall.Kill(main, syscall.SIGKILL) })
			}
			if err := child.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			<-exited
			// The kernel kills the browser as its parent dies, and the
			// browser's children end with it; that takes a moment after
			// the crawler's own exit.
			for _, p := range browserProcesses(tmp) {
				var pid int
				fmt.Sscan(p, &pid)
				proctest.Ended(t, pid)
			}
			if left := browserProcesses(tmp); len(left) > 0 {
				t.Errorf("browser processes outlived the crawler (%s):\n%s\n%s", sig, strings.Join(left, "\n"), stderr.String())
			}
		})
	}
}
