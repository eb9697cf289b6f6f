package esfrontier_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/estest"
)

// The operator's requests on the shared store: a paused source's URLs wait
// and the cycle ends without them, then are served once it resumes;
// Recrawl queues a fetched URL again in the class asked, its hash
// forgotten; Remove excludes one and marks its document's delete pending.
func TestPauseRecrawlAndRemoveOnTheSharedStore(t *testing.T) {
	t.Parallel()
	s := open(t, estest.Index(t), "a", 6*time.Second)
	if _, err := s.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	paused := frontier.Item{URL: "http://b.test/", Source: "t", Class: frontier.IndexFollow}
	if _, err := s.Add(item("http://a.test/"), item("http://a.test/1"), paused); err != nil {
		t.Fatal(err)
	}
	if err := s.Pause([]string{"t"}); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, s, func(string) []frontier.Item { return nil }); len(got) != 2 || slices.Contains(got, paused.URL) {
		t.Fatalf("fetched %v while t was paused, want a.test's two URLs", got)
	}
	if err := s.Pause(nil); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, s, func(string) []frontier.Item { return nil }); !slices.Equal(got, []string{paused.URL}) {
		t.Fatalf("fetched %v once t resumed, want %s", got, paused.URL)
	}

	errs, err := s.Recrawl([]string{"http://a.test/", "http://none.test/"}, frontier.Start)
	if err != nil || errs[0] != nil || !errors.Is(errs[1], frontier.ErrNotFound) {
		t.Fatalf("Recrawl = %v, %v", errs, err)
	}
	r, _, err := s.Get("http://a.test/")
	if err != nil || r.State != frontier.Waiting || r.Class != frontier.Start || r.Hash != "" {
		t.Fatalf("recrawled record %+v (%v), want waiting start without a hash", r, err)
	}
	if got := drain(t, s, func(string) []frontier.Item { return nil }); !slices.Equal(got, []string{"http://a.test/"}) {
		t.Fatalf("fetched %v after Recrawl", got)
	}

	recs, errs, err := s.Remove([]string{"http://a.test/1"}, "removed")
	if err != nil || errs[0] != nil {
		t.Fatalf("Remove = %v, %v", errs, err)
	}
	r, _, _ = s.Get("http://a.test/1")
	if r.State != frontier.Excluded || r.Reason != "removed" || r.Pending != frontier.PendingDelete || recs[0].Pending != frontier.PendingDelete {
		t.Errorf("removed record %+v, want excluded, removed, its delete pending", r)
	}
}
