package esfrontier_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/frontier/esfrontier"
	"github.com/crawlspace/crawlspace/internal/esclient"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/faultproxy"
)

func open(t *testing.T, prefix, node string, ttl time.Duration) *esfrontier.Store {
	t.Helper()
	es, err := esclient.New(esclient.Config{Addresses: []string{estest.URL(t)}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := esfrontier.Open(context.Background(), esfrontier.Options{Client: es, Prefix: prefix, Node: node,
		Partitions: 8, LeaseTTL: ttl, Policy: func(string) frontier.HostPolicy { return frontier.HostPolicy{MaxParallel: 1} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func item(u string) frontier.Item {
	return frontier.Item{URL: u, Source: "s", Class: frontier.IndexFollow}
}

// drain leases and completes everything, each page linking to found(url),
// and returns the URLs in the order they were leased.
func drain(t *testing.T, s *esfrontier.Store, found func(string) []frontier.Item) []string {
	t.Helper()
	var got []string
	for {
		l, err := s.Next(context.Background())
		if errors.Is(err, frontier.ErrDone) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		u := l.Item().URL
		got = append(got, u)
		done := make(chan error, 1)
		o := frontier.Outcome{State: frontier.Fetched, Status: 200, Hash: "h-" + u, Pending: frontier.PendingIndex, DocID: u}
		if f := found(u); f != nil {
			o.Found = &frontier.Found{Links: f}
		}
		if err := l.CompleteAsync(o, func(err error) { done <- err }); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestQueuedURLsAreLeasedOnceCompletedAndTheCrawlEnds(t *testing.T) {
	t.Parallel()
	s := open(t, estest.Index(t), "a", 6*time.Second)
	if _, err := s.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	n, err := s.Add(item("http://a.test/"), item("http://b.test/"))
	if err != nil || n != 2 {
		t.Fatalf("Add queued %d (%v), want 2", n, err)
	}
	if n, err := s.Add(item("http://a.test/")); err != nil || n != 0 {
		t.Fatalf("Add of a known URL queued %d (%v), want 0", n, err)
	}
	links := map[string][]frontier.Item{
		"http://a.test/": {item("http://a.test/1"), item("http://a.test/2"), item("http://b.test/1"), item("http://a.test/")},
		"http://b.test/": {item("http://b.test/1"), item("http://a.test/2")},
	}
	got := drain(t, s, func(u string) []frontier.Item { return links[u] })
	slices.Sort(got)
	want := []string{"http://a.test/", "http://a.test/1", "http://a.test/2", "http://b.test/", "http://b.test/1"}
	if !slices.Equal(got, want) {
		t.Errorf("leased %v, want each of %v once", got, want)
	}
	for _, u := range want {
		r, ok, err := s.Get(u)
		if err != nil || !ok || r.State != frontier.Fetched || r.Hash != "h-"+u || r.Pending != frontier.PendingIndex {
			t.Errorf("%s: %+v %v %v, want Fetched with its hash and a pending write", u, r, ok, err)
		}
	}
	pend, err := s.Pending()
	if err != nil || len(pend) != len(want) {
		t.Errorf("Pending listed %d (%v), want %d", len(pend), err, len(want))
	}
	errs, err := s.Acknowledge([]frontier.Ack{{URL: "http://a.test/"}, {URL: "http://nowhere.test/"}})
	if err != nil || errs[0] != nil || !errors.Is(errs[1], frontier.ErrNotFound) {
		t.Errorf("Acknowledge: %v %v, want nil and ErrNotFound", errs, err)
	}
	if r, _, _ := s.Get("http://a.test/"); r.Pending != "" || !r.Indexed {
		t.Errorf("acknowledged record %+v, want indexed with nothing pending", r)
	}
}

func TestAStartURLIsQueuedAgainInALaterCycleAndAPlainLinkIsNot(t *testing.T) {
	t.Parallel()
	s := open(t, estest.Index(t), "a", 6*time.Second)
	s.BeginCycle()
	start := frontier.Item{URL: "http://a.test/", Source: "s", Class: frontier.Start}
	s.Add(start, item("http://a.test/x"))
	drain(t, s, func(string) []frontier.Item { return nil })
	if _, err := s.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	n, err := s.Add(start, item("http://a.test/x"))
	if err != nil || n != 1 {
		t.Fatalf("Add in the next cycle queued %d (%v), want the start URL only", n, err)
	}
	if got := drain(t, s, func(string) []frontier.Item { return nil }); !slices.Equal(got, []string{"http://a.test/"}) {
		t.Errorf("leased %v in the second cycle, want the start URL", got)
	}
}

func TestEachPartitionIsHeldByOneProcessAndALeavingOneHandsItsShareOver(t *testing.T) {
	t.Parallel()
	prefix := estest.Index(t)
	a := open(t, prefix, "a", 3*time.Second)
	proxy := estest.Proxy(t)
	b := openVia(t, proxy.URL, prefix, "b", 3*time.Second)
	// b joined after a took every partition: a hands half over at its
	// next rounds.
	waitFor(t, proxy, func() bool {
		v := b.Cluster()
		return count(v.Holders, "a") == 4 && count(v.Holders, "b") == 4
	})
	a.Close()
	waitFor(t, proxy, func() bool { return count(b.Cluster().Holders, "b") == 8 })
}

func TestTheNextHolderOfADeadProcessesPartitionsFetchesItsInFlightAndUnacknowledgedPagesAgain(t *testing.T) {
	t.Parallel()
	prefix := estest.Index(t)
	a := open(t, prefix, "a", 3*time.Second)
	a.BeginCycle()
	a.Add(item("http://a.test/1"), item("http://a.test/2"), item("http://a.test/3"))
	ctx := context.Background()
	l, err := a.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	written := l.Item().URL
	l.CompleteAsync(frontier.Outcome{State: frontier.Fetched, Status: 200, Hash: "h", Pending: frontier.PendingIndex, DocID: "d"}, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	inflight, err := a.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a.Die()
	b := open(t, prefix, "b", 3*time.Second)
	got := drain(t, b, func(string) []frontier.Item { return nil })
	slices.Sort(got)
	if !slices.Equal(got, []string{"http://a.test/1", "http://a.test/2", "http://a.test/3"}) {
		t.Errorf("the next holder leased %v, want all three: %s unacknowledged, %s in flight at the death, and the third",
			got, written, inflight.Item().URL)
	}
}

// waitFor waits until cond holds, checking it again at each request a
// store opened through p (openVia) sends: what the stores know of their
// cluster changes only with their rounds. No time limit: go test's
// -timeout ends a test that waits for ever.
func waitFor(t *testing.T, p *faultproxy.Proxy, cond func() bool) {
	t.Helper()
	if err := p.Await(context.Background(), func(faultproxy.Stats) bool { return cond() }); err != nil {
		t.Fatal(err)
	}
}

func count(list []string, v string) int {
	n := 0
	for _, x := range list {
		if x == v {
			n++
		}
	}
	return n
}

// Pending is read at a cycle's start, right after the last cycle's
// acknowledgements were stored: the URL index's refresh (every second)
// may not have made them searchable yet, and a write listed as pending
// though acknowledged is sent again (its page fetched and its document
// rewritten: TestCrawlRunsThroughTheElasticsearchStateStore saw one).
func TestPendingListsOnlyWritesStillUnacknowledgedRightAfterTheAcknowledgements(t *testing.T) {
	t.Parallel()
	s := open(t, estest.Index(t), "a", 6*time.Second)
	if _, err := s.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	urls := []string{"http://a.test/", "http://a.test/1", "http://b.test/"}
	for _, u := range urls {
		if _, err := s.Add(item(u)); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, s, func(string) []frontier.Item { return nil })
	var acks []frontier.Ack
	for _, u := range urls[:2] {
		acks = append(acks, frontier.Ack{URL: u})
	}
	if errs, err := s.Acknowledge(acks); err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("Acknowledge: %v %v", errs, err)
	}

	pending, err := s.Pending()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range pending {
		got = append(got, r.URL)
	}
	if want := urls[2:]; !slices.Equal(got, want) {
		t.Errorf("Pending lists %v, want %v: only the write never acknowledged", got, want)
	}
}

func TestAFetchAfterErrorsClearsTheirCountAndReason(t *testing.T) {
	t.Parallel()
	s := openHistory(t, 0)
	if _, err := s.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	u := "http://a.test/"
	if _, err := s.Add(frontier.Item{URL: u, Source: "s", Class: frontier.Start}); err != nil {
		t.Fatal(err)
	}
	fetchOne(t, s, u, frontier.Outcome{State: frontier.Waiting, Status: 503, Reason: "http_503"})
	fetchOne(t, s, u, frontier.Outcome{State: frontier.Fetched, Status: 200, Hash: "h"})
	r, _, err := s.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != frontier.Fetched || r.TempErrCount != 0 || r.Reason != "" || r.Status != 200 {
		t.Errorf("record after a retry then a fetch = %s %d, %d temporary errors, reason %q; want fetched 200, 0, none",
			r.State, r.Status, r.TempErrCount, r.Reason)
	}
}
