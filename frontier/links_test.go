package frontier

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func mustLinks(t testing.TB, f *Frontier, key string) ([]uint64, bool) {
	t.Helper()
	links, ok, err := f.Links(key)
	if err != nil {
		t.Fatal(err)
	}
	return links, ok
}

func keys(urls ...string) []uint64 {
	out := make([]uint64, len(urls))
	for i, u := range urls {
		out[i] = LinkKey(u)
	}
	return out
}

func sortedKeys(urls ...string) []uint64 {
	out := keys(urls...)
	slices.Sort(out)
	return slices.Compact(out)
}

func TestLinkKeyIsFNV1aSoStoredLinksOutliveTheProcess(t *testing.T) {
	for _, u := range []string{"", "https://example.org/", "http://a.test/p/1?x=2#f"} {
		h := fnv.New64a()
		h.Write([]byte(u))
		if got, want := LinkKey(u), h.Sum64(); got != want {
			t.Errorf("LinkKey(%q) = %x, want FNV-1a %x", u, got, want)
		}
	}
}

func TestCompleteStoresOutlinksSortedAndDistinctAndKeepsThemUnlessTheyAreRead(t *testing.T) {
	f := openTest(t, "", Options{})
	const a = "http://a.test/"
	mustAdd(t, f, Item{URL: a, Source: "s", Class: Start})
	l := mustLease(t, f)
	if l.Record().HasLinks {
		t.Fatal("a URL never fetched claims stored links")
	}
	mustComplete(t, l, Outcome{State: Fetched, Status: 200, ReadLinks: true,
		Links: keys("http://a.test/c", "http://a.test/b", "http://a.test/c")})
	want := sortedKeys("http://a.test/b", "http://a.test/c")
	if got, ok := mustLinks(t, f, a); !ok || !slices.Equal(got, want) {
		t.Fatalf("stored links = %x, %v; want %x", got, ok, want)
	}
	if !mustGet(t, f, a).HasLinks {
		t.Error("record does not say its links are stored")
	}

	requeueOne := func() {
		t.Helper()
		if err := f.Update(a, func(r *Record) error { r.State = Waiting; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	// A 304, or an error that says nothing of the page: the links stay.
	requeueOne()
	mustComplete(t, mustLease(t, f), Outcome{State: Fetched, Status: 304})
	requeueOne()
	mustComplete(t, mustLease(t, f), Outcome{State: Error, Reason: "http_500", Status: 500})
	if got, _ := mustLinks(t, f, a); !slices.Equal(got, want) {
		t.Fatalf("links after a 304 and an error = %x, want %x kept", got, want)
	}
	// Read again with none (a 404, say): nothing stored, and still known.
	requeueOne()
	mustComplete(t, mustLease(t, f), Outcome{State: Error, Reason: "http_404", Status: 404, ReadLinks: true})
	if got, ok := mustLinks(t, f, a); ok {
		t.Fatalf("links after a page read with none = %x, want none stored", got)
	}
	if !mustGet(t, f, a).HasLinks {
		t.Error("a page read with no links lost HasLinks")
	}
}

func TestReachFollowsStoredLinksFromTheRootsOnly(t *testing.T) {
	f := openTest(t, "", Options{})
	set := func(from string, to ...string) {
		t.Helper()
		if err := f.SetLinks(from, keys(to...)); err != nil {
			t.Fatal(err)
		}
	}
	set("http://a.test/", "http://a.test/b")
	set("http://a.test/b", "http://a.test/c", "http://a.test/")     // a cycle back to the root
	set("http://a.test/d", "http://a.test/c", "http://a.test/e")    // d links in, nothing links d
	set("sitemaps:s", "http://a.test/listed", "http://a.test/deep") // a source's listings
	set("http://a.test/deep", "http://a.test/deeper")

	r, err := f.Reach(keys("http://a.test/"))
	if err != nil {
		t.Fatal(err)
	}
	for u, want := range map[string]bool{
		"http://a.test/": true, "http://a.test/b": true, "http://a.test/c": true,
		"http://a.test/d": false, "http://a.test/e": false, "http://a.test/listed": false,
	} {
		if r.Has(u) != want {
			t.Errorf("reached %s = %v, want %v", u, r.Has(u), want)
		}
	}
	if r.Len() != 3 {
		t.Errorf("reached %d keys, want 3", r.Len())
	}
	r, err = f.Reach(keys("http://a.test/", "sitemaps:s"))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"http://a.test/listed", "http://a.test/deep", "http://a.test/deeper"} {
		if !r.Has(u) {
			t.Errorf("%s, listed in (or linked from a page listed in) a sitemap, was not reached", u)
		}
	}
	if r.Has("http://a.test/d") {
		t.Error("a page that only links in was reached")
	}

	if err := f.SetLinks("sitemaps:s", nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := mustLinks(t, f, "sitemaps:s"); ok {
		t.Error("SetLinks(nil) left the links stored")
	}
}

func TestReachWalksMoreKeysThanOneReadTransactionHolds(t *testing.T) {
	f := openTest(t, "", Options{})
	const n = 3*reachChunk + 7
	var hubs []string
	for h := range 3 {
		hub := fmt.Sprintf("http://a.test/hub%d", h)
		hubs = append(hubs, hub)
		var pages []string
		for i := range n / 3 {
			pages = append(pages, fmt.Sprintf("http://a.test/hub%d/p%d", h, i))
		}
		if err := f.SetLinks(hub, keys(pages...)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.SetLinks("http://a.test/", keys(hubs...)); err != nil {
		t.Fatal(err)
	}
	r, err := f.Reach(keys("http://a.test/"))
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + 3 + 3*(n/3); r.Len() != want {
		t.Errorf("reached %d keys, want %d", r.Len(), want)
	}
	if !r.Has("http://a.test/hub2/p0") || !r.Has(fmt.Sprintf("http://a.test/hub0/p%d", n/3-1)) {
		t.Error("pages of a hub were missed")
	}
}

func TestAddRequeuesAURLExcludedAsAnOrphanButNoOtherExcludedURL(t *testing.T) {
	f := openTest(t, "", Options{History: DefaultHistory})
	const orphan, robots = "http://a.test/orphan", "http://a.test/robots"
	mustAdd(t, f, Item{URL: orphan, Source: "s", Class: IndexFollow}, Item{URL: robots, Source: "s", Class: IndexFollow})
	fetchAll(t, f)
	changed, err := f.UpdateEach([]string{orphan, robots}, func(r *Record) (bool, []Event) {
		r.State, r.Reason = Excluded, "robots"
		if r.URL == orphan {
			r.Reason, r.Orphan = "orphan", true
		}
		return true, nil
	})
	if err != nil || len(changed) != 2 {
		t.Fatalf("UpdateEach changed %d records, %v; want 2", len(changed), err)
	}
	n := mustAdd(t, f, Item{URL: orphan, Source: "s", Depth: 4, Class: IndexOnly}, Item{URL: robots, Source: "s", Class: IndexFollow})
	if n != 1 {
		t.Errorf("Add queued %d URLs, want the orphan only", n)
	}
	r := mustGet(t, f, orphan)
	if r.State != Waiting || r.Reason != "" || r.Orphan || r.Class != IndexOnly || r.Depth != 4 {
		t.Errorf("orphan linked again: %s %q orphan=%v class %s depth %d; want waiting in the new link's class and depth",
			r.State, r.Reason, r.Orphan, r.Class, r.Depth)
	}
	if r := mustGet(t, f, robots); r.State != Excluded || r.Reason != "robots" {
		t.Errorf("a URL excluded by robots.txt became %s %q on a new link", r.State, r.Reason)
	}
	if got := fetchAll(t, f); !slices.Equal(got, []string{orphan}) {
		t.Errorf("leased %v, want the orphan", got)
	}
}

func TestUpdateEachChangesManyRecordsSkipsWaitingOnesAndQueuesThoseSetWaiting(t *testing.T) {
	f := openTest(t, "", Options{History: DefaultHistory})
	items := urlsOf("a.test", writeChunk+50) // more than one transaction
	if _, err := f.Exclude("test", items...); err != nil {
		t.Fatal(err)
	}
	const queued = "http://b.test/waiting"
	mustAdd(t, f, Item{URL: queued, Source: "s", Class: IndexFollow})
	urls := []string{queued, "http://c.test/unknown"}
	for _, it := range items {
		urls = append(urls, it.URL)
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	changed, err := f.UpdateEach(urls, func(r *Record) (bool, []Event) {
		mu.Lock()
		seen[r.URL] = true
		mu.Unlock()
		if r.URL == items[0].URL || r.URL == items[len(items)-1].URL {
			r.State, r.Class = Waiting, Refresh
			return true, []Event{{Kind: EventOrphan, Reason: "recheck"}}
		}
		if r.URL == items[1].URL {
			return false, nil
		}
		r.Orphan = true
		return true, []Event{{Kind: EventOrphan, Reason: "kept"}}
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen[queued] || seen["http://c.test/unknown"] {
		t.Error("fn saw a Waiting or an unknown URL")
	}
	if len(changed) != len(items)-1 {
		t.Errorf("UpdateEach returned %d changed records, want %d", len(changed), len(items)-1)
	}
	if r := mustGet(t, f, items[2].URL); !r.Orphan || r.State != Excluded {
		t.Errorf("changed record = %s orphan=%v", r.State, r.Orphan)
	}
	if r := mustGet(t, f, items[1].URL); r.Orphan {
		t.Error("a record fn left alone was changed")
	}
	evs := mustHistory(t, f, items[2].URL)
	if last := evs[len(evs)-1]; last.Kind != EventOrphan || last.Reason != "kept" {
		t.Errorf("last event = %+v, want orphan kept", last)
	}
	got := fetchAll(t, f)
	slices.Sort(got)
	want := []string{items[0].URL, items[len(items)-1].URL, queued}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("leased %v, want %v", got, want)
	}
}

func TestDeleteForgetsTheStoredLinks(t *testing.T) {
	f := openTest(t, "", Options{})
	const a = "http://a.test/"
	mustAdd(t, f, Item{URL: a, Source: "s", Class: Start})
	mustComplete(t, mustLease(t, f), Outcome{State: Fetched, Status: 200, ReadLinks: true, Links: keys("http://a.test/b")})
	if err := f.Delete(a); err != nil {
		t.Fatal(err)
	}
	if _, ok := mustLinks(t, f, a); ok {
		t.Error("a forgotten URL kept its links")
	}
}

// BenchmarkNextCompleteParallelLinks is BenchmarkNextCompleteParallel with
// 30 outlinks stored per completion (a page with a site menu and a few
// links of its own), for the cost of the links.
func BenchmarkNextCompleteParallelLinks(b *testing.B) {
	f := openTest(b, "", Options{Policy: policy(4, 0)})
	fill(b, f, b.N)
	before := f.db.Stats()
	b.ResetTimer()
	defer func() { b.StopTimer(); reportWrites(b, f, before) }()
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			links := make([]uint64, 30)
			for {
				l, err := f.next(context.Background())
				if err != nil {
					return
				}
				k := LinkKey(l.Item().URL)
				for i := range links {
					links[i] = k*uint64(i+1) + uint64(i)
				}
				if err := l.Complete(Outcome{State: Fetched, Status: 200, Hash: "0123456789abcdef", ReadLinks: true, Links: links}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkReach walks a site of 100,000 pages, each linking 30 others.
// ns/op is per page reached.
func BenchmarkReach(b *testing.B) {
	const pages, per = 100_000, 30
	f := openTest(b, "", Options{})
	url := func(i int) string { return fmt.Sprintf("https://www.example.org/section/%d/page-%d.html", i%37, i) }
	for start := 0; start < pages; start += writeChunk {
		err := f.write(func(tx *bolt.Tx) error {
			w := newWtx(tx)
			links := make([]uint64, per)
			for i := start; i < min(start+writeChunk, pages); i++ {
				for j := range links {
					links[j] = LinkKey(url((i*per + j*7919 + 1) % pages))
				}
				if err := w.putLinks(url(i), compactLinks(links)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	root := []uint64{LinkKey(url(0))}
	b.ResetTimer()
	reached := 0
	for b.Loop() {
		r, err := f.Reach(root)
		if err != nil {
			b.Fatal(err)
		}
		reached += r.Len()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(reached), "ns/page")
}
