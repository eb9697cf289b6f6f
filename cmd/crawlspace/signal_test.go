package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/faultproxy"
)

// signalChildEnv carries the command line of TestSignalChild, one
// argument a line.
const signalChildEnv = "CRAWLSPACE_SIGNAL_CHILD"

// TestSignalChild runs a crawlspace command in a process of its own for
// TestSignalStopsCrawlAndRunWhileTheNodeStallsAndKeepsThePendingWrites.
func TestSignalChild(t *testing.T) {
	args := os.Getenv(signalChildEnv)
	if args == "" {
		t.Skip("started by TestSignalStopsCrawlAndRunWhileTheNodeStallsAndKeepsThePendingWrites")
	}
	os.Exit(dispatch(strings.Split(args, "\n")))
}

// signalGuard bounds the waits only a hang makes endless.
const signalGuard = 2 * time.Minute

func TestSignalStopsCrawlAndRunWhileTheNodeStallsAndKeepsThePendingWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("runs crawlspace in a child process")
	}
	for _, tc := range signalCases {
		t.Run(tc.command, func(t *testing.T) { signalDuringStall(t, tc.command, tc.sig, tc.exit) })
	}
}

// signalDuringStall runs command in a child process against a node that
// stops answering while the site is crawled, signals it once a _bulk
// request has stalled, and checks that it exits, that every page is
// indexed or has its write pending, and that the next crawl lands them.
func signalDuringStall(t *testing.T, command string, sig syscall.Signal, wantExit int) {
	index := estest.Index(t)
	proxy := estest.Proxy(t)
	const pages = 20
	var fetched atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/" {
			for i := range pages {
				fmt.Fprintf(w, `<a href="/p%d">p%d</a> `, i, i)
			}
			return
		}
		if fetched.Add(1) == 5 {
			// The node stops answering while the rest is crawled.
			proxy.Set(faultproxy.Fault{Mode: faultproxy.Stall})
		}
		fmt.Fprintf(w, "<title>%s</title><p>page %s</p>", r.URL.Path, r.URL.Path)
	}))
	t.Cleanup(site.Close)
	cfg, set, path := writeConfig(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0, bulk_flush_interval: 50ms, request_timeout: 2s}
allow_private_networks: true
sources:
  - name: site
    start_urls: [%q]
`, proxy.URL, index, site.URL+"/"))

	child, stderr, exited := startChild(t, command+"\n-config\n"+path)

	ctx, cancel := context.WithTimeout(context.Background(), signalGuard)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := proxy.Await(ctx, func(s faultproxy.Stats) bool { return s.Faulted >= 1 }); err != nil {
		t.Fatalf("no _bulk request stalled before the child ended: %v\n%s", err, stderr.String())
	}
	if err := child.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(signalGuard):
		t.Fatalf("crawlspace %s did not exit within %s of %s while the node stalled\n%s", command, signalGuard, sig, stderr.String())
	}
	if code := child.ProcessState.ExitCode(); code != wantExit {
		t.Errorf("crawlspace %s exited with %d after %s, want %d\n%s", command, code, sig, wantExit, stderr.String())
	}
	if !strings.Contains(stderr.String(), "index writes left pending for the next start") {
		t.Errorf("no line counting the writes left pending:\n%s", stderr.String())
	}

	front, err := frontier.Open(cfg.StateDir, frontier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pending := 0
	err = frontier.ForEach(front, frontier.Query{}, func(r frontier.Record) error {
		switch {
		case r.Pending != "":
			pending++
		case r.State == frontier.Fetched && !r.Indexed:
			t.Errorf("%s is fetched, not indexed and has no write pending: its document is lost", r.URL)
		}
		return nil
	})
	front.Close()
	if err != nil {
		t.Fatal(err)
	}
	if pending == 0 {
		t.Error("no write pending after a stop while the node stalled")
	}

	// The node recovers: the next crawl lands every page.
	estest.SetFault(t, proxy, faultproxy.Fault{Mode: faultproxy.Pass})
	var log lockedBuffer
	if code := crawlOnce(context.Background(), cfg, set, jsonOutput(&log, io.Discard), ""); code != exitOK {
		t.Fatalf("the crawl after the stall exited %d\n%s", code, log.String())
	}
	ids := map[string]bool{}
	for _, id := range searchIDs(t, index, `{"size": 100}`) {
		ids[id] = true
	}
	for i := range pages {
		if u := fmt.Sprintf("%s/p%d", site.URL, i); !ids[docfields.ID(u)] {
			t.Errorf("%s is not in the index after the next crawl", u)
		}
	}
}

// startChild runs this test binary as crawlspace with args (one per line)
// through TestSignalChild, with env added; exited is closed once it has
// ended, and a child still running at cleanup is killed.
func startChild(t *testing.T, args string, env ...string) (child *exec.Cmd, stderr *lockedBuffer, exited <-chan struct{}) {
	t.Helper()
	child = exec.Command(os.Args[0], "-test.run=^TestSignalChild$", "-test.count=1")
	child.Env = append(append(os.Environ(), signalChildEnv+"="+args), env...)
	stderr = &lockedBuffer{}
	child.Stderr, child.Stdout = stderr, io.Discard
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		child.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		child.Process.Kill()
		<-done
	})
	return child, stderr, done
}
