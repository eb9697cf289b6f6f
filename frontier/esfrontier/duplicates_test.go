package esfrontier_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/frontier/esfrontier"
	"github.com/crawlspace/crawlspace/internal/estest"
)

// completeAll leases everything s holds and completes each with the
// outcome outcome gives; check runs once the outcome is stored. It returns
// the URLs it leased.
func completeAll(s *esfrontier.Store, outcome func(url string) frontier.Outcome, check func(url string, o frontier.Outcome) error) ([]string, error) {
	var got []string
	for {
		l, err := s.Next(context.Background())
		if errors.Is(err, frontier.ErrDone) {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		u := l.Item().URL
		got = append(got, u)
		o := outcome(u)
		done := make(chan error, 1)
		if err := l.CompleteAsync(o, func(err error) {
			if err == nil {
				err = check(u, o)
			}
			done <- err
		}); err != nil {
			return got, err
		}
		if err := <-done; err != nil {
			return got, err
		}
	}
}

func members(t *testing.T, s *esfrontier.Store, content string) map[string]int {
	t.Helper()
	ms, err := s.SameContent("s", content)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, m := range ms {
		out[m.URL] = m.Claim
	}
	if !slices.IsSortedFunc(ms, func(a, b frontier.Member) int { return strings.Compare(a.URL, b.URL) }) {
		t.Errorf("members %v not in URL order", ms)
	}
	return out
}

// Two processes holding different hosts complete pages of the same
// content at once: each outcome, once stored, is in the group at once (no
// refresh), and the group ends with every page and its claim.
func TestAGroupOfDuplicatesSpansHostsOfTwoProcessesAndShowsEachOutcomeOnceStored(t *testing.T) {
	t.Parallel()
	prefix := estest.Index(t)
	a := open(t, prefix, "a", 3*time.Second)
	proxy := estest.Proxy(t)
	b := openVia(t, proxy.URL, prefix, "b", 3*time.Second)
	waitFor(t, proxy, func() bool {
		v := b.Cluster()
		return count(v.Holders, "a") == 4 && count(v.Holders, "b") == 4
	})
	a.BeginCycle()
	b.BeginCycle()
	var items []frontier.Item
	claim := map[string]int{}
	for i := range 24 {
		u := fmt.Sprintf("http://h%d.test/page-%d", i%12, i)
		items = append(items, item(u))
		claim[u] = i + 1 // each member's own claim, to see it kept
	}
	if _, err := a.Add(items...); err != nil {
		t.Fatal(err)
	}
	outcome := func(u string) frontier.Outcome {
		return frontier.Outcome{State: frontier.Fetched, Status: 200, Hash: "h", Content: "same", Claim: claim[u]}
	}
	var (
		wg     sync.WaitGroup
		leased [2][]string
		errs   [2]error
	)
	for i, s := range []*esfrontier.Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			leased[i], errs[i] = completeAll(s, outcome, func(u string, o frontier.Outcome) error {
				ms, err := s.SameContent("s", "same")
				if err != nil {
					return err
				}
				if !slices.Contains(ms, frontier.Member{URL: u, Claim: o.Claim}) {
					return fmt.Errorf("%s: its outcome is stored but its group %v does not list it with claim %d", u, ms, o.Claim)
				}
				return nil
			})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("process %d: %v", i, err)
		}
	}
	if len(leased[0]) == 0 || len(leased[1]) == 0 {
		t.Fatalf("a leased %d pages and b %d: the test needs both to complete some", len(leased[0]), len(leased[1]))
	}
	for _, s := range []*esfrontier.Store{a, b} {
		if got := members(t, s, "same"); !maps.Equal(got, claim) {
			t.Errorf("%s reads the group as %v, want every page with its claim %v", s.Node(), got, claim)
		}
	}
}

// An outcome regroups its URL: other content moves it, an error or a
// page with no content takes it out, a temporary failure leaves it;
// a member excluded by a reapplied config stays listed but is no member.
func TestAnOutcomeMovesItsURLBetweenGroupsAndLeavingMembersAreNotListed(t *testing.T) {
	t.Parallel()
	s := open(t, estest.Index(t), "a", 6*time.Second)
	s.BeginCycle()
	urls := []string{"http://a.test/1", "http://a.test/2", "http://d.test/3", "http://b.test/4", "http://c.test/5"}
	for _, u := range urls {
		s.Add(item(u))
	}
	fetched := func(content string, claim int) func(string) frontier.Outcome {
		return func(string) frontier.Outcome {
			return frontier.Outcome{State: frontier.Fetched, Status: 200, Hash: "h", Content: content, Claim: claim}
		}
	}
	none := func(string, frontier.Outcome) error { return nil }
	if _, err := completeAll(s, fetched("x", 7), none); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, u := range urls {
		want[u] = 7
	}
	if got := members(t, s, "x"); !maps.Equal(got, want) {
		t.Fatalf("group x is %v, want %v", got, want)
	}
	if c, n, err := s.ContentOf(urls[0]); c != "x" || n != 7 || err != nil {
		t.Errorf("ContentOf(%s) = %q, %d, %v; want x, 7", urls[0], c, n, err)
	}

	// Each URL again, with its own next outcome.
	next := map[string]frontier.Outcome{
		urls[0]: {State: frontier.Fetched, Status: 200, Hash: "h2", Content: "y", Claim: 3},
		urls[1]: {State: frontier.Error, Status: 500, Reason: "http_500"},
		urls[2]: {State: frontier.Waiting, Status: 503, Reason: "http_503", Backoff: time.Now().Add(time.Hour)}, // its host alone waits
		urls[3]: {State: frontier.Fetched, Status: 200, Hash: "h3"},                                             // indexed no more: no content
		urls[4]: {State: frontier.Fetched, Status: 304, Hash: "h", Content: "x", Claim: 9},
	}
	if err := s.Refetch(urls); err != nil {
		t.Fatal(err)
	}
	leased := map[string]bool{}
	for len(leased) < len(urls) {
		l, err := s.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		u := l.Item().URL
		if leased[u] {
			t.Fatalf("%s leased twice", u)
		}
		leased[u] = true
		if c, n, err := s.ContentOf(u); c != "x" || n != 7 || err != nil {
			t.Errorf("ContentOf(%s) while leased = %q, %d, %v; want x, 7", u, c, n, err)
		}
		done := make(chan error, 1)
		if err := l.CompleteAsync(next[u], func(err error) { done <- err }); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// The temporary failure stays in x, with its claim; the 304 keeps
	// its place with a new claim.
	if got, want := members(t, s, "x"), map[string]int{urls[2]: 7, urls[4]: 9}; !maps.Equal(got, want) {
		t.Errorf("group x after the changes is %v, want %v", got, want)
	}
	if got, want := members(t, s, "y"), map[string]int{urls[0]: 3}; !maps.Equal(got, want) {
		t.Errorf("group y is %v, want %v", got, want)
	}
	for u, wantC := range map[string]string{urls[0]: "y", urls[1]: "", urls[3]: "", urls[4]: "x"} {
		if c, _, err := s.ContentOf(u); c != wantC || err != nil {
			t.Errorf("ContentOf(%s) = %q (%v), want %q", u, c, err, wantC)
		}
	}

	// A reapplied config excludes a member without an outcome: its group
	// still lists it, and leaves it out.
	if _, _, err := s.Reapply([]frontier.Verdict{{URL: urls[4], Allowed: false, Reason: "excluded_by_rule"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := members(t, s, "x"), map[string]int{urls[2]: 7}; !maps.Equal(got, want) {
		t.Errorf("group x after its member was excluded is %v, want %v", got, want)
	}
}

// A Reclaim changes a member's claim, with its write recorded pending,
// only where the store still holds what the crawler read, as the embedded
// store's does.
func TestAReclaimChangesAClaimOnlyWhereTheGroupIsAsRead(t *testing.T) {
	t.Parallel()
	s := openHistory(t, frontier.DefaultHistory)
	if _, err := s.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	a, b, c := "http://a.test/a", "http://a.test/bb", "http://b.test/ccc"
	for _, u := range []string{a, b, c} {
		if _, err := s.Add(item(u)); err != nil {
			t.Fatal(err)
		}
	}
	claims := map[string]int{a: 5, b: 3, c: 4}
	if _, err := completeAll(s, func(u string) frontier.Outcome {
		return frontier.Outcome{State: frontier.Fetched, Status: 200, Hash: "h", Content: "h", Claim: claims[u],
			Pending: frontier.PendingIndex, DocID: u}
	}, func(string, frontier.Outcome) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// a's and b's documents landed; c's is still on its way.
	if _, err := s.Acknowledge([]frontier.Ack{{URL: a}, {URL: b}}); err != nil {
		t.Fatal(err)
	}
	rs := []frontier.Reclaim{
		{URL: a, Content: "h", From: 5, To: 9, Hash: "h9", Pending: frontier.PendingIndex, DocID: a, Detail: "duplicates listed: 2"},
		{URL: b, Content: "h", From: 2, To: 0, Hash: "h", Pending: frontier.PendingDelete, DocID: b},
		{URL: c, Content: "h", From: 4, To: 0, Hash: "h", Pending: frontier.PendingDelete, DocID: c},
		{URL: "http://a.test/unknown", Content: "h", From: 1, To: 0, Pending: frontier.PendingDelete},
	}
	errs, err := s.Reclaim(rs)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []error{nil, frontier.ErrStale, frontier.ErrUnsettled, frontier.ErrNotFound} {
		if !errors.Is(errs[i], want) {
			t.Errorf("Reclaim of %s (%d → %d) = %v, want %v", rs[i].URL, rs[i].From, rs[i].To, errs[i], want)
		}
	}
	if got, want := members(t, s, "h"), map[string]int{a: 9, b: 3, c: 4}; !maps.Equal(got, want) {
		t.Errorf("group after the reclaims = %v, want %v", got, want)
	}
	rec, ok, err := s.Get(a)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if rec.Hash != "h9" || rec.Pending != frontier.PendingIndex || rec.DocID != a || !rec.Indexed {
		t.Errorf("a's record after its reclaim: hash %q, pending %q, doc %q, indexed %v", rec.Hash, rec.Pending, rec.DocID, rec.Indexed)
	}
	events, err := s.History(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 {
		t.Fatal("a has no history")
	}
	if e := events[len(events)-1]; e.Kind != frontier.EventWriteSent || e.Reason != frontier.PendingIndex || e.Detail != "duplicates listed: 2" {
		t.Errorf("a's last event is %+v, want the write sent", e)
	}

	// A URL this process has leased is its lease's.
	if _, err := s.Acknowledge([]frontier.Ack{{URL: a}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Refetch([]string{a}); err != nil {
		t.Fatal(err)
	}
	l, err := s.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if l.Item().URL != a {
		t.Fatalf("leased %s, want %s", l.Item().URL, a)
	}
	errs, err = s.Reclaim([]frontier.Reclaim{{URL: a, Content: "h", From: 9, To: 11, Hash: "h11", Pending: frontier.PendingIndex, DocID: a}})
	if err != nil || !errors.Is(errs[0], frontier.ErrLeased) {
		t.Errorf("Reclaim of a leased URL = %v, %v; want %v", errs, err, frontier.ErrLeased)
	}
	l.Release()
}
