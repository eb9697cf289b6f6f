package esfrontier_test

import (
	"cmp"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/estest"
)

// As the embedded store: a URL's spelling as found is kept only where it
// differs from its key, handed out with the lease, and renewed when a
// start URL is queued again; a record without one (as every record was
// before it was kept) reads as found as keyed.
func TestTheURLAsFoundIsStoredLeasedAndRenewedWithAStartURL(t *testing.T) {
	t.Parallel()
	s := open(t, estest.Index(t), "a", 6*time.Second)
	if _, err := s.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	a := frontier.Item{URL: "http://a.test/list?a=1&b=2", Source: "s", Class: frontier.Start}
	a.SetFoundAs("http://a.test/list?b=2&a=1")
	plain := item("http://a.test/plain")
	if _, err := s.Add(a, plain); err != nil {
		t.Fatal(err)
	}
	for u, want := range map[string]string{a.URL: a.FoundAs, plain.URL: ""} {
		if r, ok, err := s.Get(u); err != nil || !ok || r.FoundAs != want || r.AsFound() != cmp.Or(want, u) {
			t.Errorf("Get(%s) = as found %q, %v, %v; want %q", u, r.FoundAs, ok, err, want)
		}
	}
	leased := map[string]string{}
	for {
		l, err := s.Next(context.Background())
		if errors.Is(err, frontier.ErrDone) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		leased[l.Item().URL] = l.Item().FoundAs
		done := make(chan error, 1)
		if err := l.CompleteAsync(frontier.Outcome{State: frontier.Fetched, Status: 200}, func(err error) { done <- err }); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if len(leased) != 2 || leased[a.URL] != a.FoundAs || leased[plain.URL] != "" {
		t.Errorf("leased %q", leased)
	}
	if _, err := s.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	a.SetFoundAs(a.URL)
	if _, err := s.Add(a); err != nil {
		t.Fatal(err)
	}
	if r, _, err := s.Get(a.URL); err != nil || r.FoundAs != "" {
		t.Errorf("a start URL now written as keyed is still found as %q (%v)", r.FoundAs, err)
	}
}
