package provider_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
)

// mutableSite is a site whose pages a test edits between crawls. Pages
// carry an ETag and Last-Modified and answer conditional requests with 304.
type mutableSite struct {
	*httptest.Server
	mu      sync.Mutex
	pages   map[string]*mpage
	fetches map[string]int // 200 answers by path
	notMod  atomic.Int32
}

type mpage struct {
	title, body string
	links       []string
	modified    time.Time
	// noValidators serves the page without ETag or Last-Modified.
	noValidators bool
}

func newMutableSite(t *testing.T) *mutableSite {
	s := &mutableSite{pages: map[string]*mpage{}, fetches: map[string]int{}}
	s.Server = httptest.NewServer(s)
	t.Cleanup(s.Close)
	return s
}

func (s *mutableSite) set(path, title, body string, links ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages[path] = &mpage{title: title, body: body, links: links, modified: time.Now().UTC().Truncate(time.Second)}
}

func (s *mutableSite) remove(path string) {
	s.mu.Lock()
	delete(s.pages, path)
	s.mu.Unlock()
}

func (s *mutableSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	p := s.pages[r.URL.Path]
	var html, etag string
	var mod time.Time
	if p != nil {
		var links strings.Builder
		for _, l := range p.links {
			fmt.Fprintf(&links, `<li><a href="%s">%s</a></li>`, l, l)
		}
		html = fmt.Sprintf("<!doctype html><title>%s</title><h1>%s</h1><p>%s</p><ul>%s</ul>", p.title, p.title, p.body, links.String())
		sum := sha256.Sum256([]byte(html))
		etag = `"` + hex.EncodeToString(sum[:8]) + `"`
		mod = p.modified
		if p.noValidators {
			etag, mod = "", time.Time{}
		}
	}
	s.mu.Unlock()
	if p == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if etag != "" {
		w.Header().Set("ETag", etag)
		w.Header().Set("Last-Modified", mod.Format(http.TimeFormat))
		if r.Header.Get("If-None-Match") == etag {
			s.notMod.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	s.mu.Lock()
	s.fetches[r.URL.Path]++
	s.mu.Unlock()
	fmt.Fprint(w, html)
}

// indexed returns the paths of the documents in the alias, sorted, failing
// on a document whose _id does not derive from its URL.
func indexed(t *testing.T, esURL, index, base string) ([]string, map[string]*docfields.Document) {
	t.Helper()
	docs := searchAll(t, esURL, index)
	byPath := map[string]*docfields.Document{}
	var paths []string
	for id, d := range docs {
		if docfields.ID(d.URL) != id {
			t.Errorf("document %s holds doc_url %s", id, d.URL)
		}
		p := strings.TrimPrefix(d.URL, base)
		byPath[p] = d
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths, byPath
}

func syncConfig(esURL, index, stateDir, start, extra string) string {
	return fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0}
state_dir: %s
allow_private_networks: true
sources:
  - name: site
    start_urls: [%q]
    max_age: 1ms
%s`, esURL, index, stateDir, start, extra)
}

// TestRecrawlKeepsTheIndexExactlyInStepWithAChangingSite crawls, edits the
// site (a page added, one changed, one deleted, one unlinked, validators
// changed or dropped), and crawls again: each time the index must hold
// exactly what the site says, with each decision counted.
func TestRecrawlKeepsTheIndexExactlyInStepWithAChangingSite(t *testing.T) {
	t.Parallel()
	esURL := estest.URL(t)
	index := estest.Index(t)
	site := newMutableSite(t)
	site.set("/", "Home", "Welcome home.", "/a", "/b", "/c", "/e")
	site.set("/a", "Alpha", "First page.")
	site.set("/b", "Bravo", "Second page.")
	site.set("/c", "Charlie", "Third page.")
	site.set("/e", "Echo", "Fifth page.")
	state := t.TempDir()
	cfg := crawltest.Config(t, syncConfig(esURL, index, state, site.URL+"/", ""))

	first := crawl(t, cfg)
	paths, _ := indexed(t, esURL, index, site.URL)
	if want := []string{"/", "/a", "/b", "/c", "/e"}; !slices.Equal(paths, want) {
		t.Fatalf("after the first crawl the index holds %v, want %v", paths, want)
	}
	if first.Total.Created != 5 {
		t.Errorf("first crawl: %+v, want 5 created", first.Total)
	}

	// Edit the site: D added and linked from home, B changed, C deleted,
	// E unlinked but still served (orphans are kept by default), A served
	// without validators from now on (compared by hash).
	site.set("/", "Home", "Welcome home.", "/a", "/b", "/c", "/d")
	site.set("/b", "Bravo", "Second page, revised.")
	site.remove("/c")
	site.set("/d", "Delta", "Fourth page.")
	site.mu.Lock()
	site.pages["/a"].noValidators = true
	site.mu.Unlock()
	letMaxAgePass(t)

	second := crawl(t, crawltest.Config(t, syncConfig(esURL, index, state, site.URL+"/", "")))
	paths, docs := indexed(t, esURL, index, site.URL)
	if want := []string{"/", "/a", "/b", "/d", "/e"}; !slices.Equal(paths, want) {
		t.Fatalf("after the edits the index holds %v, want %v", paths, want)
	}
	if got := docs["/b"].Body; !strings.Contains(got, "revised") {
		t.Errorf("/b was not updated: %q", got)
	}
	k := second.Total
	// Home changed (its links), B changed; D is new; C is gone; A (no
	// validators, same content) and E (304) are unchanged.
	if k.Created != 1 || k.Updated != 2 || k.Deleted != 1 || k.Unchanged != 2 {
		t.Errorf("second crawl counts created %d updated %d deleted %d unchanged %d; want 1, 2, 1, 2 (%+v)",
			k.Created, k.Updated, k.Deleted, k.Unchanged, k)
	}
	if site.notMod.Load() < 1 {
		t.Error("no conditional request was answered 304: validators were not sent")
	}

	// Nothing changes: a third crawl writes nothing.
	letMaxAgePass(t)
	third := crawl(t, crawltest.Config(t, syncConfig(esURL, index, state, site.URL+"/", "")))
	if k := third.Total; k.Created+k.Updated+k.Deleted != 0 || k.Unchanged != 5 {
		t.Errorf("an unchanged site cost writes: %+v", k)
	}
	paths, _ = indexed(t, esURL, index, site.URL)
	if want := []string{"/", "/a", "/b", "/d", "/e"}; !slices.Equal(paths, want) {
		t.Fatalf("after an unchanged crawl the index holds %v, want %v", paths, want)
	}
}

// TestConfigChangeRemovesAnAreaAndAddsAnother excludes an area the index
// holds and lifts an exclusion: the next crawl deletes the first area and
// indexes the second, with no manual step.
func TestConfigChangeRemovesAnAreaAndAddsAnother(t *testing.T) {
	t.Parallel()
	esURL := estest.URL(t)
	index := estest.Index(t)
	site := newMutableSite(t)
	site.set("/", "Home", "Welcome.", "/docs/one", "/docs/two", "/news/one")
	site.set("/docs/one", "Doc one", "Docs.")
	site.set("/docs/two", "Doc two", "More docs.")
	site.set("/news/one", "News one", "News.")
	state := t.TempDir()

	crawl(t, crawltest.Config(t, syncConfig(esURL, index, state, site.URL+"/", "    exclude: [/news/]\n")))
	paths, _ := indexed(t, esURL, index, site.URL)
	if want := []string{"/", "/docs/one", "/docs/two"}; !slices.Equal(paths, want) {
		t.Fatalf("with /news/ excluded the index holds %v, want %v", paths, want)
	}

	report := crawl(t, crawltest.Config(t, syncConfig(esURL, index, state, site.URL+"/", "    exclude: [/docs/]\n")))
	paths, _ = indexed(t, esURL, index, site.URL)
	if want := []string{"/", "/news/one"}; !slices.Equal(paths, want) {
		t.Fatalf("with /docs/ excluded instead the index holds %v, want %v (report %+v)", paths, want, report.Total)
	}
	if report.Total.Deleted != 2 || report.Total.Created != 1 {
		t.Errorf("config change counted %d deleted and %d created, want 2 and 1", report.Total.Deleted, report.Total.Created)
	}
}

// TestMappingChangeBuildsANewIndexWhileSearchesSeeTheOldOneWhole changes the
// document mapping (a new extra field): the next crawl builds a new physical
// index from the known URLs, and a search running against the alias
// throughout never sees fewer documents than the site has.
func TestMappingChangeBuildsANewIndexWhileSearchesSeeTheOldOneWhole(t *testing.T) {
	t.Parallel()
	esURL := estest.URL(t)
	index := estest.Index(t)
	site := newMutableSite(t)
	const pages = 30
	var links []string
	for i := range pages - 1 {
		p := fmt.Sprintf("/p%d", i)
		links = append(links, p)
		site.set(p, "Page "+p, "Text of "+p)
	}
	site.set("/", "Home", "Welcome.", links...)
	state := t.TempDir()
	base := syncConfig(esURL, index, state, site.URL+"/", "")
	crawl(t, crawltest.Config(t, base))
	if paths, _ := indexed(t, esURL, index, site.URL); len(paths) != pages {
		t.Fatalf("first crawl indexed %d pages, want %d", len(paths), pages)
	}

	ctx, stop := context.WithCancel(context.Background())
	var searches, short atomic.Int32
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			n, err := countAlias(esURL, index)
			if err != nil {
				continue
			}
			searches.Add(1)
			if n < pages {
				short.Add(1)
			}
		}
	})
	withExtra := "extra_fields: {extra_section: keyword}\n" + base
	report := crawl(t, crawltest.Config(t, withExtra))
	stop()
	wg.Wait()
	if searches.Load() == 0 {
		t.Fatal("no search ran during the rebuild")
	}
	if short.Load() > 0 {
		t.Errorf("%d of %d searches during the rebuild saw fewer than %d documents", short.Load(), searches.Load(), pages)
	}
	if report.Total.Created != pages {
		t.Errorf("the rebuild created %d documents in the new index, want %d (%+v)", report.Total.Created, pages, report.Total)
	}
	var aliases map[string]any
	getJSONTest(t, esURL+"/_alias/"+index, &aliases)
	if len(aliases) != 1 {
		t.Fatalf("alias points at %v, want one physical index", aliases)
	}
	for name := range aliases {
		if name != docfields.PhysicalIndex(index, map[string]string{"extra_section": "keyword"}) {
			t.Errorf("alias points at %s, not the new mapping's index", name)
		}
	}
	if paths, _ := indexed(t, esURL, index, site.URL); len(paths) != pages {
		t.Errorf("the new index holds %d documents, want %d", len(paths), pages)
	}
}

// countAlias counts the documents searches see through the alias.
func countAlias(esURL, index string) (int, error) {
	res, err := http.Get(esURL + "/" + index + "/_count")
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("count: %s", res.Status)
	}
	var out struct {
		Count int `json:"count"`
	}
	err = json.NewDecoder(res.Body).Decode(&out)
	return out.Count, err
}

func getJSONTest(t *testing.T, u string, v any) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}
