package provider_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/tmpfs"
)

// longURL is base + "/long/" padded with letters to exactly n bytes.
func longURL(base string, n int) string {
	head := base + "/long/"
	return head + strings.Repeat("x", n-len(head))
}

func TestAPageLinkingURLsTooLongToStoreIsFetchedOnceAndTheirRefusalReported(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	const bound = 32000
	tooLong, justOver, longest := longURL(site.URL, 40000), longURL(site.URL, bound+1), longURL(site.URL, bound)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	home := htmlPage("home", links(tooLong, justOver, longest))
	site.handle("/", func(w http.ResponseWriter, r *http.Request) {
		if site.hit("/") > 1 {
			cancel() // fetched again: the storm; stop it here rather than run forever
		}
		home(w, r)
	})
	site.html("/long/", "long", "<p>the longest URL the store can hold</p>")
	cfg, _ := testConfig(t, "", fmt.Sprintf("max_url_length: %d", bound), site.URL+"/")
	c := crawltest.New(t, cfg)
	report, err := c.Crawl(ctx)
	if err != nil {
		t.Fatalf("crawl: %v", err)
	}
	if n := site.hit("/"); n != 1 {
		t.Fatalf("the page linking URLs too long to store was fetched %d times, want once", n)
	}
	if n := site.hit(strings.TrimPrefix(longest, site.URL)); n != 1 {
		t.Errorf("the longest URL the store holds was fetched %d times, want once", n)
	}
	if n := report.Total.Reasons["url_too_long"]; n != 2 {
		t.Errorf("url_too_long counted %d times, want 2 (40,000 bytes and one over the bound)", n)
	}
	for _, e := range report.Examples {
		if e.Reason == "url_too_long" && len(e.URL) > 1024 {
			t.Errorf("the report's example of a URL too long is %d bytes, want it truncated", len(e.URL))
		}
	}
	unknown(t, c, tooLong)
}

// bigSite serves n pages under /p/, linked from the home page in sections
// of 100, each with a little text.
func bigSite(t *testing.T, n int) *testSite {
	site := newSite(t)
	var sections []string
	for s := 0; s*100 < n; s++ {
		var pages []string
		for p := s * 100; p < min(n, (s+1)*100); p++ {
			pages = append(pages, fmt.Sprintf("/p/%d.html", p))
		}
		path := fmt.Sprintf("/s/%d.html", s)
		site.html(path, path, links(pages...))
		sections = append(sections, path)
	}
	site.html("/", "home", links(sections...))
	site.html("/p/", "page", "<p>A page of the big site, with a few words in it.</p>")
	return site
}

func TestAFullStateStoreStopsTheCrawlWithENOSPCAndFetchesNoURLTwice(t *testing.T) {
	t.Parallel()
	const pages = 3000
	stateDir := tmpfs.Mount(t, 2<<20)
	site := bigSite(t, pages)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inner := site.Config.Handler
	site.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r)
		if site.hit(r.URL.RequestURI()) > 1 {
			cancel() // the refetch storm: stop it here rather than run forever
		}
	})
	// bigSite's pages are alike: keep_duplicates keeps each its own document, fetched once.
	cfg, _ := testConfig(t, fmt.Sprintf("state_dir: %q\nfetch: {concurrency: 8}", stateDir), "politeness: {max_parallel_per_host: 8}\nkeep_duplicates: true", site.URL+"/")
	var log syncBuffer
	c := crawltest.NewLogged(t, cfg, slog.New(slog.NewTextHandler(&log, nil)))
	_, err := c.Crawl(ctx)
	// The writes whose acknowledgements the full store refused stay
	// pending; one line says so, not one per write.
	if n := strings.Count(log.String(), "cannot record index acknowledgement"); n > 1 {
		t.Errorf("%d log lines about acknowledgements the store refused, want at most one", n)
	}
	requested := site.requested()
	total := 0
	for _, u := range requested {
		n := site.hit(u)
		total += n
		if n > 1 {
			t.Errorf("%s was fetched %d times, want at most once", u, n)
		}
	}
	if err == nil {
		t.Fatalf("the crawl into a full state store ended without an error after %d requests", total)
	}
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "state store "+stateDir) {
		t.Errorf("crawl error = %v, want one naming the state store %s and ENOSPC", err, stateDir)
	}
	t.Logf("the site served %d requests; the crawl ended with: %v", total, err)
	// The store filled while writing, not when it was opened (robots.txt and
	// the home page at most), and the crawl stopped there. How far it got
	// depends on how the store's batches fell: 89 to 1,388 requests seen.
	if siteURLs := pages + pages/100 + 2; total <= 2 || total >= siteURLs {
		t.Errorf("the site served %d requests, want the crawl stopped part way through its %d URLs", total, siteURLs)
	}
}

// damageStore overwrites every page of the store file in dir but the two
// meta pages with random bytes, as bit rot or a stray writer might.
func damageStore(t *testing.T, dir string) {
	fh, err := os.OpenFile(filepath.Join(dir, "frontier.db"), os.O_WRONLY, 0)
	if err != nil {
		t.Error(err)
		return
	}
	defer fh.Close()
	st, _ := fh.Stat()
	page := make([]byte, 4096)
	for off := int64(2 * len(page)); off < st.Size(); off += int64(len(page)) {
		for i := range page {
			page[i] = byte(rand.Uint32())
		}
		if _, err := fh.WriteAt(page, off); err != nil {
			t.Error(err)
			return
		}
	}
}

func TestAStoreDamagedMidCrawlStopsTheCrawlWithTheCorruptErrorAndNoPanic(t *testing.T) {
	t.Parallel()
	const pages = 3000
	site := bigSite(t, pages)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, _ := testConfig(t, "fetch: {concurrency: 8}", "politeness: {max_parallel_per_host: 8}\nkeep_duplicates: true", site.URL+"/") // bigSite's pages are alike
	var served atomic.Int64
	inner := site.Config.Handler
	site.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r)
		if served.Add(1) == 200 {
			damageStore(t, cfg.StateDir)
		}
		if site.hit(r.URL.RequestURI()) > 1 {
			cancel()
		}
	})
	c := crawltest.New(t, cfg)
	_, err := c.Crawl(ctx)
	var se *frontier.StoreError
	if !errors.As(err, &se) || !se.Corrupt ||
		!strings.Contains(err.Error(), "state store "+cfg.StateDir+" is corrupt: restore it or remove it to start over") {
		t.Fatalf("crawl over a store damaged mid-crawl = %v, want the corrupt state store error", err)
	}
	for _, u := range site.requested() {
		if n := site.hit(u); n > 1 {
			t.Errorf("%s was fetched %d times, want at most once", u, n)
		}
	}
	if n := served.Load(); n >= pages {
		t.Errorf("the site served %d requests: the crawl went on over a damaged store", n)
	}
}
