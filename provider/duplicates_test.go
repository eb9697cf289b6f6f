package provider_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
)

// TestDuplicatePagesAreOneDocumentThroughAdditionsChangesAndDeletions
// serves one page under several URLs and edits the site between crawls:
// the index holds one document for the group, under its shortest URL,
// listing the others; a new copy joins it, a copy that changes leaves it
// with a document of its own, and when the primary goes the document
// lives on under the next URL still serving the content.
func TestDuplicatePagesAreOneDocumentThroughAdditionsChangesAndDeletions(t *testing.T) {
	t.Parallel()
	duplicatesThroughChanges(t, "")
}

// The same through the state store shared in Elasticsearch, whose groups
// live in its groups index.
func TestDuplicatePagesAreOneDocumentThroughTheSharedStateStore(t *testing.T) {
	t.Parallel()
	duplicatesThroughChanges(t, fmt.Sprintf("cluster: {state_index: %s-state, node_name: solo, partitions: 4, lease_ttl: 5s}\n", estest.Index(t)))
}

// duplicatesThroughChanges is TestDuplicatePagesAreOneDocumentThroughAdditionsChangesAndDeletions
// with global, a block of top-level keys, added to the config.
func duplicatesThroughChanges(t *testing.T, global string) {
	esURL, index, site, state := estest.URL(t), estest.Index(t), newMutableSite(t), t.TempDir()
	const same = "The same text under several addresses."
	site.set("/", "Home", "Welcome.", "/a.html", "/copy-of-a.html", "/mirror/a.html")
	for _, p := range []string{"/a.html", "/copy-of-a.html", "/mirror/a.html"} {
		site.set(p, "Policy", same)
	}
	crawlAgain := func() {
		t.Helper()
		letMaxAgePass(t)
		crawl(t, crawltest.Config(t, global+syncConfig(esURL, index, state, site.URL+"/", "")))
	}
	expect := func(step string, want map[string][]string) {
		t.Helper()
		paths, docs := indexed(t, esURL, index, site.URL)
		var wantPaths []string
		for p := range want {
			wantPaths = append(wantPaths, p)
		}
		slices.Sort(wantPaths)
		if !slices.Equal(paths, wantPaths) {
			t.Fatalf("%s: the index holds %v, want %v", step, paths, wantPaths)
		}
		for p, dups := range want {
			var full []string
			for _, d := range dups {
				full = append(full, site.URL+d)
			}
			if got := docs[p].Duplicates; !slices.Equal(got, full) {
				t.Errorf("%s: %s lists duplicates %v, want %v", step, p, got, full)
			}
		}
	}

	crawlAgain()
	// The primary is the shortest URL; the others are listed shortest first.
	expect("first crawl", map[string][]string{"/": nil, "/a.html": {"/mirror/a.html", "/copy-of-a.html"}})

	// Addition and change: /b.html joins (as long as /a.html, after it in
	// byte order); /copy-of-a.html changes and becomes a document of its own.
	site.set("/", "Home", "Welcome.", "/a.html", "/b.html", "/copy-of-a.html", "/mirror/a.html")
	site.set("/b.html", "Policy", same)
	site.set("/copy-of-a.html", "Policy", same+" Revised.")
	crawlAgain()
	expect("after an addition and a change", map[string][]string{
		"/": nil, "/a.html": {"/b.html", "/mirror/a.html"}, "/copy-of-a.html": nil,
	})

	// Deletion of the primary: the group's document moves to /b.html.
	site.remove("/a.html")
	crawlAgain()
	expect("after the primary went", map[string][]string{
		"/": nil, "/b.html": {"/mirror/a.html"}, "/copy-of-a.html": nil,
	})

	// A copy comes back the same as the others: it joins the group again,
	// and a crawl of an unchanged site then writes nothing.
	site.set("/copy-of-a.html", "Policy", same)
	crawlAgain()
	expect("after a copy came back", map[string][]string{"/": nil, "/b.html": {"/mirror/a.html", "/copy-of-a.html"}})
	letMaxAgePass(t)
	report := crawl(t, crawltest.Config(t, global+syncConfig(esURL, index, state, site.URL+"/", "")))
	if k := report.Total; k.Created+k.Updated+k.Deleted != 0 {
		t.Errorf("an unchanged site with duplicates cost writes: %+v", k)
	}
	expect("unchanged", map[string][]string{"/": nil, "/b.html": {"/mirror/a.html", "/copy-of-a.html"}})
}

func TestKeepDuplicatesIndexesEveryURLOnItsOwn(t *testing.T) {
	t.Parallel()
	esURL, index, site := estest.URL(t), estest.Index(t), newMutableSite(t)
	site.set("/", "Home", "Welcome.", "/a.html", "/mirror/a.html")
	site.set("/a.html", "Policy", "Same text.")
	site.set("/mirror/a.html", "Policy", "Same text.")
	crawl(t, crawltest.Config(t, syncConfig(esURL, index, t.TempDir(), site.URL+"/", "    keep_duplicates: true\n")))
	paths, docs := indexed(t, esURL, index, site.URL)
	if want := []string{"/", "/a.html", "/mirror/a.html"}; !slices.Equal(paths, want) {
		t.Fatalf("the index holds %v, want %v", paths, want)
	}
	if d := docs["/a.html"].Duplicates; d != nil {
		t.Errorf("/a.html lists duplicates %v with keep_duplicates", d)
	}
}

// TestWhenThePrimaryGoesItsGroupsDocumentMovesAtOnce makes only the
// primary due again (a start URL; the copies are an hour from their aged
// check): its 404 must hand the document to a copy in the same crawl, not
// at the copy's next check.
func TestWhenThePrimaryGoesItsGroupsDocumentMovesAtOnce(t *testing.T) {
	t.Parallel()
	esURL, index, site, state := estest.URL(t), estest.Index(t), newMutableSite(t), t.TempDir()
	site.set("/", "Home", "Welcome.", "/a.html", "/mirror/a.html", "/copy/a.html")
	for _, p := range []string{"/a.html", "/mirror/a.html", "/copy/a.html"} {
		site.set(p, "Policy", "The same text.")
	}
	yaml := fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0}
state_dir: %s
allow_private_networks: true
sources:
  - name: site
    start_urls: [%q, %q]
    max_age: 1h
`, esURL, index, state, site.URL+"/", site.URL+"/a.html")
	crawl(t, crawltest.Config(t, yaml))
	paths, docs := indexed(t, esURL, index, site.URL)
	if want := []string{"/", "/a.html"}; !slices.Equal(paths, want) {
		t.Fatalf("first crawl: the index holds %v, want %v", paths, want)
	}
	if got, want := docs["/a.html"].Duplicates, []string{site.URL + "/copy/a.html", site.URL + "/mirror/a.html"}; !slices.Equal(got, want) {
		t.Errorf("/a.html lists %v, want %v", got, want)
	}

	site.remove("/a.html")
	before := site.fetchCount("/mirror/a.html")
	crawl(t, crawltest.Config(t, yaml))
	paths, docs = indexed(t, esURL, index, site.URL)
	if want := []string{"/", "/copy/a.html"}; !slices.Equal(paths, want) {
		t.Fatalf("after the primary went: the index holds %v, want %v", paths, want)
	}
	if got, want := docs["/copy/a.html"].Duplicates, []string{site.URL + "/mirror/a.html"}; !slices.Equal(got, want) {
		t.Errorf("/copy/a.html lists %v, want %v", got, want)
	}
	// Only the new primary was fetched again for it, not every copy.
	if n := site.fetchCount("/mirror/a.html"); n != before {
		t.Errorf("/mirror/a.html was fetched %d more times; only the new primary needed a fetch", n-before)
	}
}

func (s *mutableSite) fetchCount(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches[path]
}
