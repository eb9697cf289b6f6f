package frontier

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/fakeclock"
)

func TestNextWaitsForWorkAndReportsTheEndOfTheCycle(t *testing.T) {
	f := openTest(t, "", Options{})
	ctx := context.Background()
	if _, err := f.next(ctx); !errors.Is(err, ErrDone) {
		t.Fatalf("Next on an empty frontier = %v, want ErrDone", err)
	}
	mustAdd(t, f, Item{URL: "http://a.test/"})
	l, err := f.next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// With a lease in flight the cycle is not over: the page may have links.
	got := make(chan string, 2)
	go func() {
		for {
			l, err := f.next(ctx)
			if err != nil {
				got <- err.Error()
				return
			}
			got <- l.Item().URL
			l.Complete(Outcome{State: Fetched})
		}
	}()
	mustAdd(t, f, Item{URL: "http://b.test/link"})
	if u := <-got; u != "http://b.test/link" {
		t.Errorf("blocked Next returned %q, want the added link", u)
	}
	mustComplete(t, l, Outcome{State: Fetched})
	if e := <-got; e != ErrDone.Error() {
		t.Errorf("after the last completion Next returned %q", e)
	}

	cctx, cancel := context.WithCancel(ctx)
	mustAdd(t, f, Item{URL: "http://c.test/"})
	held, _ := f.next(ctx)
	go cancel()
	if _, err := f.next(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Next after cancel = %v", err)
	}
	held.Release()
}

func TestNextWakesWhenADelayEnds(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(1, 20*time.Millisecond)})
	mustAdd(t, f, urlsOf("a.test", 2)...)
	l, err := f.next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The delay starts when the completion is recorded, which is after this
	// moment; a lower bound measured from after Complete returns would count
	// the commit's own (disk-bound) time against the delay.
	before := time.Now()
	mustComplete(t, l, Outcome{State: Fetched})
	if l, err = f.next(context.Background()); err != nil {
		t.Fatal(err)
	}
	if time.Since(before) < 20*time.Millisecond {
		t.Error("the second lease did not wait for the host's delay")
	}
	l.Release()
}

func TestReleasedLeaseIsLeasedAgain(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(1, time.Hour)})
	mustAdd(t, f, urlsOf("a.test", 2)...)
	l := mustLease(t, f)
	first := l.Item().URL
	l.Release()
	if again := mustLease(t, f); again.Item().URL != first {
		t.Errorf("after Release leased %s, want %s again without a delay", again.Item().URL, first)
	}
}

func TestRequeueErrorsClearsTheErrorCacheOfOneSource(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(10, 0)})
	mustAdd(t, f,
		Item{URL: "http://a.test/1", Source: "a", Class: IndexOnly},
		Item{URL: "http://a.test/2", Source: "a"},
		Item{URL: "http://b.test/1", Source: "b"})
	for range 3 {
		l := mustLease(t, f)
		if l.Item().URL == "http://a.test/2" {
			mustComplete(t, l, Outcome{State: Fetched})
		} else {
			mustComplete(t, l, Outcome{State: Error, Reason: "http 404", Status: 404})
		}
	}
	n, err := f.RequeueErrors("a")
	if err != nil || n != 1 {
		t.Fatalf("RequeueErrors = %d, %v; want 1", n, err)
	}
	r := mustGet(t, f, "http://a.test/1")
	if r.State != Waiting || r.Class != IndexOnly || r.ErrCount != 1 || r.Reason != "" {
		t.Errorf("requeued record %+v", r)
	}
	if got := fetchAll(t, f); len(got) != 1 || got[0] != "http://a.test/1" {
		t.Errorf("leased %v after clearing source a's errors", got)
	}
	if r := mustGet(t, f, "http://b.test/1"); r.State != Error {
		t.Errorf("other source's error became %s", r.State)
	}
}

func TestDropExcludesQueuedURLsButLeavesLeasedAndDoneOnes(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(10, 0)})
	mustAdd(t, f, Item{URL: "http://a.test/calendar/1"}, Item{URL: "http://a.test/calendar/2"},
		Item{URL: "http://a.test/calendar/3"}, Item{URL: "http://a.test/keep"})
	leased := mustLease(t, f) // calendar/1
	fetched := mustLease(t, f)
	mustComplete(t, fetched, Outcome{State: Fetched}) // calendar/2
	n, err := f.drop(func(r Record) (bool, string) {
		return strings.Contains(r.URL, "/calendar/"), "reject list: /calendar/"
	})
	if err != nil || n != 1 {
		t.Fatalf("Drop = %d, %v; want 1", n, err)
	}
	if r := mustGet(t, f, "http://a.test/calendar/3"); r.State != Excluded || r.Reason != "reject list: /calendar/" {
		t.Errorf("dropped URL: %s %q", r.State, r.Reason)
	}
	if r := mustGet(t, f, leased.Item().URL); r.State != InFlight {
		t.Errorf("leased URL became %s", r.State)
	}
	if r := mustGet(t, f, fetched.Item().URL); r.State != Fetched {
		t.Errorf("fetched URL became %s", r.State)
	}
	mustComplete(t, leased, Outcome{State: Fetched})
	if got := fetchAll(t, f); len(got) != 1 || got[0] != "http://a.test/keep" {
		t.Errorf("leased %v after Drop, want only /keep", got)
	}
}

func TestRequeueDueQueuesOldAndSitemapChangedURLsAsRefreshWithoutRewritingTheirRecords(t *testing.T) {
	clk := newClock()
	f := openTest(t, "", Options{Now: clk.Now, Policy: policy(10, 0), History: DefaultHistory})
	mustAdd(t, f, Item{URL: "http://a.test/old", Source: "a"})
	fetchAll(t, f)
	clk.Advance(48 * time.Hour)
	mustAdd(t, f, Item{URL: "http://a.test/new", Source: "a"}, Item{URL: "http://a.test/changed", Source: "a"},
		Item{URL: "http://a.test/err", Source: "a"}, Item{URL: "http://b.test/old", Source: "b"})
	for range 4 {
		l := mustLease(t, f)
		if l.Item().URL == "http://a.test/err" {
			mustComplete(t, l, Outcome{State: Error, Reason: "http 500", Status: 500})
		} else {
			mustComplete(t, l, Outcome{State: Fetched})
		}
	}
	clk.Advance(time.Hour)
	mustAdd(t, f, Item{URL: "http://a.test/changed", Lastmod: clk.Now()}) // sitemap says: changed since
	clk.Advance(time.Hour)
	due := []string{"http://a.test/old", "http://a.test/changed"}
	before := map[string]Record{}
	for _, u := range due {
		before[u] = mustGet(t, f, u)
	}
	n, err := f.RequeueDue("a", clk.Now().Add(-24*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("RequeueDue = %d, %v; want 2 (old, changed)", n, err)
	}
	// Queued, the records are as they were, history included: the check's
	// outcome rewrites them once.
	for _, u := range due {
		if r := mustGet(t, f, u); !reflect.DeepEqual(r, before[u]) {
			t.Errorf("%s after RequeueDue: %+v, was %+v", u, r, before[u])
		}
		if evs := mustHistory(t, f, u); evs[len(evs)-1].Kind == EventRequeued {
			t.Errorf("%s: a requeued event before the check: %+v", u, evs)
		}
	}
	var leased []string
	for {
		l, _, err := f.TryNext()
		if err != nil || l == nil {
			break
		}
		if l.Item().Class != Refresh {
			t.Errorf("%s leased as %s, want refresh", l.Item().URL, l.Item().Class)
		}
		leased = append(leased, l.Item().URL)
		mustComplete(t, l, Outcome{State: Fetched, Status: 304})
	}
	if slices.Sort(leased); !slices.Equal(leased, []string{"http://a.test/changed", "http://a.test/old"}) {
		t.Fatalf("leased %v, want changed and old", leased)
	}
	for _, u := range due {
		r := mustGet(t, f, u)
		if r.State != Fetched || r.Class != Refresh || r.Cycle != f.Cycle() || !r.CheckedAt.Equal(clk.Now()) {
			t.Errorf("%s after its check: %s %s cycle %d checked %v", u, r.State, r.Class, r.Cycle, r.CheckedAt)
		}
		evs := mustHistory(t, f, u)
		if k := kinds(evs[len(evs)-2:]); !slices.Equal(k, []EventKind{EventRequeued, EventFetched}) ||
			evs[len(evs)-2].Reason != "aged_check" || evs[len(evs)-2].Class != Refresh {
			t.Errorf("%s: history ends %+v, want the aged check's requeued and fetched events", u, evs[len(evs)-2:])
		}
	}
	if r := mustGet(t, f, "http://b.test/old"); r.State != Fetched || r.Class == Refresh {
		t.Errorf("other source requeued: %s %s", r.State, r.Class)
	}
}

func TestARequeueDueInAResumedCycleQueuesNoURLTwiceAndANewCycleQueuesThemAgain(t *testing.T) {
	clk := newClock()
	dir := t.TempDir()
	f := openTest(t, dir, Options{Now: clk.Now, Policy: policy(10, 0)})
	if _, err := f.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, f, urlsOf("a.test", 3)...)
	fetchAll(t, f)
	clk.Advance(48 * time.Hour)
	if n, err := f.RequeueDue("s", clk.Now().Add(-24*time.Hour)); err != nil || n != 3 {
		t.Fatalf("RequeueDue = %d, %v; want 3", n, err)
	}
	l := mustLease(t, f)
	checked := l.Item().URL
	mustComplete(t, l, Outcome{State: Fetched, Status: 304})
	f.Close()

	// The crawl stopped; the next run resumes the cycle and asks again.
	f = openTest(t, dir, Options{Now: clk.Now, Policy: policy(10, 0)})
	clk.Advance(time.Minute)
	if n, err := f.RequeueDue("s", clk.Now().Add(-24*time.Hour)); err != nil || n != 0 {
		t.Fatalf("RequeueDue of the resumed cycle = %d, %v; want 0: two are queued, one is checked", n, err)
	}
	got := fetchAll(t, f)
	if len(got) != 2 || slices.Contains(got, checked) || got[0] == got[1] {
		t.Fatalf("leased %v after the resumed RequeueDue; want the two not checked yet, once each (%s was)", got, checked)
	}

	// A new cycle queues whatever is due, whatever an earlier one queued.
	if _, err := f.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(48 * time.Hour)
	if n, err := f.RequeueDue("s", clk.Now().Add(-24*time.Hour)); err != nil || n != 3 {
		t.Fatalf("RequeueDue of the next cycle = %d, %v; want 3", n, err)
	}
	if got := fetchAll(t, f); len(got) != 3 {
		t.Fatalf("leased %v in the next cycle, want the 3 pages", got)
	}
}

func TestUpdateKeepsQueueAndRecordInStep(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(10, 0)})
	mustAdd(t, f, urlsOf("a.test", 3)...)
	u0, u1, u2 := "http://a.test/p/0", "http://a.test/p/1", "http://a.test/p/2"
	leased := mustLease(t, f) // p/0

	// A leased URL's bookkeeping can change, its state cannot.
	if err := f.Update(u0, func(r *Record) error { r.State = Fetched; return nil }); !errors.Is(err, ErrLeased) {
		t.Errorf("state change of a leased URL: %v", err)
	}
	if err := f.Update(u0, func(r *Record) error { r.Pending = "index"; return nil }); err != nil {
		t.Fatal(err)
	}
	mustComplete(t, leased, Outcome{State: Fetched, Hash: "h"})
	if r := mustGet(t, f, u0); r.Pending != "index" || r.Hash != "h" || r.State != Fetched {
		t.Errorf("Complete lost an Update: %+v", r)
	}

	// Waiting → Fetched leaves the queue; Fetched → Waiting joins it.
	if err := f.Update(u1, func(r *Record) error { r.State = Fetched; r.Target = u2; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := f.Update(u0, func(r *Record) error { r.State = Waiting; r.Pending = ""; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := f.Update(u2, func(r *Record) error { r.Class = Start; return nil }); err != nil {
		t.Fatal(err)
	}
	if got := fetchAll(t, f); fmt.Sprint(got) != fmt.Sprint([]string{u2, u0}) {
		t.Errorf("leased %v, want p/2 (now a start URL) then p/0", got)
	}
	boom := errors.New("boom")
	if err := f.Update(u1, func(r *Record) error { r.Hash = "x"; return boom }); err != boom {
		t.Errorf("fn's error: %v", err)
	}
	if r := mustGet(t, f, u1); r.Hash == "x" {
		t.Error("a failed Update changed the record")
	}
	if err := f.Update("http://a.test/none", func(*Record) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Errorf("Update of an unknown URL: %v", err)
	}
}

func TestPendingListsOnlyRecordsWithAnUnacknowledgedWrite(t *testing.T) {
	f := openTest(t, "", Options{})
	mustAdd(t, f, urlsOf("a.test", 50)...)
	for i := range 5 {
		f.Update(fmt.Sprintf("http://a.test/p/%d", i*10), func(r *Record) error { r.Pending = "delete"; return nil })
	}
	f.Update("http://a.test/p/0", func(r *Record) error { r.Pending = ""; return nil })
	var got []string
	f.pendingEach(func(r Record) error { got = append(got, r.URL); return nil })
	if fmt.Sprint(got) != "[http://a.test/p/10 http://a.test/p/20 http://a.test/p/30 http://a.test/p/40]" {
		t.Errorf("Pending listed %v", got)
	}
}

func TestDeleteForgetsAURLUntilItIsFoundAgain(t *testing.T) {
	f := openTest(t, "", Options{})
	mustAdd(t, f, urlsOf("a.test", 2)...)
	l := mustLease(t, f)
	if err := f.Delete(l.Item().URL); !errors.Is(err, ErrLeased) {
		t.Errorf("Delete of a leased URL: %v", err)
	}
	mustComplete(t, l, Outcome{State: Error, Reason: "http 410", Status: 410})
	for _, u := range []string{"http://a.test/p/0", "http://a.test/p/1"} {
		if err := f.Delete(u); err != nil {
			t.Fatal(err)
		}
	}
	if got := fetchAll(t, f); len(got) != 0 {
		t.Errorf("a deleted waiting URL was leased: %v", got)
	}
	if n := mustAdd(t, f, urlsOf("a.test", 1)...); n != 1 {
		t.Error("a deleted URL found again was not queued")
	}
}

func TestCountsByStateAndReasonIncludeLeases(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(10, 0)})
	mustAdd(t, f, urlsOf("a.test", 5)...)
	mustAdd(t, f, Item{URL: "http://b.test/", Source: "b"})
	for _, o := range []Outcome{{State: Fetched}, {State: Error, Reason: "http 404"}, {State: Excluded, Reason: "noindex"}} {
		mustComplete(t, mustLease(t, f), o)
	}
	held := mustLease(t, f)
	defer held.Release()
	c, err := f.Counts()
	if err != nil {
		t.Fatal(err)
	}
	want := [numStates]int{Waiting: 1, InFlight: 1, Fetched: 1, Error: 1, Excluded: 1}
	a, b := c["s"], c["b"]
	if b == nil || b.Total() != 1 {
		t.Errorf("source b: %+v", b)
	}
	if a == nil {
		t.Fatal("no counts for source s")
	}
	// Hosts alternate, so b's only URL is among the first leases; count s.
	got := a.States
	got[Waiting] += b.States[Waiting]
	got[InFlight] += b.States[InFlight]
	got[Fetched] += b.States[Fetched]
	got[Error] += b.States[Error]
	got[Excluded] += b.States[Excluded]
	want[Waiting] = 2
	if got != want {
		t.Errorf("counts %v, want %v", got, want)
	}
	if a.Reasons[Error]["http 404"]+b.Reasons[Error]["http 404"] != 1 {
		t.Errorf("reasons %v / %v", a.Reasons, b.Reasons)
	}
}

func TestMetaValuesPersist(t *testing.T) {
	dir := t.TempDir()
	f, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.PutMeta("fingerprint/docs", []byte("abc"))
	f.BeginCycle()
	f.Close()
	if _, _, err := f.Get("x"); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
	f = openTest(t, dir, Options{})
	if v, _ := f.GetMeta("fingerprint/docs"); string(v) != "abc" {
		t.Errorf("meta after reopen = %q", v)
	}
	if f.Cycle() != 1 {
		t.Errorf("cycle after reopen = %d", f.Cycle())
	}
}

func TestReopenKeepsQueueOrderAndReturnsLeasesToWaiting(t *testing.T) {
	dir := t.TempDir()
	f, err := Open(dir, Options{Policy: policy(10, 0)})
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, f, urlsOf("a.test", 4)...)
	mustAdd(t, f, Item{URL: "http://b.test/start", Class: Start})
	l1, l2 := mustLease(t, f), mustLease(t, f)
	mustComplete(t, l1, Outcome{State: Fetched})
	_ = l2 // held across the close: lost, so its URL must come back
	f.Close()

	f = openTest(t, dir, Options{Policy: policy(10, 0)})
	if r := mustGet(t, f, l2.Item().URL); r.State != Waiting {
		t.Errorf("a lease held at close is %s after reopen", r.State)
	}
	got := fetchAll(t, f)
	if len(got) != 4 {
		t.Errorf("after reopen leased %v, want the 4 not fetched", got)
	}
	for _, u := range got {
		if u == l1.Item().URL {
			t.Errorf("completed %s leased again", u)
		}
	}
}

func TestConcurrentWorkersLeaseEachURLOnceWithinHostLimits(t *testing.T) {
	const (
		hosts    = 12
		parallel = 2
		pages    = 600
	)
	f := openTest(t, "", Options{Policy: policy(parallel, 0)})
	url := func(i int) string { return fmt.Sprintf("http://h%d.test/p/%d", i%hosts, i) }
	mustAdd(t, f, Item{URL: url(0), Class: Start})
	var (
		mu      sync.Mutex
		leased  = map[string]int{}
		perHost = map[string]int{}
		worst   int
	)
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				l, err := f.next(ctx)
				if err != nil {
					if !errors.Is(err, ErrDone) {
						t.Error(err)
					}
					return
				}
				u := l.Item().URL
				mu.Lock()
				leased[u]++
				perHost[l.HostKey()]++
				worst = max(worst, perHost[l.HostKey()])
				mu.Unlock()
				var i int
				fmt.Sscanf(u[strings.LastIndexByte(u, '/')+1:], "%d", &i)
				var links []Item
				for _, j := range []int{2*i + 1, 2*i + 2, i + 1, i / 2} {
					if j < pages {
						links = append(links, Item{URL: url(j), Class: IndexFollow})
					}
				}
				if _, err := f.Add(links...); err != nil {
					t.Error(err)
				}
				mu.Lock()
				perHost[l.HostKey()]-- // before the slot is freed: never above the real count
				mu.Unlock()
				if err := l.Complete(Outcome{State: Fetched}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	stop := make(chan struct{})
	var side sync.WaitGroup
	side.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			err := f.Update(url(i%pages), func(r *Record) error { r.DocID = "d"; return nil })
			if err != nil && !errors.Is(err, ErrNotFound) {
				t.Error(err)
			}
			if i%50 == 0 {
				if _, err := f.drop(func(r Record) (bool, string) { return strings.HasSuffix(r.URL, "7"), "reject" }); err != nil {
					t.Error(err)
				}
			}
		}
	})
	wg.Wait()
	close(stop)
	side.Wait()

	if worst > parallel {
		t.Errorf("a host had %d leases at once, MaxParallel %d", worst, parallel)
	}
	for u, n := range leased {
		if n > 1 {
			t.Errorf("%s leased %d times", u, n)
		}
	}
	c, _ := f.Counts()
	st := c[""].States
	if st[Fetched] != len(leased) || st[Fetched]+st[Excluded] != pages || st[Waiting]+st[InFlight]+st[Error] != 0 {
		t.Errorf("counts %v with %d leased, %d pages", st, len(leased), pages)
	}
}

func TestWalksOverManyChunksMissNoRecord(t *testing.T) {
	f := openTest(t, "", Options{})
	n := 2*writeChunk + readChunk + 3
	mustAdd(t, f, urlsOf("a.test", n)...)
	if c, err := f.Counts(); err != nil || c["s"].Total() != n {
		t.Fatalf("Counts = %v, %v; want %d URLs", c, err, n)
	}
	if dropped, err := f.drop(func(Record) (bool, string) { return true, "test" }); err != nil || dropped != n {
		t.Fatalf("Drop over %d records = %d, %v", n, dropped, err)
	}
	seen := 0
	f.ForEach("s", func(r Record) error {
		if r.State != Excluded {
			t.Errorf("%s is %s", r.URL, r.State)
		}
		seen++
		return nil
	})
	if seen != n {
		t.Errorf("ForEach saw %d of %d", seen, n)
	}
}

func TestCycleIsNotDoneWhileAChangeHoldsTheOnlyQueuedURL(t *testing.T) {
	f := openTest(t, "", Options{})
	u := "http://a.test/only"
	mustAdd(t, f, Item{URL: u})
	var (
		l    *lease
		wait time.Duration
		err  error
	)
	uerr := f.Update(u, func(r *Record) error {
		// Another worker asks for work while this change holds the URL.
		done := make(chan struct{})
		go func() {
			l, wait, err = f.TryNext()
			close(done)
		}()
		<-done
		r.DocID = "d"
		return nil
	})
	if uerr != nil {
		t.Fatal(uerr)
	}
	if l != nil || err != nil || wait != -1 {
		t.Errorf("TryNext during the change = %v, %v, %v; want nothing yet, and not ErrDone", l, wait, err)
	}
	if l := mustLease(t, f); l.Item().URL != u {
		t.Errorf("after the change leased %s", l.Item().URL)
	}
}

func TestPendingIndexFollowsSweepsThatClearPending(t *testing.T) {
	f := openTest(t, "", Options{})
	mustAdd(t, f, urlsOf("a.test", 2)...)
	fetchAll(t, f)
	for _, u := range []string{"http://a.test/p/0", "http://a.test/p/1"} {
		f.Update(u, func(r *Record) error { r.Pending, r.Indexed = "index", true; return nil })
	}
	if n, err := f.RequeueIndexed(); err != nil || n != 2 {
		t.Fatalf("RequeueIndexed = %d, %v", n, err)
	}
	f.pendingEach(func(r Record) error {
		t.Errorf("Pending lists %s with Pending %q", r.URL, r.Pending)
		return nil
	})
}

// fetchedAnHourAgo opens a store holding u of source s, fetched an hour
// ago with hash h0, and its clock.
func fetchedAnHourAgo(t *testing.T, u string) (*Frontier, *fakeclock.Clock) {
	t.Helper()
	clk := newClock()
	f := openTest(t, "", Options{Now: clk.Now, Policy: policy(10, 0)})
	mustAdd(t, f, Item{URL: u, Source: "s"})
	mustComplete(t, mustLease(t, f), Outcome{State: Fetched, Status: 200, Hash: "h0"})
	clk.Advance(time.Hour)
	return f, clk
}

func mustRequeueDue(t *testing.T, f *Frontier, olderThan time.Time, want int) {
	t.Helper()
	if n, err := f.RequeueDue("s", olderThan); err != nil || n != want {
		t.Fatalf("RequeueDue = %d, %v; want %d", n, err, want)
	}
}

func TestAnAgedCheckIsNotLeasedWhileAChangeHoldsItsURLAndIsLeasedAfter(t *testing.T) {
	const u = "http://a.test/p"
	f, clk := fetchedAnHourAgo(t, u)
	mustRequeueDue(t, f, clk.Now(), 1)
	var during *lease
	changes := []edit{{URL: u, Fn: func(r *Record) error {
		// A worker asks for work while the change holds the URL.
		done := make(chan struct{})
		go func() { during, _, _ = f.TryNext(); close(done) }()
		<-done
		r.Depth = 3
		return nil
	}}}
	if err := f.UpdateBatch(changes); err != nil || changes[0].Err != nil {
		t.Fatalf("UpdateBatch = %v, %v", err, changes[0].Err)
	}
	if during != nil {
		t.Fatalf("%s leased while a change held it", during.Item().URL)
	}
	l := mustLease(t, f)
	if l.Item().URL != u || !l.due || l.Item().Depth != 3 {
		t.Fatalf("leased %s (due %v, depth %d), want the aged check of %s as changed", l.Item().URL, l.due, l.Item().Depth, u)
	}
	mustComplete(t, l, Outcome{State: Fetched, Status: 304})
}

func TestAChangeToAURLLeasedForItsAgedCheckLeavesItsStateToTheOutcome(t *testing.T) {
	const u = "http://a.test/p"
	f, clk := fetchedAnHourAgo(t, u)
	mustRequeueDue(t, f, clk.Now(), 1)
	l := mustLease(t, f)
	if err := f.Update(u, func(r *Record) error { r.State, r.Reason = Excluded, "x"; return nil }); !errors.Is(err, ErrLeased) {
		t.Errorf("state change of a URL leased for its aged check: %v, want ErrLeased", err)
	}
	if err := f.Refetch([]string{u}); err != nil {
		t.Fatal(err)
	}
	if r := mustGet(t, f, u); r.State != InFlight || r.Hash != "" {
		t.Errorf("after Refetch: %s, hash %q; want in flight (the lease's to change) and the hash forgotten", r.State, r.Hash)
	}
	mustComplete(t, l, Outcome{State: Fetched, Status: 304, Hash: "h0"})
	// The forgotten hash outlives the 304: the URL is fetched once more,
	// whole (TestAHashForgottenWhileTheURLIsLeasedOutlivesAnOutcomeThatBroughtNothingNew).
	if r := mustGet(t, f, u); r.State != Waiting || r.Hash != "" {
		t.Errorf("after the check: %s, hash %q; want it queued again without its hash", r.State, r.Hash)
	}
	if got := fetchAll(t, f); len(got) != 1 {
		t.Errorf("leased %v after the check, want %s once", got, u)
	}
}

// A group of duplicates asks for a member's document to be written again
// (Refetch) while another worker holds the member for its check; the
// check's 304 must not put back the hash that asked for it.
func TestAHashForgottenWhileTheURLIsLeasedOutlivesAnOutcomeThatBroughtNothingNew(t *testing.T) {
	for _, aged := range []bool{false, true} {
		t.Run(fmt.Sprintf("aged check %v", aged), func(t *testing.T) {
			const u = "http://a.test/p"
			f, clk := fetchedAnHourAgo(t, u)
			if aged {
				mustRequeueDue(t, f, clk.Now(), 1)
			} else if err := f.Refetch([]string{u}); err != nil {
				t.Fatal(err)
			} else if err := f.Update(u, func(r *Record) error { r.Hash = "h0"; return nil }); err != nil {
				t.Fatal(err)
			}
			l := mustLease(t, f)
			if err := f.Refetch([]string{u}); err != nil {
				t.Fatal(err)
			}
			mustComplete(t, l, Outcome{State: Fetched, Status: 304, Hash: "h0"})
			if r := mustGet(t, f, u); r.Hash != "" || r.State != Waiting {
				t.Errorf("after the 304: %s, hash %q; want the hash forgotten and the URL queued again", r.State, r.Hash)
			}
			again := mustLease(t, f)
			if again.Item().URL != u || again.Record().Hash != "" {
				t.Errorf("leased %s with hash %q, want %s without one: fetched whole", again.Item().URL, again.Record().Hash, u)
			}
			mustComplete(t, again, Outcome{State: Fetched, Status: 200, Hash: "h0"})
			if got := fetchAll(t, f); len(got) != 0 {
				t.Errorf("leased %v after the refetch, want nothing", got)
			}
		})
	}
}

// The duplicates' settling asks for a member's document again from the
// callback of another page's outcome, stored in the same commit as the
// member's 304 or before it: the member's outcome is stored, its lease not
// ended yet, and the request must queue it all the same.
func TestARefetchBetweenAStoredOutcomeAndTheEndOfItsLeaseQueuesTheURL(t *testing.T) {
	clk := newClock()
	f := openTest(t, "", Options{Now: clk.Now, Policy: policy(10, 0)})
	const a, b = "http://a.test/a", "http://a.test/b"
	mustAdd(t, f, Item{URL: a, Source: "s"}, Item{URL: b, Source: "s"})
	for range 2 {
		mustComplete(t, mustLease(t, f), Outcome{State: Fetched, Status: 200, Hash: "h0"})
	}
	clk.Advance(time.Hour)
	mustRequeueDue(t, f, clk.Now(), 2)
	la, lb := mustLease(t, f), mustLease(t, f)
	if la.Item().URL != a || lb.Item().URL != b {
		t.Fatalf("leased %s and %s, want %s and %s", la.Item().URL, lb.Item().URL, a, b)
	}
	stored, refetched, ended := make(chan struct{}), make(chan error, 1), make(chan error, 1)
	// a's callback runs first, and holds the callbacks until b's 304 is stored.
	if err := la.CompleteAsync(Outcome{State: Fetched, Status: 200, Hash: "h1"}, func(err error) {
		<-stored
		refetched <- f.Refetch([]string{b})
	}); err != nil {
		t.Fatal(err)
	}
	if err := lb.CompleteAsync(Outcome{State: Fetched, Status: 304, Hash: "h0"}, func(err error) { ended <- err }); err != nil {
		t.Fatal(err)
	}
	// Its callback is held behind a's, so the store is watched instead.
	for mustGet(t, f, b).Status != 304 {
		runtime.Gosched()
	}
	close(stored)
	if err := <-refetched; err != nil {
		t.Fatal(err)
	}
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	l := mustLease(t, f)
	if l.Item().URL != b || l.Record().Hash != "" {
		t.Fatalf("leased %s with hash %q, want %s without one: fetched whole", l.Item().URL, l.Record().Hash, b)
	}
	mustComplete(t, l, Outcome{State: Fetched, Status: 200, Hash: "h0"})
}

// The reach generation stands for what the orphan walk reads: it moves
// with every change the walk could see, and stays put through an unchanged
// re-crawl, an aged check's 304 and a start URL's fetch again alike, so the
// walk after such a crawl can be skipped (provider, orphanVerdict).
func TestReachGenerationCountsWhatTheOrphanWalkReadsAndNoUnchangedCheck(t *testing.T) {
	const start, page = "http://a.test/", "http://a.test/p"
	clk := newClock()
	f := openTest(t, "", Options{Now: clk.Now, Policy: policy(10, 0)})
	gen := func() uint64 {
		t.Helper()
		g, err := f.ReachGeneration()
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	step := func(what string, moves bool, do func()) {
		t.Helper()
		before := gen()
		do()
		if after := gen(); (after != before) != moves {
			t.Errorf("%s: generation %d -> %d, want moved=%v", what, before, after, moves)
		}
	}
	links := []uint64{LinkKey(page)}
	fetch := func(o Outcome) { mustComplete(t, mustLease(t, f), o) }
	// due begins a cycle an hour on and queues every page for its aged check.
	due := func() {
		t.Helper()
		clk.Advance(time.Hour)
		if _, err := f.BeginCycle(); err != nil {
			t.Fatal(err)
		}
		mustRequeueDue(t, f, clk.Now(), 2)
	}

	step("a new start URL", true, func() { mustAdd(t, f, Item{URL: start, Source: "s", Class: Start}) })
	step("its first outcome, with links", true, func() {
		fetch(Outcome{State: Fetched, Status: 200, Hash: "h0", ETag: `"e"`, ReadLinks: true, Links: links,
			Pending: PendingIndex, DocID: "d0"})
	})
	step("a new page", true, func() { mustAdd(t, f, Item{URL: page, Source: "s"}) })
	step("its outcome, linking nothing", true, func() {
		fetch(Outcome{State: Fetched, Status: 200, Hash: "h1", ETag: `"e"`, ReadLinks: true, Pending: PendingIndex, DocID: "d1"})
	})
	step("the acknowledgements", true, func() {
		if errs, err := f.Acknowledge([]Ack{{URL: start, Event: Event{Kind: EventWriteDone}},
			{URL: page, Event: Event{Kind: EventWriteDone}}}); err != nil || errs[0] != nil || errs[1] != nil {
			t.Fatalf("Acknowledge = %v, %v", errs, err)
		}
	})

	// A cycle of the unchanged re-crawl: the start URL queued again and
	// checked, the page's aged check, both answered 304.
	clk.Advance(time.Hour)
	step("an unchanged cycle", false, func() {
		if _, err := f.BeginCycle(); err != nil {
			t.Fatal(err)
		}
		mustAdd(t, f, Item{URL: start, Source: "s", Class: Start})
		if r := mustGet(t, f, start); r.State != Waiting {
			t.Fatalf("the start URL is %s, want it queued again", r.State)
		}
		fetch(Outcome{State: Fetched, Status: 304, Hash: "h0", ETag: `"e"`})
		mustRequeueDue(t, f, clk.Now(), 1)
		fetch(Outcome{State: Fetched, Status: 304, Hash: "h1", ETag: `"e"`})
	})
	step("links read again and found the same", false, func() {
		due()
		fetch(Outcome{State: Fetched, Status: 200, Hash: "h0", ReadLinks: true, Links: links})
		fetch(Outcome{State: Fetched, Status: 200, Hash: "h1", ReadLinks: true})
	})
	step("the start URL's links changed", true, func() {
		due()
		fetch(Outcome{State: Fetched, Status: 200, Hash: "h2", ReadLinks: true, Links: []uint64{LinkKey("http://a.test/q")}})
		fetch(Outcome{State: Fetched, Status: 304, Hash: "h1"})
	})
	step("the start URL's links dropped", true, func() {
		due()
		fetch(Outcome{State: Fetched, Status: 200, Hash: "h2", ReadLinks: true})
		fetch(Outcome{State: Fetched, Status: 304, Hash: "h1"})
	})
	step("the page gone", true, func() {
		due()
		fetch(Outcome{State: Fetched, Status: 304, Hash: "h2"})
		fetch(Outcome{State: Error, Status: 404, Reason: "http_404", Pending: PendingDelete})
	})
	step("marked an orphan", true, func() {
		if _, err := f.Orphans([]string{start}, OrphanKeep); err != nil {
			t.Fatal(err)
		}
	})
	step("a store opened again", false, func() {
		dir := f.dir
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		f = openTest(t, dir, Options{Now: clk.Now, Policy: policy(10, 0)})
	})
}
