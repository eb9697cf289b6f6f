package frontier

import (
	"errors"
	"slices"
	"testing"
)

// A paused source's URLs are passed over, past more than a chunk of them,
// while another source on the same host is served; the cycle ends without
// them; resumed in the cycle, they are served in it.
func TestAPausedSourceWaitsAndIsServedOnceResumedInTheSameCycle(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(8, 0)})
	mustAdd(t, f, urlsOf("a", 2*heldBackChunk+3)...)
	other := urlsOf("a", 5)
	for i := range other {
		other[i].URL += "/t"
		other[i].Source = "t"
	}
	mustAdd(t, f, other...)
	if err := f.Pause([]string{"s"}); err != nil {
		t.Fatal(err)
	}
	got := fetchAll(t, f)
	if len(got) != 5 {
		t.Fatalf("fetched %d URLs while s was paused, want t's 5: %v", len(got), got)
	}
	if r := mustGet(t, f, "http://a/p/0"); r.State != Waiting {
		t.Errorf("a paused source's URL is %s, want waiting", r.State)
	}
	if got := f.Paused(); !slices.Equal(got, []string{"s"}) {
		t.Errorf("Paused = %v", got)
	}
	if err := f.Pause(nil); err != nil {
		t.Fatal(err)
	}
	if got := len(fetchAll(t, f)); got != 2*heldBackChunk+3 {
		t.Errorf("resumed in the cycle, s had %d URLs fetched, want %d", got, 2*heldBackChunk+3)
	}
}

// Paused across a new cycle, the source stays held back; resumed then, it
// is served.
func TestAPauseHoldsAcrossCyclesUntilTheSourceResumes(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(8, 0)})
	mustAdd(t, f, urlsOf("a", 3)...)
	if err := f.Pause([]string{"s"}); err != nil {
		t.Fatal(err)
	}
	if got := fetchAll(t, f); len(got) != 0 {
		t.Fatalf("fetched %v while paused", got)
	}
	if _, err := f.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	if got := fetchAll(t, f); len(got) != 0 {
		t.Fatalf("fetched %v in the next cycle while still paused", got)
	}
	if _, err := f.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	if err := f.Pause(nil); err != nil {
		t.Fatal(err)
	}
	if got := fetchAll(t, f); len(got) != 3 {
		t.Errorf("fetched %v once resumed, want the 3 URLs", got)
	}
}

// Resuming a source rereads its hosts' queues: URLs another source's page
// limit holds back there are passed over again, not counted twice.
func TestAResumeDoesNotCountWhatAPageLimitHeldBackTwice(t *testing.T) {
	var n notes
	f := openTest(t, "", Options{Policy: policy(8, 0), OnBudget: n.add,
		Budgets: map[string]Budget{"s": {Pages: 2}}})
	mustAdd(t, f, urlsOf("a", 10)...)
	paused := urlsOf("a", 4)
	for i := range paused {
		paused[i].URL += "/t"
		paused[i].Source = "t"
	}
	mustAdd(t, f, paused...)
	if err := f.Pause([]string{"t"}); err != nil {
		t.Fatal(err)
	}
	if got := len(fetchAll(t, f)); got != 2 {
		t.Fatalf("fetched %d, want s's 2 pages", got)
	}
	if err := f.Pause(nil); err != nil {
		t.Fatal(err)
	}
	if got := len(fetchAll(t, f)); got != 4 {
		t.Fatalf("fetched %d once t resumed, want its 4", got)
	}
	if held := n.urls(LimitPages); held != 8 {
		t.Errorf("noted %d held back by the page limit, want 8 (once each)", held)
	}
}

// Recrawl queues a known URL at once in the class asked, whatever its
// state, its hash forgotten; a leased one is fetched again after its lease.
func TestRecrawlQueuesKnownURLsInTheClassAskedAndALeasedOneAfterItsLease(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(8, 0)})
	mustAdd(t, f, urlsOf("a", 3)...)
	fetchAll(t, f)
	if _, _, err := f.Reapply([]Verdict{{URL: "http://a/p/2", Reason: "excluded"}}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, f, Item{URL: "http://a/q", Source: "s", Class: FollowOnly})
	l := mustLease(t, f)
	leased := l.Item().URL
	errs, err := f.Recrawl([]string{"http://a/p/0", "http://a/p/2", leased, "http://a/unknown"}, Start)
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || errs[1] != nil || errs[2] != nil || !errors.Is(errs[3], ErrNotFound) {
		t.Fatalf("errs = %v, want the unknown URL's ErrNotFound only", errs)
	}
	for _, u := range []string{"http://a/p/0", "http://a/p/2"} {
		r := mustGet(t, f, u)
		if r.State != Waiting || r.Class != Start || r.Hash != "" || r.Reason != "" {
			t.Errorf("%s after Recrawl: %s %s hash %q reason %q, want waiting start, no hash", u, r.State, r.Class, r.Hash, r.Reason)
		}
	}
	mustComplete(t, l, Outcome{State: Fetched, Status: 200})
	got := fetchAll(t, f)
	if !slices.Contains(got, leased) || len(got) != 3 {
		t.Errorf("fetched %v, want the two recrawled URLs and the leased one again", got)
	}
}

// Remove excludes known URLs with the reason, marks the delete of a
// document pending, and refuses a leased URL.
func TestRemoveExcludesAndMarksTheDeleteOfADocumentAndRefusesALeasedURL(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(8, 0)})
	mustAdd(t, f, urlsOf("a", 3)...)
	for range 2 {
		l := mustLease(t, f)
		mustComplete(t, l, Outcome{State: Fetched, Status: 200, Pending: PendingIndex, DocID: "d"})
	}
	if _, err := f.Acknowledge([]Ack{{URL: "http://a/p/0"}}); err != nil {
		t.Fatal(err)
	}
	l := mustLease(t, f)
	recs, errs, err := f.Remove([]string{"http://a/p/0", "http://a/p/1", l.Item().URL, "http://a/none"}, "removed")
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], ErrLeased) || !errors.Is(errs[3], ErrNotFound) {
		t.Fatalf("errs = %v", errs)
	}
	for i, u := range []string{"http://a/p/0", "http://a/p/1"} {
		r := mustGet(t, f, u)
		if r.State != Excluded || r.Reason != "removed" || r.Pending != PendingDelete || recs[i].Pending != PendingDelete {
			t.Errorf("%s: %s %q pending %q (returned %q), want excluded, removed, delete pending", u, r.State, r.Reason, r.Pending, recs[i].Pending)
		}
	}
	pend, err := f.Pending()
	if err != nil || len(pend) != 2 {
		t.Errorf("Pending = %d records, %v; want the 2 deletes", len(pend), err)
	}
	l.Release()
	if got := fetchAll(t, f); len(got) != 1 {
		t.Errorf("fetched %v, want only the URL that was leased", got)
	}
	mustAdd(t, f, Item{URL: "http://a/p/0", Source: "s", Class: IndexFollow})
	if r := mustGet(t, f, "http://a/p/0"); r.State != Excluded {
		t.Errorf("a removed URL linked again is %s, want it excluded still", r.State)
	}
}
