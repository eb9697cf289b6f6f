package provider_test

import (
	"cmp"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/internal/chromiumtest"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
)

// churnSite serves one page under every ?id=, each time linking a fresh
// random copy of itself: every copy joins the page's group of duplicates.
// With script set, the link is a script taking the tab to the fresh copy
// (location.href) instead of an anchor.
type churnSite struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int // by request target
}

func newChurnSite(t *testing.T, script bool) *churnSite {
	t.Helper()
	s := &churnSite{hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.hits[r.URL.RequestURI()]++
		s.mu.Unlock()
		next := "/?id=" + strings.ToLower(rand.Text())
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if script {
			fmt.Fprintf(w, `<!doctype html><title>Churn</title><p>The same page under every id.</p>
<script>setTimeout(() => { location.href = %q; }, 20);</script>`, next)
			return
		}
		fmt.Fprintf(w, `<!doctype html><title>Churn</title><p>The same page under every id.</p><a href="%s">more</a>`, next)
	}))
	t.Cleanup(s.Close)
	return s
}

// requested lists the URLs the site was asked for, and those asked more
// than once with their counts.
func (s *churnSite) requested() (urls []string, repeated map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	repeated = map[string]int{}
	for target, n := range s.hits {
		urls = append(urls, s.URL+target)
		if n > 1 {
			repeated[target] = n
		}
	}
	return urls, repeated
}

// TestAGrowingGroupOfDuplicatesCostsNewURLsNotRepeatedFetches crawls a
// page that links a fresh ?id= copy of itself into the real node, with the
// embedded state store and with the one in Elasticsearch: every copy joins
// the page's group, and the URL budget ends the chain. Each URL is fetched
// once in the cycle, the group's document is written at most twice (the
// primary's fetch and one rewrite of its list at the cycle's end), and it
// lists every copy fetched.
func TestAGrowingGroupOfDuplicatesCostsNewURLsNotRepeatedFetches(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, global string }{
		{"embedded", ""},
		{"elasticsearch", "cluster: {state_index: %s-state, node_name: solo, partitions: 4, lease_ttl: 5s}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			esURL, index, site := estest.URL(t), estest.Index(t), newChurnSite(t, false)
			global := tc.global
			if global != "" {
				global = fmt.Sprintf(global, index)
			}
			cfg := crawltest.Config(t, global+syncConfig(esURL, index, t.TempDir(), site.URL+"/",
				"    honored_query_params: [id]\n    max_link_depth: 100\n    budget: {max_urls_per_host: 25}\n"))
			report := crawl(t, cfg)
			checkChurn(t, esURL, index, site, 25, report.Total.Reasons)
		})
	}
}

// TestARenderedPageNavigatingToAFreshCopyOfItselfIsRenderedOnce is the same
// churn through Chromium: the page's script takes the tab to a fresh
// ?id= copy, which becomes the page's link.
func TestARenderedPageNavigatingToAFreshCopyOfItselfIsRenderedOnce(t *testing.T) {
	t.Parallel()
	browser := chromiumtest.Path(t)
	esURL, index, site := estest.URL(t), estest.Index(t), newChurnSite(t, true)
	cfg := crawltest.Config(t, fmt.Sprintf("browser: {path: %s, tabs: 2}\n", browser)+
		syncConfig(esURL, index, t.TempDir(), site.URL+"/",
			"    honored_query_params: [id]\n    budget: {max_urls_per_host: 8}\n    render: {enabled: true, wait: network_idle, timeout: 30s}\n"))
	report := crawl(t, cfg)
	checkChurn(t, esURL, index, site, 8, report.Total.Reasons)
}

// checkChurn checks what a crawl of a churnSite to a budget of budget URLs
// left: each URL fetched once, and one document listing the copies.
func checkChurn(t *testing.T, esURL, index string, site *churnSite, budget int, reasons map[string]int) {
	t.Helper()
	urls, repeated := site.requested()
	if len(repeated) > 0 {
		t.Errorf("URLs fetched more than once in the cycle: %v", repeated)
	}
	if len(urls) != budget {
		t.Errorf("%d URLs fetched, want the budget's %d (reasons %v)", len(urls), budget, reasons)
	}
	paths, docs := indexed(t, esURL, index, site.URL)
	if !slices.Equal(paths, []string{"/"}) {
		t.Fatalf("the index holds %v, want the group's one document under /", paths)
	}
	var copies []string
	for _, u := range urls {
		if u != site.URL+"/" {
			copies = append(copies, u)
		}
	}
	slices.SortFunc(copies, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b)) })
	if got := docs["/"].Duplicates; !slices.Equal(got, copies) {
		t.Errorf("the document lists %d duplicates %v, want the %d copies fetched %v", len(got), got, len(copies), copies)
	}
	var doc struct {
		Version int `json:"_version"`
	}
	getJSONTest(t, esURL+"/"+index+"/_doc/"+url.PathEscape(docfields.ID(site.URL+"/")), &doc)
	if doc.Version > 2 {
		t.Errorf("the group's document was written %d times, want at most twice (its primary's fetch, one rewrite of its list)", doc.Version)
	}
}
