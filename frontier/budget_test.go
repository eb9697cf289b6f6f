package frontier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/crawlspace/crawlspace/urlnorm"
)

// notes collects what OnBudget hears.
type notes struct {
	mu  sync.Mutex
	all []OverBudget
}

func (n *notes) add(o OverBudget) {
	n.mu.Lock()
	n.all = append(n.all, o)
	n.mu.Unlock()
}

// urls sums the URLs held back by limit l.
func (n *notes) urls(l Limit) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	sum := 0
	for _, o := range n.all {
		if o.Limit == l {
			sum += o.URLs
		}
	}
	return sum
}

func (n *notes) first(l Limit) (OverBudget, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, o := range n.all {
		if o.Limit == l {
			return o, true
		}
	}
	return OverBudget{}, false
}

func budgeted(t testing.TB, dir string, b Budget, n *notes) *Frontier {
	return openTest(t, dir, Options{Policy: policy(64, 0), Budgets: map[string]Budget{"s": b}, OnBudget: n.add, History: 8})
}

// stored counts the records of source s, by walking them.
func stored(t testing.TB, f *Frontier) (total int, byState map[State]int) {
	t.Helper()
	byState = map[State]int{}
	err := f.ForEach("s", func(r Record) error {
		total++
		byState[r.State]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total, byState
}

func mustUsage(t testing.TB, f *Frontier) Usage {
	t.Helper()
	u, err := f.Usage("s")
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestURLLimitsKeepURLsOutOfTheStoreAndCountThem(t *testing.T) {
	var n notes
	f := budgeted(t, "", Budget{URLs: 8, URLsPerHost: 5}, &n)

	if got := mustAdd(t, f, urlsOf("a", 10)...); got != 5 {
		t.Fatalf("queued %d URLs of host a, want max_urls_per_host 5", got)
	}
	o, ok := n.first(LimitURLsPerHost)
	if !ok || o.URLs != 5 || o.Host != "http://a" || o.Max != 5 || o.Example != "http://a/p/5" || o.Source != "s" {
		t.Fatalf("note = %+v, want 5 URLs of http://a over max_urls_per_host 5, the first refused as example", o)
	}
	if got := mustAdd(t, f, urlsOf("b", 10)...); got != 3 {
		t.Fatalf("queued %d URLs of host b, want the 3 left of max_urls 8", got)
	}
	if got := n.urls(LimitURLs); got != 7 {
		t.Errorf("max_urls held back %d URLs, want 7", got)
	}
	if _, found, err := f.Get("http://a/p/7"); err != nil || found {
		t.Errorf("a URL over the limit is in the store (%v, %v)", found, err)
	}
	// Refusals are records too: over the limit they are counted, not stored.
	if added, err := f.Exclude("offsite", Item{URL: "http://c/x", Source: "s"}); err != nil || added != 0 {
		t.Errorf("Exclude over max_urls = %d, %v; want nothing stored", added, err)
	}
	// A start URL always gets in.
	if got := mustAdd(t, f, Item{URL: "http://a/start", Source: "s", Class: Start}); got != 1 {
		t.Errorf("start URL queued %d, want 1 whatever the budget", got)
	}

	total, _ := stored(t, f)
	u := mustUsage(t, f)
	if total != 9 || u.URLs != 9 || u.Hosts != 2 {
		t.Errorf("store holds %d records, usage %+v; want 9 URLs (8 and the start URL) on 2 hosts", total, u)
	}
	if u.Refused != 13 || u.Example != "http://a/p/5" {
		t.Errorf("usage counts %d refused, example %q; want 13 and the first", u.Refused, u.Example)
	}
	ha, ok, err := f.HostUsage("s", "http://a")
	if err != nil || !ok || ha.URLs != 6 || ha.Refused != 5 || !ha.Queued {
		t.Errorf("host a usage = %+v, %v, %v; want 6 URLs, 5 refused", ha, ok, err)
	}
	if _, ok, _ := f.HostUsage("s", "http://c"); ok {
		t.Error("a host whose only URL was refused got an entry")
	}
}

func TestMaxHostsKeepsURLsOfNewHostsOutButNotRefusals(t *testing.T) {
	var n notes
	f := budgeted(t, "", Budget{Hosts: 2}, &n)
	for _, h := range []string{"a", "b", "c"} {
		mustAdd(t, f, urlsOf(h, 2)...)
	}
	if got := n.urls(LimitHosts); got != 2 {
		t.Errorf("max_hosts held back %d URLs, want host c's 2", got)
	}
	// A refused URL does not make its host one of the source's hosts.
	if added, err := f.Exclude("offsite", Item{URL: "http://d/x", Source: "s"}); err != nil || added != 1 {
		t.Fatalf("Exclude = %d, %v", added, err)
	}
	u := mustUsage(t, f)
	if u.Hosts != 2 || u.URLs != 5 {
		t.Errorf("usage = %+v, want 2 hosts and 5 URLs", u)
	}
}

// Completions run concurrently and share commits; each adds links that
// compete for the last places of the budget.
func TestURLLimitIsExactUnderConcurrentCompletions(t *testing.T) {
	var n notes
	const limit, links = 300, 20
	f := budgeted(t, "", Budget{URLs: limit}, &n)
	mustAdd(t, f, Item{URL: "http://a/", Source: "s", Class: Start})
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		fetched int
	)
	for w := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				l, err := f.next(context.Background())
				if errors.Is(err, ErrDone) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				found := &Found{}
				for j := range links {
					host := fmt.Sprintf("h%d", j%3)
					found.Links = append(found.Links, Item{URL: fmt.Sprintf("http://%s/%d/%d/%d", host, w, i, j), Source: "s", Class: IndexFollow})
				}
				if err := l.CompleteAsync(Outcome{State: Fetched, Status: 200, Found: found, ReadLinks: true}, func(err error) {
					if err != nil {
						t.Error(err)
					}
				}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				fetched++
				mu.Unlock()
			}
		})
	}
	wg.Wait()

	total, byState := stored(t, f)
	u := mustUsage(t, f)
	if total != limit || u.URLs != limit || byState[Fetched] != limit {
		t.Fatalf("store holds %d records (%v), usage %d; want exactly %d, all fetched", total, byState, u.URLs, limit)
	}
	if offered, held := fetched*links, n.urls(LimitURLs); held != offered-(limit-1) {
		t.Errorf("%d links offered, %d held back; want every link but the %d stored", offered, held, limit-1)
	}
	var perHost int64
	hosts, err := f.HostUsages("s")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		perHost += h.URLs
	}
	if perHost != limit || u.Pages != limit {
		t.Errorf("hosts hold %d URLs, %d pages counted; want %d each", perHost, u.Pages, limit)
	}
}

func TestPageLimitLeavesTheRestQueuedForTheNextCycle(t *testing.T) {
	var n notes
	f := budgeted(t, "", Budget{Pages: 5}, &n)
	mustAdd(t, f, append(urlsOf("a", 10), urlsOf("b", 10)...)...)

	// A lease that made no request does not count.
	l := mustLease(t, f)
	mustComplete(t, l, Outcome{State: Excluded, Reason: "robots", NoRequest: true})
	if got := len(fetchAll(t, f)); got != 5 {
		t.Fatalf("cycle fetched %d, want max_pages_per_cycle 5", got)
	}
	if _, _, err := f.TryNext(); !errors.Is(err, ErrDone) {
		t.Fatalf("TryNext after the page limit = %v, want ErrDone: the cycle is over", err)
	}
	_, byState := stored(t, f)
	if byState[Waiting] != 14 || n.urls(LimitPages) != 14 {
		t.Errorf("%d URLs wait, %d noted held back; want 14 each", byState[Waiting], n.urls(LimitPages))
	}
	if u := mustUsage(t, f); u.Pages != 5 || u.Cycle != f.Cycle() {
		t.Errorf("usage = %+v, want 5 pages in cycle %d", u, f.Cycle())
	}

	if _, err := f.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	if got := len(fetchAll(t, f)); got != 5 {
		t.Errorf("next cycle fetched %d, want 5 more", got)
	}
	if got := n.urls(LimitPages); got != 14+9 {
		t.Errorf("noted %d held back over both cycles, want 14 and then 9", got)
	}
}

func TestPerHostPageLimitHoldsBackOnlyThatHost(t *testing.T) {
	var n notes
	f := budgeted(t, "", Budget{PagesPerHost: 3}, &n)
	mustAdd(t, f, append(urlsOf("a", 10), urlsOf("b", 2)...)...)
	got := fetchAll(t, f)
	hosts := map[string]int{}
	for _, u := range got {
		hosts[urlnorm.Origin(u)]++
	}
	if hosts["http://a"] != 3 || hosts["http://b"] != 2 {
		t.Errorf("fetched %v, want 3 of a and both of b", hosts)
	}
	o, ok := n.first(LimitPagesPerHost)
	if !ok || o.Host != "http://a" || n.urls(LimitPagesPerHost) != 7 {
		t.Errorf("note = %+v (%d URLs), want a's 7 held back", o, n.urls(LimitPagesPerHost))
	}
	if h, _, _ := f.HostUsage("s", "http://a"); h.Pages != 3 {
		t.Errorf("host a counts %d pages, want 3", h.Pages)
	}
}

// However many workers lease at once, a cycle makes no more requests than
// its limit: each lease reserves one until its outcome is stored.
func TestPageLimitIsNeverPassedByConcurrentWorkers(t *testing.T) {
	var n notes
	const limit = 40
	f := budgeted(t, "", Budget{Pages: limit}, &n)
	for h := range 5 {
		mustAdd(t, f, urlsOf(fmt.Sprintf("h%d", h), 60)...)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		requests int
	)
	for range 16 {
		wg.Go(func() {
			for {
				l, err := f.next(context.Background())
				if err != nil {
					if !errors.Is(err, ErrDone) {
						t.Error(err)
					}
					return
				}
				mu.Lock()
				requests++
				mu.Unlock()
				if err := l.CompleteAsync(Outcome{State: Fetched, Status: 200}, func(error) {}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if requests != limit {
		t.Errorf("%d leases, want exactly %d", requests, limit)
	}
	if got := n.urls(LimitPages); got != 300-limit {
		t.Errorf("noted %d held back, want %d", got, 300-limit)
	}
}

// A host shared by two sources goes on serving the one with pages left,
// past a long run of the other's URLs (longer than one chunk of them).
func TestSourceWithPagesLeftIsServedPastAnotherSourcesHeldBackURLs(t *testing.T) {
	var n notes
	f := openTest(t, "", Options{Policy: policy(8, 0), OnBudget: n.add,
		Budgets: map[string]Budget{"s": {Pages: 2}, "t": {Pages: 1000}}})
	mustAdd(t, f, urlsOf("a", 3*heldBackChunk)...)
	other := urlsOf("a", 5)
	for i := range other {
		other[i].URL += "/t"
		other[i].Source = "t"
	}
	mustAdd(t, f, other...)
	got := fetchAll(t, f)
	ofT := 0
	for _, u := range got {
		if mustGet(t, f, u).Source == "t" {
			ofT++
		}
	}
	if len(got) != 7 || ofT != 5 {
		t.Fatalf("fetched %d URLs, %d of t; want s's 2 and all 5 of t", len(got), ofT)
	}
	if held := n.urls(LimitPages); held != 3*heldBackChunk-2 {
		t.Errorf("noted %d held back, want %d", held, 3*heldBackChunk-2)
	}
	for cycle := 2; cycle <= 3; cycle++ {
		if _, err := f.BeginCycle(); err != nil {
			t.Fatal(err)
		}
		if got := len(fetchAll(t, f)); got != 2 {
			t.Errorf("cycle %d fetched %d, want 2 of the URLs held back", cycle, got)
		}
	}
}

func TestCountsSurviveAReopenAndAreBuiltForAStoreWithoutThem(t *testing.T) {
	dir := t.TempDir()
	var n notes
	f, err := Open(dir, Options{Budgets: map[string]Budget{"s": {URLsPerHost: 4}}, OnBudget: n.add})
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, f, urlsOf("a", 6)...)
	mustAdd(t, f, urlsOf("b", 2)...)
	if _, err := f.Exclude("offsite", Item{URL: "http://c/", Source: "s"}); err != nil {
		t.Fatal(err)
	}
	mustComplete(t, mustLease(t, f), Outcome{State: Fetched, Status: 200})
	want, err := f.Usage("s")
	if err != nil {
		t.Fatal(err)
	}
	wantHosts, _ := f.HostUsages("s")
	f.Close()

	f = openTest(t, dir, Options{Budgets: map[string]Budget{"s": {URLsPerHost: 4}}})
	if got, _ := f.Usage("s"); got != want {
		t.Errorf("after a reopen usage = %+v, want %+v", got, want)
	}
	if got := mustAdd(t, f, Item{URL: "http://a/new", Source: "s", Class: IndexFollow}); got != 0 {
		t.Error("after a reopen host a took a URL past its limit")
	}
	f.Close()

	// A store from before budgets has records and no counts.
	db, err := bolt.Open(dir+"/frontier.db", 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketBudget) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	f = openTest(t, dir, Options{})
	got, _ := f.Usage("s")
	if got.URLs != want.URLs || got.Hosts != want.Hosts {
		t.Errorf("counts built from the records = %+v, want %d URLs on %d hosts", got, want.URLs, want.Hosts)
	}
	gotHosts, _ := f.HostUsages("s")
	if len(gotHosts) != len(wantHosts) {
		t.Fatalf("built %d host entries, want %d", len(gotHosts), len(wantHosts))
	}
	for i := range gotHosts {
		if g, w := gotHosts[i], wantHosts[i]; g.Host != w.Host || g.URLs != w.URLs || g.Queued != w.Queued {
			t.Errorf("built host entry %+v, want %+v", g, w)
		}
	}
}

func TestDeleteFreesItsPlaceInTheBudget(t *testing.T) {
	var n notes
	f := budgeted(t, "", Budget{URLsPerHost: 3, Hosts: 1}, &n)
	mustAdd(t, f, urlsOf("a", 3)...)
	for _, u := range []string{"http://a/p/0", "http://a/p/1", "http://a/p/2"} {
		if err := f.Delete(u); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, _ := f.HostUsage("s", "http://a"); ok {
		t.Error("a host with no URL left keeps its entry")
	}
	if got := mustAdd(t, f, urlsOf("b", 3)...); got != 3 {
		t.Errorf("queued %d on another host, want 3: host a no longer counts", got)
	}
	if u := mustUsage(t, f); u.URLs != 3 || u.Hosts != 1 {
		t.Errorf("usage = %+v, want 3 URLs on 1 host", u)
	}
}

func TestOutlinksLeaveOutURLsALimitKeptOut(t *testing.T) {
	var n notes
	f := budgeted(t, "", Budget{URLsPerHost: 3}, &n)
	mustAdd(t, f, Item{URL: "http://a/", Source: "s", Class: Start})
	l := mustLease(t, f)
	found := &Found{Links: urlsOf("a", 4)}
	mustComplete(t, l, Outcome{State: Fetched, Status: 200, ReadLinks: true, Links: keys("http://a/target"), Found: found})
	got, _ := mustLinks(t, f, "http://a/")
	want := sortedKeys("http://a/target", "http://a/p/0", "http://a/p/1")
	if !slices.Equal(got, want) {
		t.Errorf("outlinks = %x, want the target and the 2 links stored: %x", got, want)
	}
	if found.Queued != 2 || n.urls(LimitURLsPerHost) != 2 {
		t.Errorf("queued %d, held back %d; want 2 and 2", found.Queued, n.urls(LimitURLsPerHost))
	}
	// A link kept out is not taken as known: met again, it is judged again.
	mustComplete(t, mustLease(t, f), Outcome{State: Fetched, Status: 200, Found: &Found{Links: urlsOf("a", 4)}})
	if got := n.urls(LimitURLsPerHost); got != 4 {
		t.Errorf("held back %d after a second page links them again, want 4", got)
	}
}

// Links of a page completed after the limit was met are queued and held
// back too, and the URLs held back before are not counted again.
func TestEachURLHeldBackIsCountedOnceWhileLinksKeepArriving(t *testing.T) {
	var n notes
	f := budgeted(t, "", Budget{Pages: 2}, &n)
	mustAdd(t, f, urlsOf("a", 5)...)
	first, second := mustLease(t, f), mustLease(t, f)
	if l, _, err := f.TryNext(); l != nil || err != nil {
		t.Fatalf("TryNext with the limit reserved = %v, %v; want nothing", l, err)
	}
	if got := n.urls(LimitPages); got != 3 {
		t.Fatalf("held back %d, want the 3 left", got)
	}
	mustComplete(t, first, Outcome{State: Fetched, Status: 200})
	// The host has nothing left to lease when this completes: its links
	// arrive at an idle host.
	mustComplete(t, second, Outcome{State: Fetched, Status: 200, Found: &Found{Links: urlsOf("a", 7)[5:]}})
	if _, _, err := f.TryNext(); !errors.Is(err, ErrDone) {
		t.Fatalf("TryNext = %v, want ErrDone", err)
	}
	if got := n.urls(LimitPages); got != 5 {
		t.Errorf("held back %d, want each of the 5 waiting URLs once", got)
	}
}

// BenchmarkNextCompleteParallelBudgeted is BenchmarkNextCompleteParallel
// with limits that are never reached: the cost of checking and counting
// them.
func BenchmarkNextCompleteParallelBudgeted(b *testing.B) {
	const never = 1 << 40
	nextCompleteParallel(b, Options{Policy: policy(4, 0),
		Budgets: map[string]Budget{"bench": {URLs: never, URLsPerHost: never, Hosts: never, Pages: never, PagesPerHost: never}}})
}

// status opens a store read-only; one written before budgets has no counts
// to read, which is no damage.
func TestAStoreFromBeforeBudgetsOpenedReadOnlyReadsNoCountsAndNoDamage(t *testing.T) {
	dir := t.TempDir()
	f, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, f, urlsOf("a", 3)...)
	f.Close()
	db, err := bolt.Open(dir+"/frontier.db", 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketBudget) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	f = openTest(t, dir, Options{ReadOnly: true})
	if u, err := f.Usage("s"); err != nil || u != (Usage{}) {
		t.Errorf("Usage = %+v, %v; want no counts and no error", u, err)
	}
	if _, found, err := f.HostUsage("s", "http://a"); err != nil || found {
		t.Errorf("HostUsage found %v, %v; want nothing and no error", found, err)
	}
	if hs, err := f.HostUsages("s"); err != nil || len(hs) != 0 {
		t.Errorf("HostUsages = %v, %v; want none and no error", hs, err)
	}
}
