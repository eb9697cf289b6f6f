package robots

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/fakeclock"
)

const testAgent = "crawlspace/0.1 (+https://example.com/bot)"

// newClock is a settable time source, so expiry is tested without sleeping.
func newClock() *fakeclock.Clock { return fakeclock.New(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)) }

// site is a loopback server whose robots.txt answer the test changes, and
// which counts the requests for it.
type site struct {
	*httptest.Server
	hits   atomic.Int64
	mu     sync.Mutex
	status int
	body   string
	agents []string
}

func newSite(t *testing.T, status int, body string) *site {
	s := &site{status: status, body: body}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		s.hits.Add(1)
		s.mu.Lock()
		status, body := s.status, s.body
		s.agents = append(s.agents, r.UserAgent())
		s.mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) set(status int, body string) {
	s.mu.Lock()
	s.status, s.body = status, body
	s.mu.Unlock()
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func newTestCache(clk *fakeclock.Clock, opts CacheOptions) *Cache {
	opts.UserAgent = testAgent
	opts.Now = clk.Now
	return NewCache(HTTPFetcher(&http.Client{Timeout: time.Minute}, testAgent), opts)
}

func allowed(t *testing.T, c *Cache, raw string) (bool, string, error) {
	t.Helper()
	return c.Allowed(context.Background(), mustURL(t, raw))
}

func TestCacheAppliesFetchedRulesAndSendsUserAgent(t *testing.T) {
	s := newSite(t, 200, "User-agent: crawlspace\nDisallow: /private\nSitemap: /s.xml\n")
	c := newTestCache(newClock(), CacheOptions{})
	if ok, line, err := allowed(t, c, s.URL+"/private/x"); ok || err != nil || line != "robots.txt:2: Disallow: /private" {
		t.Errorf("/private/x: allowed=%v line=%q err=%v", ok, line, err)
	}
	if ok, _, err := allowed(t, c, s.URL+"/public?x=1"); !ok || err != nil {
		t.Errorf("/public: allowed=%v err=%v", ok, err)
	}
	r, err := c.Get(context.Background(), mustURL(t, s.URL+"/"))
	if err != nil || len(r.Sitemaps()) != 1 {
		t.Errorf("Get: %v, sitemaps %q", err, r.Sitemaps())
	}
	if s.hits.Load() != 1 {
		t.Errorf("%d fetches, want 1", s.hits.Load())
	}
	if s.agents[0] != testAgent {
		t.Errorf("robots.txt fetched as %q", s.agents[0])
	}
}

func TestCacheNotFoundAllowsAll(t *testing.T) {
	for _, status := range []int{404, 401, 403, 410} {
		s := newSite(t, status, "User-agent: *\nDisallow: /\n")
		c := newTestCache(newClock(), CacheOptions{})
		if ok, _, err := allowed(t, c, s.URL+"/anything"); !ok || err != nil {
			t.Errorf("HTTP %d: allowed=%v err=%v, want everything allowed", status, ok, err)
		}
	}
}

func TestCacheServerErrorDisallowsAllThenRecovers(t *testing.T) {
	s := newSite(t, 500, "")
	clk := newClock()
	c := newTestCache(clk, CacheOptions{RetryMin: time.Minute, RetryMax: 10 * time.Minute})
	ok, line, err := allowed(t, c, s.URL+"/page")
	var ue *UnavailableError
	if ok || !errors.Is(err, ErrUnavailable) || !errors.As(err, &ue) || ue.Status != 500 {
		t.Fatalf("HTTP 500: allowed=%v err=%v, want disallowed and ErrUnavailable", ok, err)
	}
	if !ue.RetryAt.Equal(clk.Now().Add(time.Minute)) || !strings.Contains(line, "HTTP 500") {
		t.Errorf("RetryAt %v, line %q", ue.RetryAt, line)
	}
	// The failure is cached only until the retry, not for the TTL.
	s.set(200, "User-agent: *\nDisallow: /admin\n")
	clk.Advance(30 * time.Second)
	if ok, _, _ := allowed(t, c, s.URL+"/page"); ok || s.hits.Load() != 1 {
		t.Errorf("before the retry: allowed=%v after %d fetches", ok, s.hits.Load())
	}
	clk.Advance(31 * time.Second)
	if ok, _, err := allowed(t, c, s.URL+"/page"); !ok || err != nil {
		t.Errorf("after recovery: allowed=%v err=%v", ok, err)
	}
	if ok, _, _ := allowed(t, c, s.URL+"/admin"); ok {
		t.Error("after recovery the real rules do not apply")
	}
	if s.hits.Load() != 2 {
		t.Errorf("%d fetches, want 2", s.hits.Load())
	}
}

func TestCacheRetryBackoffDoubles(t *testing.T) {
	s := newSite(t, 503, "")
	clk := newClock()
	c := newTestCache(clk, CacheOptions{RetryMin: time.Minute, RetryMax: 4 * time.Minute})
	for i, wait := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 4 * time.Minute} {
		_, _, err := allowed(t, c, s.URL+"/")
		var ue *UnavailableError
		if !errors.As(err, &ue) || ue.RetryAt.Sub(clk.Now()) != wait {
			t.Fatalf("failure %d: err %v, want a retry in %v", i+1, err, wait)
		}
		clk.Advance(wait)
	}
}

func TestCacheTooManyRequestsDisallowsAll(t *testing.T) {
	s := newSite(t, http.StatusTooManyRequests, "")
	c := newTestCache(newClock(), CacheOptions{})
	if ok, _, err := allowed(t, c, s.URL+"/"); ok || !errors.Is(err, ErrUnavailable) {
		t.Errorf("HTTP 429: allowed=%v err=%v, want disallowed until a retry", ok, err)
	}
}

func TestCacheUnreachableDisallowsAll(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c := newTestCache(newClock(), CacheOptions{})
	ok, line, err := allowed(t, c, "http://"+addr+"/page")
	var ue *UnavailableError
	if ok || !errors.As(err, &ue) || ue.Status != 0 || ue.Err == nil {
		t.Fatalf("closed port: allowed=%v err=%v, want disallowed with the network error", ok, err)
	}
	if !strings.Contains(line, "unreachable") || strings.Count(line, "http://") != 1 {
		t.Errorf("explanation %q does not say why once", line)
	}
}

// A robots.txt that stays unreachable is still disallowed for weeks; after
// StaleAfter the last good copy is used again (RFC 9309 2.3.1.4).
func TestCacheLongOutageFallsBackToLastGoodCopy(t *testing.T) {
	s := newSite(t, 200, "User-agent: *\nDisallow: /admin\n")
	clk := newClock()
	c := newTestCache(clk, CacheOptions{TTL: time.Hour, RetryMax: time.Hour, StaleAfter: 30 * 24 * time.Hour})
	if ok, _, _ := allowed(t, c, s.URL+"/page"); !ok {
		t.Fatal("good copy not applied")
	}
	s.set(500, "")
	clk.Advance(2 * time.Hour)
	if ok, _, err := allowed(t, c, s.URL+"/page"); ok || !errors.Is(err, ErrUnavailable) {
		t.Errorf("refresh failed: allowed=%v err=%v, want disallowed", ok, err)
	}
	clk.Advance(29 * 24 * time.Hour)
	if ok, _, _ := allowed(t, c, s.URL+"/page"); ok {
		t.Error("29 days unreachable: allowed, want disallowed")
	}
	clk.Advance(24*time.Hour + time.Minute)
	if ok, _, err := allowed(t, c, s.URL+"/page"); !ok || err != nil {
		t.Errorf("30 days unreachable: allowed=%v err=%v, want the last good copy", ok, err)
	}
	if ok, _, _ := allowed(t, c, s.URL+"/admin"); ok {
		t.Error("30 days unreachable: the last good copy's rules are not applied")
	}
}

func TestCacheFollowsRedirectToAnotherPath(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			http.Redirect(w, r, "/config/robots-live.txt", http.StatusMovedPermanently)
		case "/config/robots-live.txt":
			hits.Add(1)
			io.WriteString(w, "User-agent: *\nDisallow: /moved-rule\n")
		}
	}))
	defer srv.Close()
	c := newTestCache(newClock(), CacheOptions{})
	if ok, _, err := allowed(t, c, srv.URL+"/moved-rule/x"); ok || err != nil || hits.Load() != 1 {
		t.Errorf("allowed=%v err=%v after %d fetches of the target, want the target's rules", ok, err, hits.Load())
	}
}

// RFC 9309 2.3.1.2: past five redirects the file may be taken as absent.
func TestCacheRedirectLoopMeansNoRobotsTxt(t *testing.T) {
	var hops atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hops.Add(1)
		http.Redirect(w, r, fmt.Sprintf("/robots-%d.txt", n), http.StatusFound)
	}))
	defer srv.Close()
	c := newTestCache(newClock(), CacheOptions{})
	if ok, _, err := allowed(t, c, srv.URL+"/x"); !ok || err != nil {
		t.Errorf("redirect loop: allowed=%v err=%v, want everything allowed", ok, err)
	}
	if hops.Load() != 1+MaxRedirects {
		t.Errorf("%d requests, want the first plus %d redirects", hops.Load(), MaxRedirects)
	}
}

func TestCacheConcurrentGetsFetchOnce(t *testing.T) {
	release := make(chan struct{})
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		<-release
		io.WriteString(w, "User-agent: *\nDisallow: /x\n")
	}))
	defer srv.Close()
	fetch := HTTPFetcher(nil, testAgent)
	c := NewCache(func(ctx context.Context, u string) (int, io.ReadCloser, error) {
		ctx.Done() // counts the fetching goroutine as arrived
		return fetch(ctx, u)
	}, CacheOptions{UserAgent: testAgent})

	const n = 20
	arrived := make(chan struct{}, n)
	var wg sync.WaitGroup
	results := make(chan bool, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := &arrivalCtx{Context: context.Background(), arrived: arrived}
			ok, _, err := c.Allowed(ctx, mustURL(t, fmt.Sprintf("%s/x/%d", srv.URL, i)))
			results <- !ok && err == nil
		}()
	}
	// Hold the one fetch until every goroutine is either making it or
	// waiting on it, so the test does not pass by arriving late.
	for range n {
		<-arrived
	}
	close(release)
	wg.Wait()
	close(results)
	for r := range results {
		if !r {
			t.Error("a concurrent Get did not get the fetched rules")
		}
	}
	if hits.Load() != 1 {
		t.Errorf("%d fetches for %d concurrent Gets, want 1", hits.Load(), n)
	}
}

// arrivalCtx tells arrived of each goroutine that has asked for Done,
// once: the cache's waiters and fetcher do, while they block.
type arrivalCtx struct {
	context.Context
	once    sync.Once
	arrived chan<- struct{}
}

func (c *arrivalCtx) Done() <-chan struct{} {
	c.once.Do(func() { c.arrived <- struct{}{} })
	return c.Context.Done()
}

func TestCacheTTLExpiryRefetches(t *testing.T) {
	s := newSite(t, 200, "User-agent: *\nDisallow: /old\n")
	clk := newClock()
	c := newTestCache(clk, CacheOptions{TTL: time.Hour})
	allowed(t, c, s.URL+"/")
	s.set(200, "User-agent: *\nDisallow: /new\n")
	clk.Advance(59 * time.Minute)
	if ok, _, _ := allowed(t, c, s.URL+"/old"); ok || s.hits.Load() != 1 {
		t.Errorf("within the TTL: /old allowed=%v after %d fetches, want the cached copy", ok, s.hits.Load())
	}
	clk.Advance(2 * time.Minute)
	if ok, _, _ := allowed(t, c, s.URL+"/new"); ok || s.hits.Load() != 2 {
		t.Errorf("past the TTL: /new allowed=%v after %d fetches, want a refetch", ok, s.hits.Load())
	}
}

func TestCacheTTLIsAtMost24Hours(t *testing.T) {
	s := newSite(t, 200, "")
	clk := newClock()
	c := newTestCache(clk, CacheOptions{TTL: 7 * 24 * time.Hour})
	allowed(t, c, s.URL+"/")
	clk.Advance(24*time.Hour + time.Second)
	allowed(t, c, s.URL+"/")
	if s.hits.Load() != 2 {
		t.Errorf("%d fetches over 24h, want 2", s.hits.Load())
	}
}

func TestCacheKeyedBySchemeHostAndPort(t *testing.T) {
	a := newSite(t, 200, "User-agent: *\nDisallow: /a\n")
	b := newSite(t, 200, "User-agent: *\nDisallow: /b\n")
	c := newTestCache(newClock(), CacheOptions{})
	// Same origin, spelled differently: one fetch.
	for _, raw := range []string{a.URL + "/x", "HTTP" + a.URL[4:] + "/y?z", a.URL + "/a"} {
		allowed(t, c, raw)
	}
	if a.hits.Load() != 1 {
		t.Errorf("one origin fetched %d times", a.hits.Load())
	}
	// Another port is another origin with its own rules.
	if ok, _, _ := allowed(t, c, b.URL+"/a"); !ok {
		t.Error("port b got port a's rules")
	}
	if ok, _, _ := allowed(t, c, b.URL+"/b"); ok || b.hits.Load() != 1 {
		t.Errorf("port b: /b allowed=%v after %d fetches", ok, b.hits.Load())
	}
	for _, raw := range []string{"ftp://example.com/x", "mailto:a@example.com", "http:///x"} {
		if r, err := c.Get(context.Background(), mustURL(t, raw)); r != nil || err == nil {
			t.Errorf("Get(%q) = %v, %v; want an error", raw, r, err)
		}
	}
}

func TestOriginKeyAndRobotsURL(t *testing.T) {
	for raw, want := range map[string][2]string{
		"http://Example.COM/a?b":           {"http://example.com:80", "http://example.com/robots.txt"},
		"http://example.com:80/":           {"http://example.com:80", "http://example.com/robots.txt"},
		"https://user:secret@example.com/": {"https://example.com:443", "https://example.com/robots.txt"},
		"https://example.com:8443/x":       {"https://example.com:8443", "https://example.com:8443/robots.txt"},
		"http://[::1]:8080/x":              {"http://[::1]:8080", "http://[::1]:8080/robots.txt"},
		"http://[::1]/x":                   {"http://[::1]:80", "http://[::1]/robots.txt"},
	} {
		key, robotsURL, err := origin(mustURL(t, raw))
		if err != nil || key != want[0] || robotsURL != want[1] {
			t.Errorf("origin(%q) = %q, %q, %v; want %q", raw, key, robotsURL, err, want)
		}
	}
}

func TestCacheReadsAtMost500KiB(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "User-agent: *\nDisallow: /early\n")
		line := strings.Repeat("#", 1023) + "\n"
		for i := 0; i < 8<<10; i++ { // 8 MiB of comments
			if _, err := io.WriteString(w, line); err != nil {
				return // the cache hung up: it did not read to the end
			}
		}
		io.WriteString(w, "Disallow: /late\n")
	}))
	defer srv.Close()
	c := newTestCache(newClock(), CacheOptions{})
	if ok, _, _ := allowed(t, c, srv.URL+"/early"); ok {
		t.Error("rule before the cap ignored")
	}
	if ok, _, _ := allowed(t, c, srv.URL+"/late"); !ok {
		t.Error("rule after the cap applied")
	}
}

func TestCacheCancelledGetIsNotCached(t *testing.T) {
	s := newSite(t, 200, "User-agent: *\nDisallow: /x\n")
	var calls atomic.Int64
	fetch := HTTPFetcher(nil, testAgent)
	c := NewCache(func(ctx context.Context, u string) (int, io.ReadCloser, error) {
		if calls.Add(1) == 1 {
			return 0, nil, ctx.Err()
		}
		return fetch(ctx, u)
	}, CacheOptions{UserAgent: testAgent})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r, err := c.Get(ctx, mustURL(t, s.URL+"/x")); r != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Get = %v, %v; want context.Canceled", r, err)
	}
	if ok, _, err := allowed(t, c, s.URL+"/x"); ok || err != nil || s.hits.Load() != 1 {
		t.Errorf("next Get: allowed=%v err=%v after %d fetches, want a fresh fetch", ok, err, s.hits.Load())
	}
}

func TestCacheEvictsLeastRecentlyUsedOrigins(t *testing.T) {
	sites := []*site{newSite(t, 200, ""), newSite(t, 200, ""), newSite(t, 200, "")}
	c := newTestCache(newClock(), CacheOptions{MaxEntries: 2})
	allowed(t, c, sites[0].URL+"/")
	allowed(t, c, sites[1].URL+"/")
	allowed(t, c, sites[0].URL+"/") // sites[1] is now the least recently used
	allowed(t, c, sites[2].URL+"/")
	allowed(t, c, sites[0].URL+"/")
	allowed(t, c, sites[1].URL+"/")
	if got := [3]int64{sites[0].hits.Load(), sites[1].hits.Load(), sites[2].hits.Load()}; got != [3]int64{1, 2, 1} {
		t.Errorf("fetches per site %v, want [1 2 1]", got)
	}
	c.mu.Lock()
	n := len(c.entries)
	c.mu.Unlock()
	if n > 2 {
		t.Errorf("%d entries kept, cap is 2", n)
	}
}

func TestCacheBoundsBytes(t *testing.T) {
	big := "User-agent: *\n" + strings.Repeat("Disallow: /some/long/path/to/keep/out/of/the/index\n", 2000)
	sites := []*site{newSite(t, 200, big), newSite(t, 200, big), newSite(t, 200, big)}
	c := newTestCache(newClock(), CacheOptions{})
	allowed(t, c, sites[0].URL+"/")
	one := c.bytes
	c.opts.MaxBytes = 2*one + one/2 // room for two such files
	allowed(t, c, sites[1].URL+"/")
	allowed(t, c, sites[2].URL+"/")
	c.mu.Lock()
	n, bytes := len(c.entries), c.bytes
	c.mu.Unlock()
	if bytes > c.opts.MaxBytes || n != 2 {
		t.Errorf("%d entries holding %d bytes, want 2 within %d", n, bytes, c.opts.MaxBytes)
	}
	allowed(t, c, sites[0].URL+"/")
	if sites[0].hits.Load() != 2 {
		t.Error("the least recently used origin was not the one evicted")
	}
}

func TestCacheFetcherPanicReleasesWaiters(t *testing.T) {
	s := newSite(t, 200, "User-agent: *\nDisallow: /x\n")
	var calls atomic.Int64
	fetch := HTTPFetcher(nil, testAgent)
	c := NewCache(func(ctx context.Context, u string) (int, io.ReadCloser, error) {
		if calls.Add(1) == 1 {
			panic("fetcher bug")
		}
		return fetch(ctx, u)
	}, CacheOptions{UserAgent: testAgent})
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the fetcher's panic was swallowed")
			}
		}()
		c.Get(context.Background(), mustURL(t, s.URL+"/"))
	}()
	if ok, _, err := allowed(t, c, s.URL+"/x"); ok || err != nil {
		t.Errorf("after a panic: allowed=%v err=%v, want a fresh fetch", ok, err)
	}
}
