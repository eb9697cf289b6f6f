package frontier

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

func TestCompleteAsyncStoresTheOutcomeAndItsLinksBeforeCallingBack(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(1, 0), History: DefaultHistory})
	mustAdd(t, f, Item{URL: "http://a.example/", Source: "s", Class: Start})
	l := mustLease(t, f)
	fd := &Found{
		Links: []Item{{URL: "http://a.example/b", Source: "s", Depth: 1, Class: IndexFollow, Via: "http://a.example/"},
			{URL: "http://a.example/", Source: "s", Depth: 1, Class: IndexFollow}},
		Refused: []Refused{{Reason: "offsite", Detail: "c.yaml:3:5 rules", Items: []Item{{URL: "http://other.example/", Source: "s", Depth: 1}}}},
	}
	done := make(chan Record, 1)
	err := l.CompleteAsync(Outcome{State: Fetched, Status: 200, Hash: "h1", Found: fd}, func(err error) {
		if err != nil {
			t.Errorf("done: %v", err)
		}
		r, _, _ := f.Get("http://a.example/")
		done <- r
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.State != Fetched || r.Hash != "h1" {
		t.Errorf("record seen by the callback: %s %q, want fetched h1", r.State, r.Hash)
	}
	if fd.Queued != 1 || fd.Refused[0].New != 1 {
		t.Errorf("counts: queued %d, refused new %d; want 1 and 1", fd.Queued, fd.Refused[0].New)
	}
	if r := mustGet(t, f, "http://a.example/b"); r.State != Waiting || r.Via != "http://a.example/" {
		t.Errorf("link: %s via %q", r.State, r.Via)
	}
	r := mustGet(t, f, "http://other.example/")
	if r.State != Excluded || r.Reason != "offsite" {
		t.Errorf("refused: %s %q", r.State, r.Reason)
	}
	evs, err := f.History("http://other.example/")
	if err != nil || len(evs) != 1 || evs[0].Kind != EventRefused || evs[0].Detail != "c.yaml:3:5 rules" {
		t.Errorf("refused URL's history = %+v, %v; want one refusal naming the rule", evs, err)
	}
	if l := mustLease(t, f); l.Item().URL != "http://a.example/b" {
		t.Errorf("next lease %s, want the queued link", l.Item().URL)
	}
}

func TestNextIsNotDoneWhileAnAsynchronousOutcomeIsBeingFinished(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(1, 0)})
	mustAdd(t, f, Item{URL: "http://a.example/", Source: "s", Class: Start})
	l := mustLease(t, f)
	inDone, release := make(chan struct{}), make(chan struct{})
	fd := &Found{Links: []Item{{URL: "http://a.example/b", Source: "s", Depth: 1, Class: IndexFollow}}}
	if err := l.CompleteAsync(Outcome{State: Fetched, Status: 200, Found: fd}, func(error) {
		close(inDone)
		<-release
	}); err != nil {
		t.Fatal(err)
	}
	<-inDone
	// The link is queued, but the crawl is not over while the callback runs.
	l2, _, err := f.TryNext()
	if errors.Is(err, ErrDone) {
		t.Fatal("TryNext reported ErrDone while a callback was running")
	}
	if l2 == nil {
		t.Fatalf("TryNext = nil, %v; want the queued link", err)
	}
	mustComplete(t, l2, Outcome{State: Fetched, Status: 200})
	if _, _, err := f.TryNext(); errors.Is(err, ErrDone) {
		t.Fatal("ErrDone before the first lease's callback returned")
	}
	close(release)
	// Next waits for the callback to return, then reports the end.
	if l, err := f.next(context.Background()); !errors.Is(err, ErrDone) {
		t.Fatalf("Next after the callback = %v, %v; want ErrDone", l, err)
	}
}

func TestCompleteAsyncThatCannotBeStoredHoldsTheURLUntilTheNextCycle(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(1, 0)})
	mustAdd(t, f, Item{URL: "http://a.example/", Source: "s", Class: Start})
	l := mustLease(t, f)
	got := make(chan error, 1)
	// A pending write the store does not know fails the transaction.
	bad := Outcome{State: Fetched, Status: 200, Pending: "bogus"}
	if err := l.CompleteAsync(bad, func(err error) { got <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err == nil {
		t.Fatal("done(nil) for an outcome that could not be stored")
	}
	if r := mustGet(t, f, "http://a.example/"); r.State != Waiting {
		t.Errorf("state after a failed outcome: %s, want waiting", r.State)
	}
	// Not leased again at once: it would only fail again, as fast as the host allows.
	if l, err := f.next(context.Background()); !errors.Is(err, ErrDone) {
		t.Fatalf("Next after a failed outcome = %v, %v; want ErrDone", l, err)
	}
	if _, err := f.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	if l := mustLease(t, f); l.Item().URL != "http://a.example/" {
		t.Errorf("leased %s in the next cycle, want the URL again", l.Item().URL)
	}
}

func TestAddQueuesAURLAgainAfterItWasDeletedInTheSameCycle(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(1, 0)})
	it := Item{URL: "http://a.example/x", Source: "s", Class: IndexFollow}
	if n := mustAdd(t, f, it); n != 1 {
		t.Fatalf("first Add = %d", n)
	}
	if n := mustAdd(t, f, it); n != 0 {
		t.Fatalf("second Add of a known URL = %d, want 0", n)
	}
	l := mustLease(t, f)
	mustComplete(t, l, Outcome{State: Error, Reason: "http_404", Status: 404})
	if err := f.Delete(it.URL); err != nil {
		t.Fatal(err)
	}
	if n := mustAdd(t, f, it); n != 1 {
		t.Errorf("Add after Delete = %d, want 1: the seen set must forget deleted URLs", n)
	}
}

func TestSeenSetStaysCorrectWhenItFillsUpAndWhenTheCycleChanges(t *testing.T) {
	s := newSeenSet(1 << 12)
	url := func(i int) string { return "http://a.example/" + string(rune('a'+i%26)) + "/" + strconv.Itoa(i) }
	keys := make([]uint64, 10000)
	for i := range keys {
		keys[i] = LinkKey(url(i))
	}
	s.add(1, keys, nil) // more than the set holds: it starts over when full
	recent := 0
	for i := 9000; i < 10000; i++ {
		if s.has(1, LinkKey(url(i))) {
			recent++
		}
	}
	if recent == 0 {
		t.Error("the most recent URLs were all forgotten")
	}
	if s.has(1, LinkKey("http://a.example/never")) {
		t.Error("has reports a URL never added")
	}
	last := url(9999)
	if !s.has(1, LinkKey(last)) {
		t.Errorf("the last URL added, %s, is not reported seen", last)
	}
	if s.has(2, LinkKey(last)) {
		t.Error("a URL seen in cycle 1 is reported seen in cycle 2")
	}
	if s.n*4 > len(s.slots)*3 || len(s.slots) > 1<<12 {
		t.Errorf("set over its bounds: %d in %d slots", s.n, len(s.slots))
	}
}

func TestUpdateBatchMakesEachChangeAndReportsEachRefusal(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(1, 0), History: DefaultHistory})
	mustAdd(t, f, Item{URL: "http://a.example/", Source: "s", Class: Start},
		Item{URL: "http://a.example/x", Source: "s", Class: IndexFollow})
	l := mustLease(t, f)
	mustComplete(t, l, Outcome{State: Fetched, Status: 200, Pending: PendingIndex})
	refused := errors.New("no")
	ev := Event{Kind: EventWriteDone}
	changes := []Change{
		{URL: "http://a.example/", Events: []Event{ev}, Fn: func(r *Record) error { r.Pending, r.Indexed = "", true; return nil }},
		{URL: "http://a.example/missing", Fn: func(r *Record) error { return nil }},
		{URL: "http://a.example/x", Fn: func(r *Record) error { return refused }},
	}
	if err := f.UpdateBatch(changes); err != nil {
		t.Fatal(err)
	}
	if changes[0].Err != nil || !errors.Is(changes[1].Err, ErrNotFound) || !errors.Is(changes[2].Err, refused) {
		t.Errorf("errors: %v, %v, %v; want nil, not found, the refusal", changes[0].Err, changes[1].Err, changes[2].Err)
	}
	if r := mustGet(t, f, "http://a.example/"); r.Pending != "" || !r.Indexed {
		t.Errorf("first change not made: pending %q, indexed %v", r.Pending, r.Indexed)
	}
	evs, err := f.History("http://a.example/")
	if err != nil || len(evs) == 0 || evs[len(evs)-1].Kind != EventWriteDone {
		t.Errorf("history %+v, %v: want the change's event last", evs, err)
	}
	if r := mustGet(t, f, "http://a.example/x"); r.State != Waiting {
		t.Errorf("refused change altered the record: %s", r.State)
	}
}

func TestUnchangedOutcomesWaitForTheDiskInGreaterNumbersThanReadPages(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(asyncUnits, 0)})
	mustAdd(t, f, urlsOf("a.example", asyncUnits+asyncUnits/heavyUnits)...)
	// The finisher is held by the first callback, so no outcome gives its
	// units back until it returns.
	inDone, release := make(chan struct{}), make(chan struct{})
	var calls sync.WaitGroup
	complete := func(o Outcome, hold bool) {
		t.Helper()
		calls.Add(1)
		err := mustLease(t, f).CompleteAsync(o, func(err error) {
			defer calls.Done()
			if err != nil {
				t.Errorf("done: %v", err)
			}
			if hold {
				close(inDone)
				<-release
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	unchanged := Outcome{State: Fetched, Status: 304, ETag: `"e"`}
	complete(unchanged, true)
	<-inDone
	// Every one of these returns at once: an unchanged page counts one unit.
	for range asyncUnits - 1 {
		complete(unchanged, false)
	}
	if n := len(f.asyncSlots); n != asyncUnits {
		t.Errorf("%d unchanged outcomes hold %d units, want one each", asyncUnits, n)
	}
	close(release)
	calls.Wait()

	// A read page, with its links or its document on the way, counts
	// heavyUnits: 128 of them fill what 1,024 unchanged pages do.
	inDone, release = make(chan struct{}), make(chan struct{})
	read := Outcome{State: Fetched, Status: 200, Pending: PendingIndex, DocID: "d"}
	complete(read, true)
	<-inDone
	// The callbacks run one at a time, each giving its units back before
	// the next: now only this one holds any.
	if n := len(f.asyncSlots); n != heavyUnits {
		t.Errorf("%d units held by one read page once the unchanged ones were called back, want %d", n, heavyUnits)
	}
	for range asyncUnits/heavyUnits - 1 {
		complete(read, false)
	}
	if n := len(f.asyncSlots); n != asyncUnits {
		t.Errorf("%d read pages hold %d units, want %d each", asyncUnits/heavyUnits, n, heavyUnits)
	}
	close(release)
	calls.Wait()
}

func TestAnOutcomeCountsAgainstTheDiskByWhatItHolds(t *testing.T) {
	for _, c := range []struct {
		name string
		o    Outcome
		want int
	}{
		{"unchanged page", Outcome{State: Fetched, Status: 304}, 1},
		{"error", Outcome{State: Error, Reason: "http_404"}, 1},
		{"read page, links only", Outcome{State: Fetched, Found: &Found{}}, heavyUnits},
		{"read page, small document", Outcome{State: Fetched, Pending: PendingIndex, Holds: 30 << 10}, heavyUnits},
		{"read page, 100 KiB document", Outcome{State: Fetched, Pending: PendingIndex, Holds: 100 << 10}, 13},
		{"read page, 1 MiB document", Outcome{State: Fetched, Pending: PendingIndex, Holds: 1 << 20}, 128},
		{"read page, 100 MiB document", Outcome{State: Fetched, Pending: PendingIndex, Holds: 100 << 20}, asyncUnits},
	} {
		if got := unitsOf(&c.o); got != c.want {
			t.Errorf("%s: %d units, want %d", c.name, got, c.want)
		}
	}
}

func TestLargeDocumentsWaitForTheDiskFewerAtATime(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(64, 0)})
	mustAdd(t, f, urlsOf("a.example", 16)...)
	inDone, release := make(chan struct{}), make(chan struct{})
	var calls sync.WaitGroup
	read := Outcome{State: Fetched, Status: 200, Pending: PendingIndex, DocID: "d", Holds: 1 << 20}
	for i := range asyncUnits / 128 {
		calls.Add(1)
		err := mustLease(t, f).CompleteAsync(read, func(err error) {
			defer calls.Done()
			if err != nil {
				t.Errorf("done: %v", err)
			}
			if i == 0 {
				close(inDone)
				<-release
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			<-inDone // the finisher is held: no outcome gives its units back
		}
	}
	// Eight pages of 1 MiB documents hold every unit: a ninth would wait.
	if n := len(f.asyncSlots); n != asyncUnits {
		t.Errorf("%d pages with 1 MiB documents hold %d units, want all %d", asyncUnits/128, n, asyncUnits)
	}
	close(release)
	calls.Wait()
}

// A temporary failure queues its URL again in the commit that stores it,
// but the URL stays leased until its callback has run. A pop in between
// met the new queue entry of a leased URL, passed over it and moved the
// queue's position beyond it, so the retry was never leased and the cycle
// ended with the URL still waiting (TestTemporaryPageErrorsGiveTheirCauseToTheLogTheReportAndTheHistory
// in provider, now and then).
func TestARetryQueuedBeforeItsCallbackRanIsLeasedAfterIt(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(3, 0)})
	mustAdd(t, f, urlsOf("a.example", 3)...)
	first, retried, slow := mustLease(t, f), mustLease(t, f), mustLease(t, f)
	// slow stays in flight throughout, as a page that drips its body
	// does: its host keeps its place and its queues' positions.
	defer slow.Release()
	inDone, release := make(chan struct{}), make(chan struct{})
	var calls sync.WaitGroup
	calls.Add(2)
	// The first outcome's callback holds the finisher, so the retry's
	// commit is stored while its callback waits.
	if err := first.CompleteAsync(Outcome{State: Fetched, Status: 200}, func(err error) {
		defer calls.Done()
		close(inDone)
		<-release
	}); err != nil {
		t.Fatal(err)
	}
	<-inDone
	u := retried.Item().URL
	if err := retried.CompleteAsync(Outcome{State: Waiting, Reason: "connection_reset"}, func(err error) {
		defer calls.Done()
		if err != nil {
			t.Errorf("done: %v", err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	for mustGet(t, f, u).TempErrCount != 1 {
		runtime.Gosched()
	}
	if l, _, err := f.TryNext(); l != nil || err != nil {
		t.Fatalf("TryNext while both are leased = %v, %v; want nothing yet", l, err)
	}
	close(release)
	calls.Wait()
	l, _, err := f.TryNext()
	if err != nil || l == nil || l.Item().URL != u {
		t.Fatalf("TryNext once the callbacks ran = %v, %v; want the retry of %s", l, err, u)
	}
}
