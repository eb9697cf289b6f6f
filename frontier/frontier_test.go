package frontier

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/fakeclock"
)

// newClock is the tests' injected time source; they move it instead of sleeping.
func newClock() *fakeclock.Clock { return fakeclock.New(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)) }

func policy(parallel int, delay time.Duration) func(string) HostPolicy {
	return func(string) HostPolicy { return HostPolicy{MaxParallel: parallel, Delay: delay} }
}

func openTest(t testing.TB, dir string, opt Options) *Frontier {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	f, err := Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func mustAdd(t testing.TB, f *Frontier, items ...Item) int {
	t.Helper()
	n, err := f.Add(items...)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustGet(t testing.TB, f *Frontier, url string) Record {
	t.Helper()
	r, ok, err := f.Get(url)
	if err != nil || !ok {
		t.Fatalf("Get(%s) = %v, %v", url, ok, err)
	}
	return r
}

func mustLease(t testing.TB, f *Frontier) *lease {
	t.Helper()
	l, wait, err := f.TryNext()
	if err != nil || l == nil {
		t.Fatalf("TryNext = %v, %v, %v; want a lease", l, wait, err)
	}
	return l
}

func mustComplete(t testing.TB, l *lease, o Outcome) {
	t.Helper()
	if err := l.Complete(o); err != nil {
		t.Fatal(err)
	}
}

// fetchAll leases and completes as Fetched until TryNext has nothing, and
// returns the URLs in lease order.
func fetchAll(t testing.TB, f *Frontier) []string {
	t.Helper()
	var urls []string
	for {
		l, _, err := f.TryNext()
		if errors.Is(err, ErrDone) || l == nil && err == nil {
			return urls
		}
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, l.Item().URL)
		mustComplete(t, l, Outcome{State: Fetched, Status: 200})
	}
}

func urlsOf(host string, n int) []Item {
	items := make([]Item, n)
	for i := range items {
		items[i] = Item{URL: fmt.Sprintf("http://%s/p/%d", host, i), Source: "s", Class: IndexFollow}
	}
	return items
}

func TestRecordEncodingRoundTripsEveryField(t *testing.T) {
	ts := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	full := Record{
		Item: Item{URL: "http://a.test/x?y=1", Source: "docs", Depth: 7, Class: Redirect, Shift: -2, Kind: 3,
			Lastmod: ts, Via: "http://a.test/", Hops: 255},
		State: Error, Reason: "http 500", Status: 500, ErrCount: 3, TempErrCount: 2,
		FetchedAt: ts.Add(time.Hour), CheckedAt: ts.Add(2 * time.Hour),
		ETag: `"abc"`, LastModified: "Tue, 02 Jan 2024 03:04:05 GMT", Hash: "h", DocID: "d",
		Indexed: true, Pending: `{"index":{}}`, Target: "http://a.test/y", Cycle: 9, SeenCycle: 12, HasLinks: true, Orphan: true, qseq: 1 << 40, content: "c",
	}
	for _, want := range []Record{full, {Item: Item{URL: "http://b.test/"}}} {
		var got Record
		if err := decodeRecord(appendRecord(nil, &want), &got, true); err != nil {
			t.Fatal(err)
		}
		// A decoded record remembers what the orphan walk reads of it.
		want.stored = want.walkView()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
		}
	}
	b := appendRecord(nil, &full)
	if err := decodeRecord(b[:len(b)-1], new(Record), true); err == nil {
		t.Error("a truncated record decoded without error")
	}
}

func TestWeightsAreExaleadsShiftedByQuarters(t *testing.T) {
	for c, want := range []float64{10000, 2000, 1000, 100, 10, 1} {
		if got := Weight(Class(c), 0); got != want {
			t.Errorf("Weight(%s, 0) = %v, want %v", Class(c), got, want)
		}
	}
	if got := Weight(IndexFollow, -2); got != 1600 {
		t.Errorf("Weight(index_follow, -2) = %v, want 1600", got)
	}
	if got := Weight(Refresh, 2); got != 1.0/16 {
		t.Errorf("Weight(refresh, 2) = %v, want 1/16", got)
	}
	for l := range uint8(numLevels) {
		if strideScale%levelWeight(l) != 0 {
			t.Errorf("level %d: stride not exact", l)
		}
	}
}

func TestAddRejectsInvalidItemsWithoutAddingAny(t *testing.T) {
	f := openTest(t, "", Options{})
	good := Item{URL: "http://a.test/"}
	for _, bad := range []Item{{URL: "a.test/x"}, {URL: "http://a.test/x", Shift: 3}, {URL: "http://a.test/x", Class: 9}} {
		if _, err := f.Add(good, bad); err == nil {
			t.Errorf("Add(%+v) succeeded", bad)
		}
	}
	if _, ok, _ := f.Get(good.URL); ok {
		t.Error("a batch with an invalid item was partly added")
	}
}

func TestAddDeduplicatesWithinAndAcrossBatches(t *testing.T) {
	f := openTest(t, "", Options{})
	a := Item{URL: "http://a.test/x", Source: "s", Class: IndexFollow}
	if n := mustAdd(t, f, a, a, Item{URL: "http://a.test/y"}); n != 2 {
		t.Errorf("first Add added %d, want 2", n)
	}
	if n := mustAdd(t, f, a); n != 0 {
		t.Errorf("second Add of a known URL added %d", n)
	}
	if got := fetchAll(t, f); len(got) != 2 {
		t.Errorf("leased %v, want each URL once", got)
	}
}

func TestKnownStateTakesPrecedenceOverRediscovery(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(10, 0)})
	urls := map[State]string{Fetched: "http://a.test/f", Error: "http://a.test/e", Excluded: "http://a.test/x", Waiting: "http://a.test/w"}
	// In this order, so the three leases below are the first three and
	// the last URL stays queued.
	for _, st := range []State{Fetched, Error, Excluded, Waiting} {
		mustAdd(t, f, Item{URL: urls[st], Source: "s", Class: Start})
	}
	for range 3 {
		l := mustLease(t, f)
		switch u := l.Item().URL; u {
		case urls[Fetched]:
			mustComplete(t, l, Outcome{State: Fetched, Status: 200})
		case urls[Error]:
			mustComplete(t, l, Outcome{State: Error, Reason: "http 404", Status: 404})
		case urls[Excluded]:
			mustComplete(t, l, Outcome{State: Excluded, Reason: "robots.txt", NoRequest: true})
		default:
			t.Fatalf("leased %s out of order", u)
		}
	}
	for st, u := range urls {
		for _, c := range []Class{Start, Redirect, IndexFollow} {
			if n := mustAdd(t, f, Item{URL: u, Source: "other", Class: c}); n != 0 {
				t.Errorf("%s URL re-added as %s in the same cycle", st, c)
			}
		}
		if r := mustGet(t, f, u); r.State != st || r.Source != "s" {
			t.Errorf("%s URL is now %s from %q", st, r.State, r.Source)
		}
	}

	if _, err := f.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	if n := mustAdd(t, f, Item{URL: urls[Fetched], Class: IndexFollow}); n != 0 {
		t.Error("a fetched URL found by a link in a new cycle was queued again")
	}
	if n := mustAdd(t, f, Item{URL: urls[Fetched], Class: Start}, Item{URL: urls[Waiting], Class: Start}); n != 1 {
		t.Errorf("Start items in a new cycle: added %d, want 1 (the fetched one; the waiting one is already queued)", n)
	}
	r := mustGet(t, f, urls[Fetched])
	if r.State != Waiting || r.Cycle != 1 || r.SeenCycle != 1 || r.Source != "s" {
		t.Errorf("requeued start URL = %+v", r)
	}
	if n := mustAdd(t, f, Item{URL: urls[Fetched], Class: Start}); n != 0 {
		t.Error("a start URL was queued twice in one cycle")
	}
}

func TestAddRecordsSeenCycleAndNewerSitemapLastmod(t *testing.T) {
	f := openTest(t, "", Options{})
	old := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	u := "http://a.test/x"
	mustAdd(t, f, Item{URL: u, Lastmod: old})
	f.BeginCycle()
	mustAdd(t, f, Item{URL: u, Lastmod: old.Add(-time.Hour)})
	if r := mustGet(t, f, u); r.SeenCycle != 1 || !r.Lastmod.Equal(old) {
		t.Errorf("after an older lastmod: SeenCycle %d, Lastmod %v", r.SeenCycle, r.Lastmod)
	}
	mustAdd(t, f, Item{URL: u, Lastmod: old.Add(time.Hour)})
	if r := mustGet(t, f, u); !r.Lastmod.Equal(old.Add(time.Hour)) {
		t.Errorf("newer lastmod not kept: %v", r.Lastmod)
	}
}

func TestCompleteRecordsEachOutcome(t *testing.T) {
	clk := newClock()
	f := openTest(t, "", Options{Now: clk.Now, Policy: policy(1, 0)})
	u := "http://a.test/x"
	mustAdd(t, f, Item{URL: u, Source: "s", Class: IndexOnly})

	mustComplete(t, mustLease(t, f), Outcome{State: Waiting, Reason: "timeout"})
	r := mustGet(t, f, u)
	if r.State != Waiting || r.TempErrCount != 1 || r.Reason != "timeout" || !r.CheckedAt.Equal(clk.Now()) {
		t.Errorf("after a temporary error: %+v", r)
	}

	mustComplete(t, mustLease(t, f), Outcome{State: Error, Reason: "http 500", Status: 500})
	r = mustGet(t, f, u)
	if r.State != Error || r.ErrCount != 1 || r.TempErrCount != 0 || r.Status != 500 {
		t.Errorf("after a permanent error: %+v", r)
	}
	if _, wait, err := f.TryNext(); !errors.Is(err, ErrDone) {
		t.Errorf("an URL in error was leased again: %v %v", wait, err)
	}

	f.RequeueErrors("")
	clk.Advance(time.Minute)
	l := mustLease(t, f)
	if lr := l.Record(); lr.ErrCount != 1 || lr.State != InFlight {
		t.Errorf("lease record = %+v", lr)
	}
	mustComplete(t, l, Outcome{State: Fetched, Status: 200, ETag: `"e"`, LastModified: "lm", Hash: "h1",
		Pending: PendingIndex})
	r = mustGet(t, f, u)
	if r.State != Fetched || r.ErrCount != 0 || r.ETag != `"e"` || r.LastModified != "lm" || r.Hash != "h1" ||
		r.Pending != "index" || r.Reason != "" || !r.FetchedAt.Equal(clk.Now()) {
		t.Errorf("after a fetch: %+v", r)
	}
	if err := l.Complete(Outcome{State: Fetched}); err == nil {
		t.Error("a lease completed twice")
	}
}

func TestTemporaryErrorGoesToTheTailOfItsQueue(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(1, 0)})
	mustAdd(t, f, urlsOf("a.test", 3)...)
	l := mustLease(t, f)
	first := l.Item().URL
	mustComplete(t, l, Outcome{State: Waiting, Reason: "connection reset"})
	got := fetchAll(t, f)
	if len(got) != 3 || got[2] != first {
		t.Errorf("lease order after a retry = %v, want %s last", got, first)
	}
}

func TestClassesAreServedInProportionToTheirWeights(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(1, 0)})
	var items []Item
	for i := range 200 {
		items = append(items,
			Item{URL: fmt.Sprintf("http://a.test/if/%d", i), Class: IndexFollow},
			Item{URL: fmt.Sprintf("http://a.test/io/%d", i), Class: IndexOnly})
	}
	mustAdd(t, f, items...)
	// index_only (1000) against index_follow (100): ten to one, exactly,
	// the heavier queue first in every round.
	for round := range 10 {
		for i := range 11 {
			l := mustLease(t, f)
			want := IndexOnly
			if i == 10 {
				want = IndexFollow
			}
			if got := l.Item().Class; got != want {
				t.Fatalf("round %d pick %d: %s, want %s", round, i, got, want)
			}
			mustComplete(t, l, Outcome{State: Fetched})
		}
	}
}

func TestPriorityShiftMovesAnItemsWeight(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(1, 0)})
	var items []Item
	for i := range 100 {
		items = append(items,
			Item{URL: fmt.Sprintf("http://a.test/hi/%d", i), Class: IndexFollow, Shift: -2}, // 1600
			Item{URL: fmt.Sprintf("http://a.test/io/%d", i), Class: IndexOnly},              // 1000
			Item{URL: fmt.Sprintf("http://a.test/lo/%d", i), Class: IndexOnly, Shift: 2})    // 62.5
	}
	mustAdd(t, f, items...)
	counts := map[string]int{}
	for range 5330 / 100 { // 1600 + 1000 + 62.5 = 2662.5 weight per 2 × 26.625 picks
		l := mustLease(t, f)
		counts[l.Item().URL[len("http://a.test/"):][:2]]++
		mustComplete(t, l, Outcome{State: Fetched})
	}
	if counts["hi"] != 32 || counts["io"] != 20 || counts["lo"] != 1 {
		t.Errorf("53 picks by shift: %v; want hi 32, io 20, lo 1", counts)
	}
}

func TestHostNeverHasMoreThanMaxParallelLeases(t *testing.T) {
	clk := newClock()
	f := openTest(t, "", Options{Now: clk.Now, Policy: policy(2, 0)})
	mustAdd(t, f, urlsOf("a.test", 5)...)
	a, b := mustLease(t, f), mustLease(t, f)
	if l, wait, err := f.TryNext(); l != nil || err != nil || wait != -1 {
		t.Fatalf("third lease with MaxParallel 2: %v %v %v", l, wait, err)
	}
	if st := f.Stats(); st.InFlight != 2 {
		t.Errorf("Stats.InFlight = %d", st.InFlight)
	}
	mustComplete(t, a, Outcome{State: Fetched})
	c := mustLease(t, f)
	if l, _, _ := f.TryNext(); l != nil {
		t.Fatal("a completion freed more than one slot")
	}
	mustComplete(t, b, Outcome{State: Fetched})
	mustComplete(t, c, Outcome{State: Fetched})
	if got := fetchAll(t, f); len(got) != 2 {
		t.Errorf("remaining leases %v", got)
	}
}

func TestHostWaitsItsDelayAfterEachCompletion(t *testing.T) {
	clk := newClock()
	f := openTest(t, "", Options{Now: clk.Now, Policy: policy(2, 10*time.Second)})
	mustAdd(t, f, urlsOf("a.test", 4)...)
	mustAdd(t, f, urlsOf("b.test", 1)...)
	a1, a2 := mustLease(t, f), mustLease(t, f) // a and b alternate
	if a1.HostKey() == a2.HostKey() {
		t.Fatalf("two leases from %s before the other host", a1.HostKey())
	}
	if a1.HostKey() != "http://a.test" {
		a1, a2 = a2, a1
	}
	a3 := mustLease(t, f)
	if a3.HostKey() != "http://a.test" {
		t.Fatal("expected a.test again")
	}
	clk.Advance(time.Second)
	mustComplete(t, a1, Outcome{State: Fetched})
	if l, wait, err := f.TryNext(); l != nil || err != nil || wait != 10*time.Second {
		t.Fatalf("after a completion: %v, wait %v, %v; want 10s", l, wait, err)
	}
	clk.Advance(9 * time.Second)
	if l, wait, _ := f.TryNext(); l != nil || wait != time.Second {
		t.Fatalf("9s after: %v, wait %v", l, wait)
	}
	mustComplete(t, a3, Outcome{State: Excluded, Reason: "robots.txt", NoRequest: true})
	if l, wait, _ := f.TryNext(); l != nil || wait != time.Second {
		t.Fatalf("an outcome without a request moved the delay: %v, wait %v", l, wait)
	}
	clk.Advance(time.Second)
	mustLease(t, f)
	mustComplete(t, a2, Outcome{State: Fetched})
}

func TestBusyHostDoesNotStarveOthers(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(8, 0)})
	mustAdd(t, f, urlsOf("big.test", 10000)...)
	mustAdd(t, f, urlsOf("small.test", 3)...)
	mustAdd(t, f, urlsOf("tiny.test", 3)...)
	small := 0
	for i := range 9 {
		l := mustLease(t, f)
		if l.HostKey() != "http://big.test" {
			small++
		}
		if i%2 == 0 {
			mustComplete(t, l, Outcome{State: Fetched})
		} else {
			defer l.Release()
		}
	}
	if small != 6 {
		t.Errorf("the small hosts got %d of the first 9 leases, want all 6 of their URLs", small)
	}
}

func TestBackoffHoldsOnlyItsHost(t *testing.T) {
	clk := newClock()
	f := openTest(t, "", Options{Now: clk.Now, Policy: policy(4, 0)})
	mustAdd(t, f, urlsOf("a.test", 3)...)
	mustAdd(t, f, urlsOf("b.test", 1)...)
	f.Backoff("http://a.test", clk.Now().Add(time.Minute))
	if l := mustLease(t, f); l.HostKey() != "http://b.test" {
		t.Errorf("leased %s during its backoff", l.Item().URL)
	} else {
		mustComplete(t, l, Outcome{State: Waiting, Reason: "http 503", Status: 503, Backoff: clk.Now().Add(2 * time.Minute)})
	}
	if l, wait, err := f.TryNext(); l != nil || err != nil || wait != time.Minute {
		t.Fatalf("during backoff: %v, wait %v, %v", l, wait, err)
	}
	f.Backoff("http://a.test", clk.Now().Add(time.Second)) // never shortens
	clk.Advance(time.Minute)
	for range 3 {
		if l := mustLease(t, f); l.HostKey() != "http://a.test" {
			t.Fatalf("leased %s during its backoff", l.Item().URL)
		}
	}
	if l, wait, _ := f.TryNext(); l != nil || wait != time.Minute {
		t.Fatalf("b.test's 503 backoff: %v, wait %v", l, wait)
	}
	clk.Advance(time.Minute)
	if l := mustLease(t, f); l.HostKey() != "http://b.test" || l.Record().TempErrCount != 1 {
		t.Errorf("after the backoff: %+v", l.Record())
	}
}

func TestExcludeRecordsNewURLsWithTheirReasonAndKeepsKnownOnes(t *testing.T) {
	f := openTest(t, t.TempDir(), Options{})
	mustAdd(t, f, Item{URL: "http://a.test/queued", Source: "s", Class: IndexFollow})
	n, err := f.Exclude("offsite",
		Item{URL: "http://a.test/queued", Source: "s"},
		Item{URL: "http://b.test/", Source: "s", Depth: 2},
		Item{URL: "http://b.test/", Source: "s", Depth: 2})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("Exclude counted %d new URLs, want 1", n)
	}
	if r := mustGet(t, f, "http://b.test/"); r.State != Excluded || r.Reason != "offsite" || r.Depth != 2 {
		t.Errorf("excluded URL reads %s %q depth %d", r.State, r.Reason, r.Depth)
	}
	if r := mustGet(t, f, "http://a.test/queued"); r.State != Waiting {
		t.Errorf("a queued URL became %s", r.State)
	}
	if _, err := f.Exclude(""); err == nil {
		t.Error("Exclude without a reason was accepted")
	}
	// An excluded URL is never leased.
	l, err := f.next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if l.Item().URL != "http://a.test/queued" {
		t.Errorf("leased %s", l.Item().URL)
	}
}
