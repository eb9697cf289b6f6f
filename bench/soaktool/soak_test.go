package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/faultproxy"
)

var soakDuration = flag.Duration("soak-duration", time.Minute, "how long TestShortSoak runs the service (at least 1m)")

// TestShortSoakAgainstTheRealNodePassesEveryCheck runs the whole soak, bench/soak's, for a
// minute: the service against the changing site, the hostile sites and the real node behind
// the fault schedule, then every check.
func TestShortSoakAgainstTheRealNodePassesEveryCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak runs the service for a minute and more")
	}
	node := estest.URL(t)
	alias := estest.Index(t)
	dir := t.TempDir()
	bin := buildCrawlspace(t, dir)
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	// A guard against a soak that hangs, not a measure: the soak ends itself.
	ctx, cancel := context.WithTimeout(context.Background(), *soakDuration+15*time.Minute)
	defer cancel()
	// Without the cluster of two (Options.Cluster): its outage is
	// TestTwoRunProcessesFinishTheCrawlAfterAnOutageOfTheStateNode's (cmd/crawlspace), and two
	// more processes on the suite's two cores would make this test longer.
	res, err := Run(ctx, Options{ES: node, Crawlspace: bin, Dir: run, Index: alias, Duration: *soakDuration,
		Seed: 7, Pages: 100, BombSize: 256 << 20, MaxRSSMB: 500, MaxStateMB: 64,
		// Generous: the service exits in milliseconds; a hang is what this catches.
		ExitWithin: time.Minute, Progress: &progress})
	if err != nil {
		t.Fatalf("the soak did not run: %v\n%s\nservice log: %s", err, progress.String(), tail(filepath.Join(run, "crawlspace.log"), 20))
	}
	var md bytes.Buffer
	res.markdown(&md, "short soak", nil)
	t.Log("\n" + md.String())
	for _, c := range res.Checks {
		if !c.Pass {
			t.Errorf("%s: %s", c.Name, c.Figures)
		}
	}
	if len(res.Checks) < 15 {
		t.Errorf("%d checks, want every one of them", len(res.Checks))
	}
	if t.Failed() {
		t.Logf("progress:\n%s\nservice log: %s", progress.String(), tail(filepath.Join(run, "crawlspace.log"), 20))
	}
}

// buildCrawlspace builds the crawlspace command of this tree into dir.
func buildCrawlspace(t *testing.T, dir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command builds crawlspace: %v", err)
	}
	bin := filepath.Join(dir, "crawlspace")
	// scripts/build's configuration (static, -trimpath), whose compiles scripts/test's vet made.
	build := exec.Command(goBin, "build", "-trimpath", "-o", bin, "github.com/crawlspace/crawlspace/cmd/crawlspace")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("building crawlspace: %v\n%s", err, out)
	}
	return bin
}

// at is a moment ms milliseconds after a fixed origin, for requests made up by hand.
func at(ms float64) time.Time {
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(ms * float64(time.Millisecond)))
}

func TestPolitenessCheckCountsRequestsOverTheLimitAndTooSoonAfterTheLastOne(t *testing.T) {
	polite := []request{
		{Path: "/robots.txt", Start: at(0), End: at(1)},
		{Path: "/", Start: at(21), End: at(25)},
		{Path: "/a", Start: at(45.5), End: at(50)},
		// Gave up on by the client: the gap after it is not held to the delay.
		{Path: "/drip", Start: at(70), End: at(4070), Abandoned: true},
		{Path: "/b", Start: at(4071), End: at(4080)},
	}
	p := checkPoliteness(polite, 1, 20*time.Millisecond)
	if p.Count != 0 || p.MaxInFlight != 1 || p.MinGap != 20*time.Millisecond {
		t.Errorf("polite requests: %d violations %v, %d in flight, shortest gap %v; want none, 1, 20ms", p.Count, p.Violations, p.MaxInFlight, p.MinGap)
	}

	rude := []request{
		{Path: "/", Start: at(0), End: at(10)},
		{Path: "/a", Start: at(5), End: at(15)},  // two at once
		{Path: "/b", Start: at(25), End: at(30)}, // 10ms after /a
		{Path: "/c", Start: at(49.5), End: at(60)},
	}
	p = checkPoliteness(rude, 1, 20*time.Millisecond)
	if p.Count != 2 || p.MaxInFlight != 2 {
		t.Errorf("rude requests: %d violations %v, %d in flight; want 2 (two at once, one 10ms after), 2", p.Count, p.Violations, p.MaxInFlight)
	}
	// With two slots the same requests are within the limit, and the delay is no longer
	// checkable from the server: a slot may free while another request runs.
	if p := checkPoliteness(rude, 2, 20*time.Millisecond); p.Count != 0 {
		t.Errorf("two slots: %d violations %v, want none", p.Count, p.Violations)
	}

	robotsLoop := []request{
		{Path: "/robots.txt", Start: at(0), End: at(1), Status: 302, Location: "/robots.txt?hop=1"},
		{Path: "/robots.txt?hop=1", Start: at(1.2), End: at(2), Status: 302, Location: "/robots.txt"},
		{Path: "/robots.txt", Start: at(2.1), End: at(3), Status: 302, Location: "/robots.txt?hop=1"},
		{Path: "/", Start: at(23.5), End: at(30)},
		{Path: "/moved", Start: at(50), End: at(51), Status: 301, Location: "/landing"},
		{Path: "/landing", Start: at(52), End: at(53)}, // a page's redirect is queued: held to the delay
	}
	p = checkPoliteness(robotsLoop, 1, 20*time.Millisecond)
	if p.Hops != 2 || p.Count != 1 || !strings.Contains(p.Violations[0], "/landing") {
		t.Errorf("robots.txt loop: %d hops, %d violations %v; want 2 hops and /landing too soon", p.Hops, p.Count, p.Violations)
	}
}

func TestRecorderEndsAnAbandonedRequestWhenTheClientLeftNotWhenTheHandlerReturned(t *testing.T) {
	goneSeen := make(chan struct{})
	rec := &recorder{sawGone: func() { close(goneSeen) }}
	release := make(chan struct{})
	var returned time.Time
	// A handler that takes its time to notice: it returns only when the test says so.
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		<-release
		returned = time.Now()
	})
	srv := httptest.NewServer(rec.wrap(slow))
	defer srv.Close()
	client := &http.Client{Timeout: 100 * time.Millisecond}
	res, err := client.Get(srv.URL + "/slow")
	if err == nil {
		_, err = io.ReadAll(res.Body)
		res.Body.Close()
	}
	if err == nil {
		t.Fatal("the request ended")
	}
	// The handler returns only after the server noted the client gone:
	// what is tested is which of the two times the recorder keeps.
	<-goneSeen
	close(release)
	srv.Close() // waits for the handler
	reqs := rec.requests()
	if len(reqs) != 1 || !reqs[0].Abandoned || reqs[0].Path != "/slow" {
		t.Fatalf("recorded %+v, want one abandoned /slow", reqs)
	}
	if !reqs[0].End.Before(returned) {
		t.Errorf("recorded the end when the handler returned, not when the client left")
	}
}

// A client may have all it reads of a response before the handler returns: the crawler's
// sitemap parser stops at the root element's end, which a large final write hands to the
// connection at once. A loaded machine can then run the crawler's next request before the
// server's handler notes its end, and the delay check saw a polite crawler start too soon.
func TestRecorderEndsARequestBeforeItsLastBytesLeave(t *testing.T) {
	rec := &recorder{}
	release := make(chan struct{})
	body := "<sitemapindex>" + strings.Repeat("<sitemap><loc>http://x.test/a.xml</loc></sitemap>\n", 200) + "</sitemapindex>"
	// A handler descheduled after its last write: it returns only when the test says so.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(body))
		<-release
	})
	srv := httptest.NewServer(rec.wrap(h))
	defer srv.Close()
	res, err := http.Get(srv.URL + "/sitemap.xml")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(body))
	if _, err := io.ReadFull(res.Body, got); err != nil {
		t.Fatal(err)
	}
	read := time.Now()
	close(release)
	// The rest (the end of the chunked body) comes once the handler returned.
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	srv.Close() // waits for the handler
	reqs := rec.requests()
	if len(reqs) != 1 || reqs[0].Abandoned {
		t.Fatalf("recorded %+v, want one request seen through", reqs)
	}
	if reqs[0].End.After(read) {
		t.Errorf("recorded the end %v after the client had read the whole body", reqs[0].End.Sub(read))
	}
}

func TestSiteAnswers304UntilAPageChangesAndExpectsWhatItServes(t *testing.T) {
	s := newSite(40, 3)
	srv := httptest.NewServer(s)
	defer srv.Close()
	get := func(path, etag string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("ETag"), string(body)
	}
	want := s.expected(srv.URL)
	if len(want) != 40 {
		t.Fatalf("%d pages expected, want 40", len(want))
	}
	for u, p := range want {
		code, etag, body := get(strings.TrimPrefix(u, srv.URL), "")
		if code != http.StatusOK || etag == "" || !strings.Contains(body, p.marker) || !strings.Contains(body, "<title>"+p.title) {
			t.Fatalf("%s: %d, ETag %q, want 200 with a validator, its title and its marker", u, code, etag)
		}
		if code, _, _ := get(strings.TrimPrefix(u, srv.URL), etag); code != http.StatusNotModified {
			t.Errorf("%s with its own ETag: %d, want 304", u, code)
		}
	}

	before := want
	s.change(rand.New(rand.NewPCG(1, 2)), 5, 2, 3)
	after := s.expected(srv.URL)
	changed, added, removed := 0, 0, 0
	for u, p := range after {
		old, ok := before[u]
		switch {
		case !ok:
			added++
		case old.marker != p.marker:
			changed++
		}
	}
	for u := range before {
		if _, ok := after[u]; !ok {
			removed++
			if code, _, _ := get(strings.TrimPrefix(u, srv.URL), ""); code != http.StatusNotFound {
				t.Errorf("removed %s answers %d, want 404", u, code)
			}
		}
	}
	if added != 2 || removed != 3 || changed < 5 {
		t.Errorf("after 5 edits, 2 additions, 3 removals: %d changed, %d added, %d removed", changed, added, removed)
	}
	if n := s.counts(); n.Edited != 5 || n.Added != 2 || n.Removed != 3 || n.Pages != len(after) {
		t.Errorf("counts %+v, want 5 edited, 2 added, 3 removed, %d pages", n, len(after))
	}
	if code, _, _ := get("/private/staff.html", ""); code != http.StatusNotFound || s.counts().Private != 1 {
		t.Errorf("/private/ request not counted")
	}
}

func TestFaultPhaseHappenedOnlyWithItsEvidence(t *testing.T) {
	cases := []struct {
		fault faultproxy.Fault
		rec   phaseRecord
		want  bool
	}{
		{faultproxy.Fault{Mode: faultproxy.Pass}, phaseRecord{Requests: 3, Faulted: 3}, false},
		{faultproxy.Fault{Mode: faultproxy.Pass}, phaseRecord{Requests: 3, Faulted: 2}, true},
		{faultproxy.Fault{Mode: faultproxy.FailItems, Status: 503}, phaseRecord{Requests: 4}, false},
		{faultproxy.Fault{Mode: faultproxy.FailItems, Status: 503}, phaseRecord{Requests: 4, Items: 1}, true},
		{faultproxy.Fault{Mode: faultproxy.Status, Status: 429}, phaseRecord{Requests: 1, Faulted: 1}, true},
		{faultproxy.Fault{Mode: faultproxy.Drop}, phaseRecord{}, false},
		// A stall counts once a request gave up on it within the phase.
		{faultproxy.Fault{Mode: faultproxy.Stall}, phaseRecord{Requests: 2, Faulted: 2}, false},
		{faultproxy.Fault{Mode: faultproxy.Stall}, phaseRecord{Requests: 2, Faulted: 2, BulkFailed: 1}, true},
		// Refused connections never reach the proxy: the service's failures must outnumber
		// what the proxy saw, and a probe must have been refused.
		{faultproxy.Fault{Mode: faultproxy.Refuse}, phaseRecord{BulkFailed: 2, Faulted: 2, Refused: true}, false},
		{faultproxy.Fault{Mode: faultproxy.Refuse}, phaseRecord{BulkFailed: 3}, false},
		{faultproxy.Fault{Mode: faultproxy.Refuse}, phaseRecord{BulkFailed: 3, Faulted: 1, Refused: true}, true},
	}
	for _, c := range cases {
		r := c.rec
		r.judge(c.fault)
		if r.Exercised != c.want {
			t.Errorf("mode %d with %+v: happened %v, want %v (%s)", c.fault.Mode, c.rec, r.Exercised, c.want, r.Evidence)
		}
	}
}

func TestMemoryTrendFailsWhenEachCycleAtTheEndNeedsMore(t *testing.T) {
	quiet := at(0)
	// Cycles of ten seconds a minute apart, with a sample every second at the cycle's peak.
	run := func(peaksMiB ...int64) check {
		res := &Result{Quiet: quiet, End: at(float64(len(peaksMiB)) * 60000)}
		var samples []memSample
		for i, p := range peaksMiB {
			start := at(float64(i)*60000 + 1000)
			res.Cycles = append(res.Cycles, cycle{Started: start, Finished: start.Add(10 * time.Second), Outcome: "completed"})
			for s := range 11 {
				samples = append(samples, memSample{At: start.Add(time.Duration(s) * time.Second), AnonKB: p << 10})
			}
			// Between cycles the memory is lower: no cycle's peak is taken from it.
			samples = append(samples, memSample{At: start.Add(30 * time.Second), AnonKB: 10 << 10})
		}
		c := &checker{res: res}
		c.trend(samples, 100<<10, 0, samples)
		return c.res.Checks[0]
	}
	if c := run(40, 45, 38, 42, 44, 41); !c.Pass {
		t.Errorf("steady cycles judged a trend: %s", c.Figures)
	}
	if c := run(40, 50, 60, 70, 80, 90); c.Pass {
		t.Errorf("each cycle needing 10 MiB more passed: %s", c.Figures)
	}
	if c := run(40, 90); !c.Pass || !strings.Contains(c.Figures, "not judged") {
		t.Errorf("two cycles: %v %s, want not judged", c.Pass, c.Figures)
	}
}
