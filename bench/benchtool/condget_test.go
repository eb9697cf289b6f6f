package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// validatorSite serves three pages and their validators; it has changed /b
// since they were listed. seen is called with every page request.
func validatorSite(t *testing.T, seen func(*http.Request)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_bench/validators" {
			for _, p := range []string{"/a", "/b", "/c?id=3"} {
				fmt.Fprintf(w, "%s\t\"v-%s\"\tMon, 01 Jan 2024 00:00:00 GMT\n", p, strings.TrimPrefix(p, "/"))
			}
			return
		}
		seen(r)
		want := `"v-` + strings.TrimPrefix(r.URL.RequestURI(), "/") + `"`
		if r.URL.Path != "/b" && r.Header.Get("If-None-Match") == want {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write([]byte("<html>changed</html>"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCondGetSendsEveryPageItsValidatorsAndCountsTheAnswers(t *testing.T) {
	var bothHeaders, requests atomic.Int64
	srv := validatorSite(t, func(r *http.Request) {
		requests.Add(1)
		if r.Header.Get("If-Modified-Since") != "" && r.Header.Get("If-None-Match") != "" {
			bothHeaders.Add(1)
		}
	})
	res, err := condGet(srv.URL, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 3 || res.NotModified != 2 || res.OK != 1 || res.Other != 0 {
		t.Errorf("result %+v: want 3 requests, 2 answered 304 and 1 (the changed page) 200", res)
	}
	if requests.Load() != 3 || bothHeaders.Load() != 3 {
		t.Errorf("the site saw %d requests, %d with both validators: want each page once, with both", requests.Load(), bothHeaders.Load())
	}
	if res.Seconds <= 0 || res.Rate <= 0 {
		t.Errorf("result %+v has no time or rate", res)
	}
}

func TestCondGetSpendsTheGivenCPUAfterEachAnswer(t *testing.T) {
	srv := validatorSite(t, func(*http.Request) {})
	const work = 20 * time.Millisecond
	res, err := condGet(srv.URL, 1, work)
	if err != nil {
		t.Fatal(err)
	}
	// Three answers, each followed by 20 ms of the worker's own CPU: the
	// process used at least 60 ms between the first request and the last.
	if res.Requests != 3 || res.CPUSeconds < 3*work.Seconds() || res.WorkMicros != 20000 {
		t.Errorf("result %+v: want 3 requests, at least %.2f s of CPU and 20000 µs of work a check", res, 3*work.Seconds())
	}
	plain, err := condGet(srv.URL, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if plain.WorkMicros != 0 || plain.CPUSeconds >= res.CPUSeconds {
		t.Errorf("without work %+v, with %+v: want no work reported and less CPU", plain, res)
	}
}

func TestCondGetFailsOnASiteWithoutAListOfValidators(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	if _, err := condGet(srv.URL, 2, 0); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("condGet against a site with no list: %v, want the 404", err)
	}
}

func TestMemWatchReportsTheSessionsLargestAnonymousMemoryUntilTheSessionEnds(t *testing.T) {
	// A shell in a session of its own holds a 32 MB string, then waits to be
	// told to end; its peak must show 32 MB of anonymous memory or more.
	peak := watchShell(t, `x=$(head -c 33554432 /dev/zero | tr '\0' a); echo ready; read _; echo ${#x}`)
	if peak.Samples == 0 || peak.PeakAnonKB < 32<<10 || peak.PeakRSSKB < peak.PeakAnonKB {
		t.Errorf("peak %+v: want samples, RssAnon of at least 32 MiB and VmRSS at least that", peak)
	}
}

func TestMemWatchCountsWhatTheProcessWroteToDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	// 8 MiB written and synced, then the shell waits to be told to end.
	peak := watchShell(t, `head -c 8388608 /dev/zero > "$1"; sync "$1"; echo ready; read _`, path)
	var fs syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(path), &fs); err == nil && fs.Type == 0x01021994 {
		t.Skip("tmpfs: nothing reaches a disk")
	}
	// head wrote it, not the shell: the shell's own count is what its
	// children left behind when they ended (write_bytes counts them).
	if peak.WriteBytes < 8<<20 {
		t.Errorf("write_bytes %d, want the 8 MiB the session wrote", peak.WriteBytes)
	}
}

// watchShell runs script in a shell of a session of its own, which says
// "ready" and then waits to be told to end, and returns what watchSession
// saw of the session meanwhile.
func watchShell(t *testing.T, script string, args ...string) MemPeak {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", script, "sh"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(stdout, buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("the shell did not get ready: %q %v", buf, err)
	}
	got, tick, done := make(chan MemPeak, 1), make(chan time.Time), make(chan struct{})
	go func() { got <- watchSessionOn(cmd.Process.Pid, tick, done) }()
	// The tick is taken once the first sample is: the session ends only
	// once it is told to.
	tick <- time.Time{}
	stdin.Close()
	_ = cmd.Wait()
	close(done)
	return <-got
}

func TestRecheckSendsEveryPageThroughTheFetchLayerWithItsValidatorsAndCountsTheAnswers(t *testing.T) {
	var bothHeaders, fromCrawler atomic.Int64
	srv := validatorSite(t, func(r *http.Request) {
		if r.Header.Get("If-Modified-Since") != "" && r.Header.Get("If-None-Match") != "" {
			bothHeaders.Add(1)
		}
		if r.Header.Get("User-Agent") == "bench-agent/1" {
			fromCrawler.Add(1)
		}
	})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "state_dir: %s\noutput: {file: %s}\nuser_agent: bench-agent/1\nallow_private_networks: true\nsources:\n  - name: s\n    start_urls: [%q]\n",
		filepath.Join(dir, "state"), filepath.Join(dir, "out.ndjson"), srv.URL+"/"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := recheck(cfg, srv.URL, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 3 || res.NotModified != 2 || res.OK != 1 || res.Other != 0 {
		t.Errorf("result %+v: want 3 requests, 2 answered 304 and 1 (the changed page) 200", res)
	}
	if bothHeaders.Load() != 3 || fromCrawler.Load() != 3 {
		t.Errorf("the site saw %d requests with both validators, %d with the config's user agent: want 3 and 3", bothHeaders.Load(), fromCrawler.Load())
	}
}
