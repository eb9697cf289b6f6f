package esfrontier_test

import (
	"cmp"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/estest"
)

// As the embedded store: a URL's spelling as found is kept only where it
// differs from its key, through the URL's fetch, and renewed when a start
// URL is queued again; a record without one (as every record was before
// it was kept) reads as found as keyed.
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
	if got := drain(t, s, func(string) []frontier.Item { return nil }); len(got) != 2 {
		t.Fatalf("leased %q", got)
	}
	if r, _, err := s.Get(a.URL); err != nil || r.FoundAs != a.FoundAs {
		t.Errorf("once fetched, found as %q (%v), want %q", r.FoundAs, err, a.FoundAs)
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
