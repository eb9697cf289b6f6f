package frontier

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A request that is no queued URL's (a sitemap) takes one of its host's
// slots and starts its delay like a lease, and a lease waits for it as it
// waits for another lease: a page and a sitemap of one host never go out
// closer than the delay, nor more at once than the host's slots.
func TestRequestTakesAHostSlotAndStartsItsDelayLikeALease(t *testing.T) {
	clock := newClock()
	f := openTest(t, "", Options{Policy: policy(1, 10*time.Second), Now: clock.Now})
	mustAdd(t, f, urlsOf("a.test", 2)...)
	const host = "http://a.test"

	l := mustLease(t, f)
	if done, wait, err := f.TryRequest(host); done != nil || err != nil || wait != -1 {
		t.Fatalf("TryRequest while the host's one slot is leased = %v, %v, %v; want to wait for the slot", done != nil, wait, err)
	}
	mustComplete(t, l, Outcome{State: Fetched, Status: 200})
	if done, wait, _ := f.TryRequest(host); done != nil || wait != 10*time.Second {
		t.Fatalf("TryRequest right after the page = %v, wait %v; want the host's delay, 10s", done != nil, wait)
	}
	clock.Advance(10 * time.Second)
	done, _, err := f.TryRequest(host)
	if done == nil || err != nil {
		t.Fatalf("TryRequest once the delay is over = %v, %v; want the slot", done != nil, err)
	}
	if l, wait, err := f.TryNext(); l != nil || err != nil {
		t.Fatalf("TryNext while a request holds the slot = %v, %v, %v; want no lease", l, wait, err)
	}
	clock.Advance(time.Minute)
	done() // the request ends now: the delay starts from here
	if l, wait, _ := f.TryNext(); l != nil || wait != 10*time.Second {
		t.Fatalf("TryNext right after the request = %v, wait %v; want the host's delay, 10s", l != nil, wait)
	}
	clock.Advance(10 * time.Second)
	mustComplete(t, mustLease(t, f), Outcome{State: Fetched, Status: 200})

	// A host with nothing queued is kept while its request runs and its
	// delay holds after it, then forgotten.
	const other = "http://b.test"
	done, _, _ = f.TryRequest(other)
	done()
	if _, wait, _ := f.TryRequest(other); wait != 10*time.Second {
		t.Fatalf("a second request to a host without pages waits %v, want its delay", wait)
	}
	clock.Advance(10 * time.Second)
	if done, _, _ := f.TryRequest(other); done == nil {
		t.Fatal("no slot once the delay is over")
	} else {
		done()
	}
}

// Request waits, and gives up with its context or the store's close.
func TestRequestWaitsUntilItsContextEndsOrTheStoreCloses(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(1, time.Hour)})
	done, err := f.Request(context.Background(), "http://a.test")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := f.Request(ctx, "http://a.test")
		errs <- err
	}()
	cancel()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("Request with its context cancelled = %v", err)
	}
	done()
	go func() {
		_, err := f.Request(context.Background(), "http://a.test") // an hour's delay
		errs <- err
	}()
	f.Close()
	if err := <-errs; !errors.Is(err, ErrClosed) {
		t.Fatalf("Request on a closed store = %v, want ErrClosed", err)
	}
}
