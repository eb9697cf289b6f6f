package provider_test

import (
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
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/faultproxy"
	"github.com/crawlspace/crawlspace/monitor"
	"github.com/crawlspace/crawlspace/provider"
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

// faultEnv is the setup of the fault tests: a fresh index, faultSite, a
// proxy in front of the node and a config writing through it with one bulk
// worker sending every 50 ms.
type faultEnv struct {
	index string
	site  *testSite
	proxy *faultproxy.Proxy
	cfg   *config.Config
}

// newFaultEnv adds esExtra to the elasticsearch block and srcExtra to the source.
func newFaultEnv(t *testing.T, esExtra, srcExtra string) *faultEnv {
	t.Helper()
	e := &faultEnv{index: estest.Index(t), site: faultSite(t), proxy: estest.Proxy(t)}
	config := func(esExtra string) *config.Config {
		return crawltest.Config(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0, bulk_flush_interval: 50ms, bulk_workers: 1%s}
allow_private_networks: true
sources:
  - name: s
    start_urls: [%q]
%s`, e.proxy.URL, e.index, esExtra, e.site.URL+"/", indent(srcExtra, "    ")))
	}
	e.cfg = config(esExtra)
	if strings.Contains(esExtra, "request_timeout") {
		// The test's short request timeout is for the fault it makes: the
		// index is created first with the default one, since creating it on
		// a node busy with other tests can take longer than a second.
		crawltest.New(t, config(""))
	}
	return e
}

func (e *faultEnv) set(t *testing.T, f faultproxy.Fault) { t.Helper(); estest.SetFault(t, e.proxy, f) }

// url is a page of the site.
func (e *faultEnv) url(path string) string { return e.site.URL + path }

// wantEveryPage checks that the alias shows exactly the site's pages.
func (e *faultEnv) wantEveryPage(t *testing.T, when string) {
	t.Helper()
	var got []string
	for id := range searchAll(t, estest.URL(t), e.index) {
		got = append(got, id)
	}
	slices.Sort(got)
	if want := allIDs(e.site.URL); !slices.Equal(got, want) {
		t.Errorf("%s the alias shows %d documents, want every page (%d)", when, len(got), len(want))
	}
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
	t.Parallel()
	e := newFaultEnv(t, "", "")
	c := crawltest.New(t, e.cfg)
	failing := []string{docfields.ID(e.url("/p3")), docfields.ID(e.url("/p7"))}
	e.set(t, faultproxy.Fault{Mode: faultproxy.FailItems, Status: http.StatusServiceUnavailable, IDs: failing})

	run := crawlInBackground(context.Background(), c)
	// Each failing document refused twice: the writes are being retried.
	run.await(t, e.proxy, "both failing documents sent twice", func(s faultproxy.Stats) bool { return s.Items >= 4 })
	if aliasExists(t, e.index) {
		t.Error("the alias was published while two writes of the cycle had not landed")
	}
	e.set(t, faultproxy.Fault{Mode: faultproxy.Pass})
	report, err := run.wait(t)
	if err != nil {
		t.Fatal(err)
	}
	e.wantEveryPage(t, "after the fault cleared")
	if report.Total.IndexFailures != 0 || report.Total.Created != len(faultPages)+1 {
		t.Errorf("report %+v, want every page created and no index failure", report.Total)
	}
	for _, u := range []string{"/p3", "/p7"} {
		if r := record(t, c, e.url(u)); !r.Indexed || r.Pending != "" || r.State != frontier.Fetched {
			t.Errorf("%s: %s %q, indexed %v, pending %q; want fetched and indexed", u, r.State, r.Reason, r.Indexed, r.Pending)
		}
	}
}

func TestCrawlStoppedWhileItemsFailLeavesThemPendingAndTheNextCrawlIndexesThem(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t, "", "")
	c := crawltest.New(t, e.cfg)
	// The items fail until the test lets them pass: Close need not wait
	// long for them before leaving them pending.
	provider.SetTiming(c, provider.Timing{CloseGrace: time.Second})
	failing := []string{docfields.ID(e.url("/p3")), docfields.ID(e.url("/p7"))}
	e.set(t, faultproxy.Fault{Mode: faultproxy.FailItems, Status: http.StatusServiceUnavailable, IDs: failing})

	ctx, cancel := context.WithCancel(context.Background())
	run := crawlInBackground(ctx, c)
	run.await(t, e.proxy, "both failing documents refused", func(s faultproxy.Stats) bool { return s.Items >= 2 })
	cancel()
	run.wait(t)
	if err := closeCrawler(t, c); err != nil {
		t.Logf("close: %v", err)
	}
	// Reopened as a restart would: the writes that never landed are pending.
	c = crawltest.New(t, e.cfg)
	for _, u := range []string{"/p3", "/p7"} {
		if r := record(t, c, e.url(u)); r.Pending != "index" {
			t.Errorf("%s after the stop: %s %q, indexed %v, pending %q; want its index write pending", u, r.State, r.Reason, r.Indexed, r.Pending)
		}
	}
	noneLost(t, c, e.site.URL)

	e.set(t, faultproxy.Fault{Mode: faultproxy.Pass})
	if _, err := c.Crawl(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.wantEveryPage(t, "after the next crawl")
	if pending := noneLost(t, c, e.site.URL); len(pending) > 0 {
		t.Errorf("after the next crawl %v still have writes pending", pending)
	}
}

func TestBulkItemMappingErrorIsAnErrorThatStatusAndClearErrorsSeeAndALaterCrawlRetries(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t, "", "")
	c := crawltest.New(t, e.cfg)
	bad := e.url("/p3")
	e.set(t, faultproxy.Fault{Mode: faultproxy.FailItems, Status: http.StatusBadRequest, IDs: []string{docfields.ID(bad)}})

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
	snap, err := monitor.NewStates(c.Frontier(), e.cfg).Refresh()
	if err != nil {
		t.Fatal(err)
	}
	if n := snap.Sources["s"].Reasons[frontier.Error]["index_failed"]; n != 1 {
		t.Errorf("status counts %d URLs in error index_failed, want 1", n)
	}
	if !aliasExists(t, e.index) {
		t.Error("a permanent failure kept the alias from being published")
	}

	// A later crawl tries the page again; the node still refuses it.
	again(t, c)
	if st := e.proxy.Stats(); st.Items != 2 {
		t.Errorf("the node was sent the rejected document %d times in two crawls, want 2", st.Items)
	}
	wantState(t, c, bad, frontier.Error, "index_failed")

	// clear-errors queues it, the mapping is fixed (the fault cleared), and it lands.
	n, err := c.Frontier().RequeueErrors("s")
	if err != nil || n != 1 {
		t.Errorf("clear-errors queued %d URLs (%v), want the rejected page", n, err)
	}
	e.set(t, faultproxy.Fault{Mode: faultproxy.Pass})
	third := again(t, c)
	r = wantState(t, c, bad, frontier.Fetched, "")
	if !r.Indexed || r.Pending != "" || third.Total.IndexFailures != 0 {
		t.Errorf("after the fix: indexed %v, pending %q, report %+v", r.Indexed, r.Pending, third.Total)
	}
	e.wantEveryPage(t, "after the fix")
}

func TestDeleteFailingWith503IsRetriedAndTheDocumentIsGone(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t, "", "max_age: 1ms")
	c, _ := crawlKeep(t, e.cfg)
	gone := e.url("/p5")
	if r := record(t, c, gone); !r.Indexed {
		t.Fatal("the first crawl did not index the page")
	}
	e.site.status("/p5", http.StatusNotFound)
	e.set(t, faultproxy.Fault{Mode: faultproxy.FailItems, Status: http.StatusServiceUnavailable, IDs: []string{docfields.ID(gone)}})
	letMaxAgePass(t) // the next cycle checks every page

	run := crawlInBackground(context.Background(), c)
	run.await(t, e.proxy, "the delete refused twice", func(s faultproxy.Stats) bool { return s.Items >= 2 })
	e.set(t, faultproxy.Fault{Mode: faultproxy.Pass})
	report, err := run.wait(t)
	if err != nil {
		t.Fatal(err)
	}
	if _, held := searchAll(t, estest.URL(t), e.index)[docfields.ID(gone)]; held {
		t.Error("the gone page's document is still in the index")
	}
	r := wantState(t, c, gone, frontier.Error, "http_404")
	if r.Indexed || r.Pending != "" || report.Total.Deleted != 1 {
		t.Errorf("after the delete: indexed %v, pending %q, report %+v", r.Indexed, r.Pending, report.Total)
	}
}

func TestStalledNodeHoldsTheCrawlUntilItAnswersAndLosesNothing(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t, ", request_timeout: 1s", "")
	c := crawltest.New(t, e.cfg) // the index is created through the healthy proxy
	e.set(t, faultproxy.Fault{Mode: faultproxy.Stall})

	run := crawlInBackground(context.Background(), c)
	// A second stalled request: the first was given up on and sent again.
	run.await(t, e.proxy, "a bulk request stalled and sent again", func(s faultproxy.Stats) bool { return s.Faulted >= 2 })
	e.set(t, faultproxy.Fault{Mode: faultproxy.Pass})
	report, err := run.wait(t)
	if err != nil {
		t.Fatal(err)
	}
	e.wantEveryPage(t, "after the stall")
	if report.Total.IndexFailures != 0 {
		t.Errorf("report %+v, want no index failure", report.Total)
	}
}

func TestCrawlCancelledDuringAStallReturnsWithItsWritesPendingForTheNextCrawl(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t, ", request_timeout: 1s", "")
	c := crawltest.New(t, e.cfg)
	// The node stalls until the test lets it answer: Close need not wait
	// long for it before leaving the writes pending.
	provider.SetTiming(c, provider.Timing{CloseGrace: time.Second})
	e.set(t, faultproxy.Fault{Mode: faultproxy.Stall})

	ctx, cancel := context.WithCancel(context.Background())
	run := crawlInBackground(ctx, c)
	run.await(t, e.proxy, "a bulk request stalled", func(s faultproxy.Stats) bool { return s.Faulted >= 1 })
	cancel()
	if _, err := run.wait(t); err == nil {
		t.Error("a cancelled crawl reported success")
	}
	if err := closeCrawler(t, c); err != nil {
		t.Logf("close: %v", err)
	}
	// The node recovers; the next start finds the writes pending.
	e.set(t, faultproxy.Fault{Mode: faultproxy.Pass})
	c = crawltest.New(t, e.cfg)
	if pending := noneLost(t, c, e.site.URL); len(pending) == 0 {
		t.Error("no write pending after a crawl stopped while the node stalled")
	}
	if _, err := c.Crawl(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.wantEveryPage(t, "after the next crawl")
	if pending := noneLost(t, c, e.site.URL); len(pending) > 0 {
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
func (r *retries) DeletesHeld(string, int)                 {}
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
type syncBuffer struct{ crawltest.LockedBuffer }

func (s *syncBuffer) lines(msg string) []string {
	var out []string
	for l := range strings.SplitSeq(s.String(), "\n") {
		if strings.Contains(l, "msg=\""+msg+"\"") {
			out = append(out, l)
		}
	}
	return out
}

func TestElasticsearchOutageIsWarnedOnceWithItsErrorAndItsRecoveryLogged(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t, "", "")
	cfg := e.cfg
	var log syncBuffer
	c := crawltest.NewLogged(t, cfg, slog.New(slog.NewTextHandler(&log, nil)))
	seen := newRetries()
	c.SetObserver(seen)
	e.set(t, faultproxy.Fault{Mode: faultproxy.Refuse})

	run := crawlInBackground(context.Background(), c)
	seen.await(t, 3*(len(faultPages)+1)) // every write refused three times or so
	e.set(t, faultproxy.Fault{Mode: faultproxy.Pass})
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
	e.wantEveryPage(t, "after the outage")
}
