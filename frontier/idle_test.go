package frontier

import (
	"errors"
	"testing"
	"time"
)

// A host whose last URL was leased and completed with no other look at its
// queue in between still carries its "may hold entries" hint; the cycle must
// end at once rather than wait out the host's delay to find the queue empty.
func TestTheCycleEndsWhenAHostsLastURLIsDoneWithoutWaitingItsDelay(t *testing.T) {
	clock := newClock()
	f := openTest(t, "", Options{Policy: policy(1, time.Hour), Now: clock.Now})
	mustAdd(t, f, Item{URL: "http://a.test/", Source: "s", Class: IndexFollow})

	mustComplete(t, mustLease(t, f), Outcome{State: Fetched, Status: 200})

	if l, wait, err := f.TryNext(); !errors.Is(err, ErrDone) {
		t.Fatalf("TryNext = %v, %v, %v; want ErrDone: the only URL is done", l, wait, err)
	}
}

// The look that ends a cycle early must not end one that has work: a host
// with URLs left waits its delay, and then hands them out in queue order.
func TestAHostWithURLsLeftWaitsItsDelayAndKeepsItsOrder(t *testing.T) {
	clock := newClock()
	f := openTest(t, "", Options{Policy: policy(1, time.Hour), Now: clock.Now})
	urls := []string{"http://a.test/1", "http://a.test/2", "http://a.test/3"}
	for _, u := range urls {
		mustAdd(t, f, Item{URL: u, Source: "s", Class: IndexFollow})
	}
	for i, want := range urls {
		l := mustLease(t, f)
		if got := l.Item().URL; got != want {
			t.Fatalf("lease %d is %s, want %s", i, got, want)
		}
		mustComplete(t, l, Outcome{State: Fetched, Status: 200})
		l2, wait, err := f.TryNext()
		if i == len(urls)-1 {
			if !errors.Is(err, ErrDone) {
				t.Fatalf("after the last URL TryNext = %v, %v, %v; want ErrDone", l2, wait, err)
			}
			break
		}
		if err != nil || l2 != nil || wait != time.Hour {
			t.Fatalf("after URL %d TryNext = %v, %v, %v; want to wait the hour's delay", i, l2, wait, err)
		}
		// Looked at twice while idle: the second look must not skip an entry.
		if _, wait, err := f.TryNext(); err != nil || wait != time.Hour {
			t.Fatalf("second idle TryNext = %v, %v; want to wait the hour's delay", wait, err)
		}
		clock.Advance(time.Hour)
	}
}

// A host whose remaining URLs are all held back by a page limit has nothing
// to do in this cycle, delay or not.
func TestTheCycleEndsWhenAPageLimitHoldsBackAHostsRemainingURLs(t *testing.T) {
	clock := newClock()
	var n notes
	f := openTest(t, "", Options{Policy: policy(1, time.Hour), Now: clock.Now, OnBudget: n.add,
		Budgets: map[string]Budget{"s": {PagesPerHost: 1}}})
	mustAdd(t, f, urlsOf("a", 3)...)

	mustComplete(t, mustLease(t, f), Outcome{State: Fetched, Status: 200})

	if l, wait, err := f.TryNext(); !errors.Is(err, ErrDone) {
		t.Fatalf("TryNext = %v, %v, %v; want ErrDone: the host's page limit is reached", l, wait, err)
	}
	if got := n.urls(LimitPagesPerHost); got != 2 {
		t.Errorf("held back %d URLs, want 2", got)
	}
}
