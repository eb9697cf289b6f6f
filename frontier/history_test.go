package frontier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

func kinds(evs []Event) []EventKind {
	out := make([]EventKind, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}

func mustHistory(t testing.TB, f *Frontier, url string) []Event {
	t.Helper()
	evs, err := f.History(url)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestHistoryRecordsQueueFetchAndWriteInOrder(t *testing.T) {
	clk := newClock()
	f := openTest(t, "", Options{History: DefaultHistory, Now: clk.Now})
	const u = "https://example.org/a.html"
	mustAdd(t, f, Item{URL: u, Source: "docs", Depth: 2, Class: IndexFollow, Via: "https://example.org/"})
	clk.Advance(time.Second)
	l := mustLease(t, f)
	l.Fetched(1234, 56*time.Millisecond)
	mustComplete(t, l, Outcome{State: Fetched, Status: 200, Hash: "h",
		History: []Event{{Kind: EventWriteSent, Reason: "index"}}})
	clk.Advance(time.Second)
	err := f.UpdateLog(u, Event{Kind: EventWriteDone, Reason: "created", Status: 201}, func(r *Record) error {
		r.Indexed = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	evs := mustHistory(t, f, u)
	if want := []EventKind{EventQueued, EventFetched, EventWriteSent, EventWriteDone}; !slices.Equal(kinds(evs), want) {
		t.Fatalf("history kinds = %v, want %v", kinds(evs), want)
	}
	q, fe, done := evs[0], evs[1], evs[3]
	if q.Source != "docs" || q.Class != IndexFollow || q.Depth != 2 || q.Via != "https://example.org/" {
		t.Errorf("queued event = %+v", q)
	}
	if fe.Status != 200 || fe.Bytes != 1234 || fe.Took != 56*time.Millisecond || !fe.At.Equal(clk.Now().Add(-time.Second)) {
		t.Errorf("fetched event = %+v", fe)
	}
	if done.Reason != "created" || done.Status != 201 || !done.At.Equal(clk.Now()) {
		t.Errorf("acknowledgement event = %+v", done)
	}
}

func TestHistoryKeepsOnlyTheNewestEvents(t *testing.T) {
	f := openTest(t, "", Options{History: 4})
	const u = "https://example.org/a.html"
	mustAdd(t, f, Item{URL: u, Source: "s"})
	for i := range 10 {
		if err := f.Log(u, Event{Kind: EventWriteDone, Reason: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	evs := mustHistory(t, f, u)
	var got []string
	for _, e := range evs {
		got = append(got, e.Reason)
	}
	if want := []string{"6", "7", "8", "9"}; !slices.Equal(got, want) {
		t.Fatalf("history = %v, want the 4 newest %v", got, want)
	}
}

func TestHistoriesOfURLsSharingAPrefixStayApart(t *testing.T) {
	f := openTest(t, "", Options{History: 8})
	urls := []string{"https://example.org/b", "https://example.org/b/c", "https://example.org/bc", "https://example.org/a"}
	for _, u := range urls {
		mustAdd(t, f, Item{URL: u, Source: "s"})
		if err := f.Log(u, Event{Kind: EventWriteSent, Reason: u}); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range urls {
		evs := mustHistory(t, f, u)
		if len(evs) != 2 || evs[1].Reason != u {
			t.Errorf("history of %s = %+v, want its own queued and write events", u, evs)
		}
	}
}

func TestDeleteForgetsTheHistory(t *testing.T) {
	f := openTest(t, "", Options{History: 8})
	const u, other = "https://example.org/a", "https://example.org/a/b"
	mustAdd(t, f, Item{URL: u, Source: "s"}, Item{URL: other, Source: "s"})
	for range 2 {
		mustComplete(t, mustLease(t, f), Outcome{State: Error, Reason: "http_404", Status: 404})
	}
	if err := f.Delete(u); err != nil {
		t.Fatal(err)
	}
	if evs := mustHistory(t, f, u); len(evs) != 0 {
		t.Errorf("history after Delete = %+v, want none", evs)
	}
	if evs := mustHistory(t, f, other); len(evs) != 2 {
		t.Errorf("history of the neighbour = %+v, want its 2 events", evs)
	}
	// A URL found again starts a new history.
	mustAdd(t, f, Item{URL: u, Source: "s"})
	if evs := mustHistory(t, f, u); len(evs) != 1 || evs[0].Kind != EventQueued {
		t.Errorf("history of the URL found again = %+v", evs)
	}
}

func TestHistoryRecordsRefusalsRetriesAndSweeps(t *testing.T) {
	clk := newClock()
	f := openTest(t, "", Options{History: DefaultHistory, Now: clk.Now, Policy: policy(1, 0)})
	const refused, u = "https://example.org/private/x", "https://example.org/a"
	if _, err := f.Exclude("robots", Item{URL: refused, Source: "s", Via: u}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, f, Item{URL: u, Source: "s"})
	mustComplete(t, mustLease(t, f), Outcome{State: Waiting, Reason: "timeout"})
	mustComplete(t, mustLease(t, f), Outcome{State: Error, Reason: "http_500", Status: 500})
	if _, err := f.RequeueErrors(""); err != nil {
		t.Fatal(err)
	}
	mustComplete(t, mustLease(t, f), Outcome{State: Fetched, Status: 200})
	clk.Advance(time.Hour)
	if _, err := f.RequeueDue("", clk.Now()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	mustComplete(t, mustLease(t, f), Outcome{State: Error, Reason: "http_500", Status: 500})
	if _, err := f.RequeueErrors(""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.drop(func(Record) (bool, string) { return true, "reject_list" }); err != nil {
		t.Fatal(err)
	}
	evs := mustHistory(t, f, refused)
	if len(evs) != 1 || evs[0].Kind != EventRefused || evs[0].Reason != "robots" || evs[0].Via != u {
		t.Errorf("history of the refused URL = %+v", evs)
	}
	evs = mustHistory(t, f, u)
	want := []EventKind{EventQueued, EventRetry, EventError, EventRequeued, EventFetched, EventRequeued, EventError,
		EventRequeued, EventDropped}
	if !slices.Equal(kinds(evs), want) {
		t.Fatalf("history kinds = %v, want %v", kinds(evs), want)
	}
	// The aged check's requeued event is written with its outcome.
	if evs[1].Reason != "timeout" || evs[2].Status != 500 || evs[3].Reason != "clear_errors" ||
		evs[5].Reason != "aged_check" || evs[5].Class != Refresh || !evs[5].At.Equal(evs[6].At) ||
		evs[7].Reason != "clear_errors" || evs[8].Reason != "reject_list" {
		t.Errorf("history = %+v", evs)
	}
}

func TestAChangeThatIsRefusedLeavesNoEvent(t *testing.T) {
	f := openTest(t, "", Options{History: 8})
	const u = "https://example.org/a"
	mustAdd(t, f, Item{URL: u, Source: "s"})
	refuse := errors.New("no")
	if err := f.UpdateLog(u, Event{Kind: EventWriteDone}, func(*Record) error { return refuse }); !errors.Is(err, refuse) {
		t.Fatalf("UpdateLog = %v", err)
	}
	if err := f.UpdateLog("https://example.org/unknown", Event{Kind: EventWriteDone}, func(*Record) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("UpdateLog of an unknown URL = %v", err)
	}
	if evs := mustHistory(t, f, u); len(evs) != 1 {
		t.Errorf("history = %+v, want only the queued event", evs)
	}
	if evs := mustHistory(t, f, "https://example.org/unknown"); len(evs) != 0 {
		t.Errorf("history of an unknown URL = %+v", evs)
	}
}

func TestHistoryOffRecordsNothing(t *testing.T) {
	f := openTest(t, "", Options{})
	const u = "https://example.org/a"
	mustAdd(t, f, Item{URL: u, Source: "s"})
	mustComplete(t, mustLease(t, f), Outcome{State: Fetched, Status: 200, History: []Event{{Kind: EventWriteSent}}})
	if err := f.Log(u, Event{Kind: EventWriteDone}); err != nil {
		t.Fatal(err)
	}
	if evs := mustHistory(t, f, u); len(evs) != 0 {
		t.Errorf("history = %+v, want none", evs)
	}
}

func TestHistoryDetailIsBounded(t *testing.T) {
	f := openTest(t, "", Options{History: 2})
	const u = "https://example.org/a"
	mustAdd(t, f, Item{URL: u, Source: "s"})
	long := string(make([]byte, 10*maxDetail))
	if err := f.Log(u, Event{Kind: EventWriteFailed, Detail: long}); err != nil {
		t.Fatal(err)
	}
	evs := mustHistory(t, f, u)
	if len(evs[1].Detail) != maxDetail {
		t.Errorf("detail of %d bytes stored, want %d", len(evs[1].Detail), maxDetail)
	}
}

// BenchmarkNextCompleteParallelHistory is BenchmarkNextCompleteParallel
// with the crawler's history: each completion records its outcome and an
// index write sent, in its own transaction.
func BenchmarkNextCompleteParallelHistory(b *testing.B) {
	f := openTest(b, "", Options{Policy: policy(4, 0), History: DefaultHistory})
	fill(b, f, b.N)
	before := f.db.Stats()
	b.ResetTimer()
	defer func() { b.StopTimer(); reportWrites(b, f, before) }()
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for {
				l, err := f.next(context.Background())
				if err != nil {
					return
				}
				l.Fetched(20000, 30*time.Millisecond)
				if err := l.Complete(Outcome{State: Fetched, Status: 200, Hash: "0123456789abcdef",
					History: []Event{{Kind: EventWriteSent, Reason: "index"}}}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkAddHistory is BenchmarkAdd with a queued event per new URL.
func BenchmarkAddHistory(b *testing.B) {
	f := openTest(b, "", Options{History: DefaultHistory})
	const page = 100
	items := benchItems(0, b.N+page)
	before := f.db.Stats()
	b.ResetTimer()
	for i := 0; i < b.N; i += page {
		if _, err := f.Add(items[i:min(i+page, b.N)]...); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportWrites(b, f, before)
}

func TestAURLWithAZeroByteIsRefused(t *testing.T) {
	f := openTest(t, "", Options{History: DefaultHistory})
	if _, err := f.Add(Item{URL: "http://a.test/x\x00\x00\x00\x00\x01", Source: "s"}); err == nil {
		t.Error("a URL with zero bytes was queued: it would read as a history key")
	}
}
