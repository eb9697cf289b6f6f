package provider_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/faultproxy"
	"github.com/crawlspace/crawlspace/monitor"
	"github.com/crawlspace/crawlspace/provider"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/sink"
)

// guard bounds a wait that only a hang makes endless: the test fails
// instead of hanging. It is never what a test asserts.
const guard = 2 * time.Minute

// faultPages are the pages of faultSite besides its home page.
var faultPages = []string{"/p0", "/p1", "/p2", "/p3", "/p4", "/p5", "/p6", "/p7", "/p8", "/p9"}

// faultSite serves a home page linking faultPages.
func faultSite(t *testing.T) *testSite {
	t.Helper()
	site := newSite(t)
	site.html("/", "home", links(faultPages...))
	for _, p := range faultPages {
		site.html(p, "page "+p, "<p>text of "+p+"</p>")
	}
	return site
}

// allIDs are the document ids of every page of faultSite.
func allIDs(base string) []string {
	ids := []string{docfields.ID(base + "/")}
	for _, p := range faultPages {
		ids = append(ids, docfields.ID(base+p))
	}
	slices.Sort(ids)
	return ids
}

// proxied starts a fault proxy in front of the node, closed when the test ends.
func proxied(t *testing.T) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(estest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func setFault(t *testing.T, p *faultproxy.Proxy, f faultproxy.Fault) {
	t.Helper()
	if err := p.Set(f); err != nil {
		t.Fatal(err)
	}
}

// faultConfig writes Elasticsearch through the proxy, one bulk worker
// sending every 50 ms, into a state dir of the test's (the same on every
// call with the same state).
func faultConfig(t *testing.T, p *faultproxy.Proxy, index, state, start, esExtra, srcExtra string) *config.Config {
	t.Helper()
	return parseConfig(t, fmt.Sprintf(`
state_dir: %s
elasticsearch: {addresses: [%q], index: %s, replicas: 0, bulk_flush_interval: 50ms, bulk_workers: 1%s}
allow_private_networks: true
sources:
  - name: s
    start_urls: [%q]
%s`, state, p.URL, index, esExtra, start, indent(srcExtra, "    ")))
}

// background is a crawl cycle running on its own goroutine.
type background struct {
	done   chan struct{}
	report *provider.Report
	err    error
}

func crawlInBackground(ctx context.Context, c *provider.Crawler) *background {
	b := &background{done: make(chan struct{})}
	go func() {
		defer close(b.done)
		b.report, b.err = c.Crawl(ctx)
	}()
	return b
}

// wait returns the cycle's result, failing the test if it never returns.
func (b *background) wait(t *testing.T) (*provider.Report, error) {
	t.Helper()
	select {
	case <-b.done:
		return b.report, b.err
	case <-time.After(guard):
		t.Fatalf("the crawl did not return within %s", guard)
		return nil, nil
	}
}

// await waits for cond on the proxy's counts; it fails the test if the
// crawl ends first or the guard passes.
func (b *background) await(t *testing.T, p *faultproxy.Proxy, what string, cond func(faultproxy.Stats) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	go func() {
		select {
		case <-b.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := p.Await(ctx, cond); err != nil {
		select {
		case <-b.done:
			t.Fatalf("the crawl ended (err %v) before %s: %v", b.err, what, err)
		default:
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
}

// closeCrawler closes c, failing the test if Close never returns.
func closeCrawler(t *testing.T, c *provider.Crawler) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(guard):
		t.Fatalf("Close did not return within %s", guard)
		return nil
	}
}

// storedIDs are the ids of the documents the node holds behind the alias.
func storedIDs(t *testing.T, index string) []string {
	t.Helper()
	var ids []string
	for id := range searchAll(t, estest.URL(t), index) {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// aliasExists says whether the alias has been published.
func aliasExists(t *testing.T, index string) bool {
	t.Helper()
	res, err := http.Get(estest.URL(t) + "/_alias/" + index)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// noneLost checks that every page of faultSite is indexed or has its write
// pending, and returns the URLs pending.
func noneLost(t *testing.T, c *provider.Crawler, base string) (pending []string) {
	t.Helper()
	for _, p := range append([]string{"/"}, faultPages...) {
		r, ok, err := c.Frontier().Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ok && r.Pending != "":
			pending = append(pending, p)
		case ok && r.State == frontier.Fetched && !r.Indexed:
			t.Errorf("%s is fetched, not indexed and has no write pending: its document is lost", p)
		}
	}
	return pending
}

func TestBulkItem503IsRetriedUntilItLandsAndTheAliasWaits(t *testing.T) {
	index := estest.Index(t)
	site := faultSite(t)
	p := proxied(t)
	cfg := faultConfig(t, p, index, t.TempDir(), site.URL+"/", "", "")
	c := crawlerFor(t, cfg)
	failing := []string{docfields.ID(site.URL + "/p3"), docfields.ID(site.URL + "/p7")}
	setFault(t, p, faultproxy.Fault{Mode: faultproxy.FailItems, Status: http.StatusServiceUnavailable, IDs: failing})

	run := crawlInBackground(context.Background(), c)
	// Each failing document refused twice: the writes are being retried.
	run.await(t, p, "both failing documents sent twice", func(s faultproxy.Stats) bool { return s.Items >= 4 })
	if aliasExists(t, index) {
		t.Error("the alias was published while two writes of the cycle had not landed")
	}
	setFault(t, p, faultproxy.Fault{Mode: faultproxy.Pass})
	report, err := run.wait(t)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := storedIDs(t, index), allIDs(site.URL); !slices.Equal(got, want) {
		t.Errorf("the alias shows %d documents, want every page (%d)", len(got), len(want))
	}
	if report.Total.IndexFailures != 0 || report.Total.Created != len(faultPages)+1 {
		t.Errorf("report %+v, want every page created and no index failure", report.Total)
	}
	for _, u := range []string{"/p3", "/p7"} {
		if r := record(t, c, site.URL+u); !r.Indexed || r.Pending != "" || r.State != frontier.Fetched {
			t.Errorf("%s: %s %q, indexed %v, pending %q; want fetched and indexed", u, r.State, r.Reason, r.Indexed, r.Pending)
		}
	}
}

func TestCrawlStoppedWhileItemsFailLeavesThemPendingAndTheNextCrawlIndexesThem(t *testing.T) {
	index := estest.Index(t)
	site := faultSite(t)
	p := proxied(t)
	state := t.TempDir()
	cfg := faultConfig(t, p, index, state, site.URL+"/", "", "")
	c := crawlerFor(t, cfg)
	failing := []string{docfields.ID(site.URL + "/p3"), docfields.ID(site.URL + "/p7")}
	setFault(t, p, faultproxy.Fault{Mode: faultproxy.FailItems, Status: http.StatusServiceUnavailable, IDs: failing})

	ctx, cancel := context.WithCancel(context.Background())
	run := crawlInBackground(ctx, c)
	if err := p.Await(context.Background(), func(s faultproxy.Stats) bool { return s.Items >= 2 }); err != nil {
		t.Fatal(err)
	}
	cancel()
	run.wait(t)
	if err := closeCrawler(t, c); err != nil {
		t.Logf("close: %v", err)
	}
	// Reopened as a restart would: the writes that never landed are pending.
	c = crawlerFor(t, cfg)
	for _, u := range []string{"/p3", "/p7"} {
		if r := record(t, c, site.URL+u); r.Pending != "index" {
			t.Errorf("%s after the stop: %s %q, indexed %v, pending %q; want its index write pending", u, r.State, r.Reason, r.Indexed, r.Pending)
		}
	}
	noneLost(t, c, site.URL)

	setFault(t, p, faultproxy.Fault{Mode: faultproxy.Pass})
	if _, err := c.Crawl(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := storedIDs(t, index), allIDs(site.URL); !slices.Equal(got, want) {
		t.Errorf("after the next crawl the alias shows %d documents, want every page (%d)", len(got), len(want))
	}
	if pending := noneLost(t, c, site.URL); len(pending) > 0 {
		t.Errorf("after the next crawl %v still have writes pending", pending)
	}
}

func TestBulkItemMappingErrorIsAnErrorThatStatusAndClearErrorsSeeAndALaterCrawlRetries(t *testing.T) {
	index := estest.Index(t)
	site := faultSite(t)
	p := proxied(t)
	cfg := faultConfig(t, p, index, t.TempDir(), site.URL+"/", "", "")
	c := crawlerFor(t, cfg)
	bad := site.URL + "/p3"
	setFault(t, p, faultproxy.Fault{Mode: faultproxy.FailItems, Status: http.StatusBadRequest, IDs: []string{docfields.ID(bad)}})

	first := again(t, c)
	if first.Total.IndexFailures != 1 || first.Total.Reasons["index_failed"] != 1 {
		t.Errorf("first cycle: %+v, want one index failure", first.Total)
	}
	r := wantState(t, c, bad, frontier.Error, "index_failed")
	if r.Pending != "index" {
		t.Errorf("the rejected page's write: pending %q, want index (it has not landed)", r.Pending)
	}
	evs, err := c.Frontier().History(bad)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.Kind != frontier.EventWriteFailed || last.Status != http.StatusBadRequest || !strings.Contains(last.Detail, "mapper_parsing_exception") {
		t.Errorf("last history event %+v, want write_failed 400 mapper_parsing_exception", last)
	}
	snap, err := monitor.NewStates(c.Frontier(), cfg).Refresh()
	if err != nil {
		t.Fatal(err)
	}
	if n := snap.Sources["s"].Reasons[frontier.Error]["index_failed"]; n != 1 {
		t.Errorf("status counts %d URLs in error index_failed, want 1", n)
	}
	if !aliasExists(t, index) {
		t.Error("a permanent failure kept the alias from being published")
	}

	// A later crawl tries the page again; the node still refuses it.
	again(t, c)
	if st := p.Stats(); st.Items != 2 {
		t.Errorf("the node was sent the rejected document %d times in two crawls, want 2", st.Items)
	}
	wantState(t, c, bad, frontier.Error, "index_failed")

	// clear-errors queues it, the mapping is fixed (the fault cleared), and it lands.
	n, err := c.Frontier().RequeueErrors("s")
	if err != nil || n != 1 {
		t.Errorf("clear-errors queued %d URLs (%v), want the rejected page", n, err)
	}
	setFault(t, p, faultproxy.Fault{Mode: faultproxy.Pass})
	third := again(t, c)
	r = wantState(t, c, bad, frontier.Fetched, "")
	if !r.Indexed || r.Pending != "" || third.Total.IndexFailures != 0 {
		t.Errorf("after the fix: indexed %v, pending %q, report %+v", r.Indexed, r.Pending, third.Total)
	}
	if got, want := storedIDs(t, index), allIDs(site.URL); !slices.Equal(got, want) {
		t.Errorf("the alias shows %d documents, want every page (%d)", len(got), len(want))
	}
}

func TestDeleteFailingWith503IsRetriedAndTheDocumentIsGone(t *testing.T) {
	index := estest.Index(t)
	site := faultSite(t)
	p := proxied(t)
	cfg := faultConfig(t, p, index, t.TempDir(), site.URL+"/", "", "max_age: 1ms")
	c, _ := crawlKeep(t, cfg)
	gone := site.URL + "/p5"
	if r := record(t, c, gone); !r.Indexed {
		t.Fatal("the first crawl did not index the page")
	}
	site.status("/p5", http.StatusNotFound)
	setFault(t, p, faultproxy.Fault{Mode: faultproxy.FailItems, Status: http.StatusServiceUnavailable, IDs: []string{docfields.ID(gone)}})
	time.Sleep(5 * time.Millisecond) // max_age passes: the next cycle checks every page

	run := crawlInBackground(context.Background(), c)
	run.await(t, p, "the delete refused twice", func(s faultproxy.Stats) bool { return s.Items >= 2 })
	setFault(t, p, faultproxy.Fault{Mode: faultproxy.Pass})
	report, err := run.wait(t)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(storedIDs(t, index), docfields.ID(gone)) {
		t.Error("the gone page's document is still in the index")
	}
	r := wantState(t, c, gone, frontier.Error, "http_404")
	if r.Indexed || r.Pending != "" || report.Total.Deleted != 1 {
		t.Errorf("after the delete: indexed %v, pending %q, report %+v", r.Indexed, r.Pending, report.Total)
	}
}

func TestStalledNodeHoldsTheCrawlUntilItAnswersAndLosesNothing(t *testing.T) {
	index := estest.Index(t)
	site := faultSite(t)
	p := proxied(t)
	cfg := faultConfig(t, p, index, t.TempDir(), site.URL+"/", ", request_timeout: 1s", "")
	c := crawlerFor(t, cfg) // the index is created through the healthy proxy
	setFault(t, p, faultproxy.Fault{Mode: faultproxy.Stall})

	run := crawlInBackground(context.Background(), c)
	// A second stalled request: the first was given up on and sent again.
	run.await(t, p, "a bulk request stalled and sent again", func(s faultproxy.Stats) bool { return s.Faulted >= 2 })
	setFault(t, p, faultproxy.Fault{Mode: faultproxy.Pass})
	report, err := run.wait(t)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := storedIDs(t, index), allIDs(site.URL); !slices.Equal(got, want) {
		t.Errorf("after the stall the alias shows %d documents, want every page (%d)", len(got), len(want))
	}
	if report.Total.IndexFailures != 0 {
		t.Errorf("report %+v, want no index failure", report.Total)
	}
}

func TestCrawlCancelledDuringAStallReturnsWithItsWritesPendingForTheNextCrawl(t *testing.T) {
	index := estest.Index(t)
	site := faultSite(t)
	p := proxied(t)
	cfg := faultConfig(t, p, index, t.TempDir(), site.URL+"/", ", request_timeout: 1s", "")
	c := crawlerFor(t, cfg)
	setFault(t, p, faultproxy.Fault{Mode: faultproxy.Stall})

	ctx, cancel := context.WithCancel(context.Background())
	run := crawlInBackground(ctx, c)
	run.await(t, p, "a bulk request stalled", func(s faultproxy.Stats) bool { return s.Faulted >= 1 })
	cancel()
	if _, err := run.wait(t); err == nil {
		t.Error("a cancelled crawl reported success")
	}
	if err := closeCrawler(t, c); err != nil {
		t.Logf("close: %v", err)
	}
	// The node recovers; the next start finds the writes pending.
	setFault(t, p, faultproxy.Fault{Mode: faultproxy.Pass})
	c = crawlerFor(t, cfg)
	if pending := noneLost(t, c, site.URL); len(pending) == 0 {
		t.Error("no write pending after a crawl stopped while the node stalled")
	}
	if _, err := c.Crawl(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := storedIDs(t, index), allIDs(site.URL); !slices.Equal(got, want) {
		t.Errorf("after the next crawl the alias shows %d documents, want every page (%d)", len(got), len(want))
	}
	if pending := noneLost(t, c, site.URL); len(pending) > 0 {
		t.Errorf("after the next crawl %v still have writes pending", pending)
	}
}

// retries counts the sink's retried writes, for a test to wait on.
type retries struct {
	provider.Observer
	mu sync.Mutex
	n  int
	ch chan struct{}
}

func newRetries() *retries { return &retries{ch: make(chan struct{})} }

func (r *retries) Fetched(string, int, int, time.Duration) {}
func (r *retries) Document(string, string)                 {}
func (r *retries) Reason(string, string, int, bool)        {}
func (r *retries) Bulk(time.Duration, int, error)          {}
func (r *retries) Orphans(string, int, int)                {}
func (r *retries) IndexRetry(string) {
	r.mu.Lock()
	r.n++
	close(r.ch)
	r.ch = make(chan struct{})
	r.mu.Unlock()
}

// await waits until at least n writes were retried.
func (r *retries) await(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(guard)
	for {
		r.mu.Lock()
		got, ch := r.n, r.ch
		r.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%d writes retried, waited for %d", got, n)
		}
	}
}

// syncBuffer is a log written from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines(msg string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for l := range strings.SplitSeq(s.b.String(), "\n") {
		if strings.Contains(l, "msg=\""+msg+"\"") {
			out = append(out, l)
		}
	}
	return out
}

func TestElasticsearchOutageIsWarnedOnceWithItsErrorAndItsRecoveryLogged(t *testing.T) {
	index := estest.Index(t)
	site := faultSite(t)
	p := proxied(t)
	cfg := faultConfig(t, p, index, t.TempDir(), site.URL+"/", "", "")
	set, err := rules.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	c, err := provider.New(cfg, set, sink.Opener(context.Background(), cfg), slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	seen := newRetries()
	c.SetObserver(seen)
	setFault(t, p, faultproxy.Fault{Mode: faultproxy.Refuse})

	run := crawlInBackground(context.Background(), c)
	seen.await(t, 3*(len(faultPages)+1)) // every write refused three times or so
	setFault(t, p, faultproxy.Fault{Mode: faultproxy.Pass})
	if _, err := run.wait(t); err != nil {
		t.Fatal(err)
	}
	warned := log.lines("elasticsearch unavailable: index writes are retried until they land")
	if len(warned) != 1 || !strings.Contains(warned[0], "connection refused") || !strings.Contains(warned[0], "level=WARN") {
		t.Errorf("warnings of the outage %q, want one WARN naming the refused connection", warned)
	}
	back := log.lines("elasticsearch available again")
	if len(back) != 1 || !strings.Contains(back[0], "down_for=") || strings.Contains(back[0], "writes_retried=0") || !strings.Contains(back[0], "writes_retried=") {
		t.Errorf("recovery lines %q, want one with how long it lasted and how many writes were retried", back)
	}
	if n := len(log.lines("index write failed")); n != 0 {
		t.Errorf("%d index writes logged as failed during an outage", n)
	}
	if got, want := storedIDs(t, index), allIDs(site.URL); !slices.Equal(got, want) {
		t.Errorf("after the outage the alias shows %d documents, want every page (%d)", len(got), len(want))
	}
}
