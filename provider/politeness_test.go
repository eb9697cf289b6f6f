package provider_test

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// pagePaths returns n page paths under prefix.
func pagePaths(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d.html", prefix, i)
	}
	return out
}

// startTimes are the times of the first request of each path, sorted.
func startTimes(t *testing.T, site *testSite, paths ...string) []time.Time {
	t.Helper()
	var out []time.Time
	for _, p := range paths {
		at := site.at(p)
		if len(at) != 1 {
			t.Fatalf("%s requested %d times, want 1", p, len(at))
		}
		out = append(out, at[0])
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

func TestPolitenessDelaySpacesTheRequestsToAHost(t *testing.T) {
	t.Parallel()
	const delay = 50 * time.Millisecond
	site := newSite(t)
	pages := pagePaths("/p", 5)
	site.html("/", "home", links(pages...))
	for _, p := range pages {
		site.html(p, p, "")
	}
	cfg, _ := testConfig(t, "", "politeness: {delay: 50ms, max_parallel_per_host: 1}", site.URL+"/")

	crawlKeep(t, cfg)

	starts := startTimes(t, site, append([]string{"/"}, pages...)...)
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < delay {
			t.Errorf("request %d came %v after the previous one; the delay is %v", i, gap, delay)
		}
	}
}

func TestRetryAfterBacksTheWholeHostOff(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	pages := pagePaths("/p", 4)
	site.html("/", "home", links(append([]string{"/busy.html"}, pages...)...))
	for _, p := range pages {
		site.html(p, p, "")
	}
	var once sync.Once
	site.handle("/busy.html", func(w http.ResponseWriter, r *http.Request) {
		busy := false
		once.Do(func() { busy = true })
		if busy {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		htmlPage("busy", "")(w, r)
	})
	cfg, out := testConfig(t, "", "politeness: {max_parallel_per_host: 1}", site.URL+"/")

	crawlKeep(t, cfg)

	refused := site.at("/busy.html")[0]
	for _, p := range append(pages, "/busy.html") {
		at := site.at(p)
		if last := at[len(at)-1]; last.Sub(refused) < time.Second {
			t.Errorf("%s requested %v after the 429 with Retry-After: 1", p, last.Sub(refused))
		}
	}
	if got := len(indexedURLs(t, out)); got != 6 {
		t.Errorf("%d documents, want 6", got)
	}
}

func TestHostInItsDelayDoesNotHoldUpTheOtherHosts(t *testing.T) {
	t.Parallel()
	slow, fast := newSite(t), newSite(t)
	slowPages, fastPages := pagePaths("/s", 8), pagePaths("/f", 8)
	slow.html("/", "slow", links(slowPages...))
	fast.html("/", "fast", links(fastPages...))
	for _, p := range slowPages {
		slow.html(p, p, "")
	}
	for _, p := range fastPages {
		fast.html(p, p, "")
	}
	// One worker for both hosts; the slow one asks for 100ms between requests.
	slow.text("/robots.txt", "text/plain", "User-agent: *\nCrawl-delay: 0.1\n")
	cfg, _ := testConfig(t, "fetch: {concurrency: 1}", "", slow.URL+"/", fast.URL+"/")

	crawlKeep(t, cfg)

	slowLast := startTimes(t, slow, slowPages...)[len(slowPages)-1]
	fastLast := startTimes(t, fast, fastPages...)[len(fastPages)-1]
	if !fastLast.Before(slowLast) {
		t.Errorf("the fast host's last page came %v after the slow host's: it waited behind the slow host's delays", fastLast.Sub(slowLast))
	}
}

func TestGlobalConcurrencyBoundsRequestsAcrossHosts(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	inflight, peak := 0, 0
	hold := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inflight++
		peak = max(peak, inflight)
		mu.Unlock()
		defer func() { mu.Lock(); inflight--; mu.Unlock() }()
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Millisecond):
		}
		htmlPage("p", "")(w, r)
	}
	var starts []string
	for range 3 {
		site := newSite(t)
		pages := pagePaths("/p", 6)
		site.html("/", "home", links(pages...))
		for _, p := range pages {
			site.handle(p, hold)
		}
		starts = append(starts, site.URL+"/")
	}
	// The pages are alike: keep_duplicates keeps each its own document, fetched once.
	cfg, _ := testConfig(t, "fetch: {concurrency: 3}", "politeness: {max_parallel_per_host: 2}\nkeep_duplicates: true", starts...)

	_, report := crawlKeep(t, cfg)

	if report.Total.Fetched != 21 {
		t.Errorf("fetched %d, want 21", report.Total.Fetched)
	}
	if peak > 3 {
		t.Errorf("%d requests at once across hosts, fetch.concurrency is 3", peak)
	}
	if peak < 3 {
		t.Errorf("never more than %d requests at once: the limit of 3 is not reached", peak)
	}
}

func TestRobotsTxtIsARequestThePolitenessDelayFollows(t *testing.T) {
	t.Parallel()
	// A start host's robots.txt is read before the cycle leases anything, another host's
	// when its first URL is leased: either way it is a load from the host, and the host's
	// next request waits the delay after it.
	const delay = 200 * time.Millisecond
	start, other := newSite(t), newSite(t)
	start.html("/", "home", links(other.URL+"/page.html"))
	other.html("/page.html", "page", "")
	cfg, out := testConfig(t, "", "stay_on_start_hosts: false\npoliteness: {delay: 200ms, max_parallel_per_host: 1}", start.URL+"/")

	crawlKeep(t, cfg)

	for _, c := range []struct {
		site *testSite
		page string
	}{{start, "/"}, {other, "/page.html"}} {
		robots, page := c.site.at("/robots.txt"), c.site.at(c.page)
		if len(robots) != 1 || len(page) != 1 {
			t.Fatalf("%s: robots.txt requested %d times, %s %d times; want once each", c.site.URL, len(robots), c.page, len(page))
		}
		if gap := page[0].Sub(robots[0]); gap < delay {
			t.Errorf("%s%s requested %v after its host's robots.txt; the delay is %v", c.site.URL, c.page, gap, delay)
		}
	}
	want := []string{start.URL + "/", other.URL + "/page.html"}
	slices.Sort(want)
	if got := indexedURLs(t, out); !slices.Equal(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
}
