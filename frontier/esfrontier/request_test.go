package esfrontier_test

import (
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/frontier/esfrontier"
	"github.com/crawlspace/crawlspace/internal/estest"
)

// A request outside the queue (a sitemap's) keeps the politeness of its
// host's pages in the shared store: it waits the host's delay after a
// lease of the host completes, and the next lease waits the delay after
// the request's done. The delay is real and small: the scheduler's timers
// are.
func TestRequestKeepsTheHostsDelayBetweenItsLeases(t *testing.T) {
	t.Parallel()
	const delay = 100 * time.Millisecond
	const host = "http://a.test"
	s := openWith(t, estest.URL(t), esfrontier.Options{Prefix: estest.Index(t), Node: "a", Partitions: 8, LeaseTTL: 6 * time.Second,
		Policy: func(string) frontier.HostPolicy { return frontier.HostPolicy{MaxParallel: 1, Delay: delay} }})
	s.BeginCycle()
	if _, err := s.Add(item(host+"/1"), item(host+"/2")); err != nil {
		t.Fatal(err)
	}
	ctx := untilDeadline(t)
	l, err := s.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	completed := make(chan error, 1)
	completing := time.Now()
	l.CompleteAsync(frontier.Outcome{State: frontier.Fetched, Status: 200}, func(err error) { completed <- err })
	if err := <-completed; err != nil {
		t.Fatal(err)
	}

	free, err := s.Request(ctx, host)

	if err != nil {
		t.Fatal(err)
	}
	if gap := time.Since(completing); gap < delay {
		t.Errorf("the request came %v after the lease before it completed; the host's delay is %v", gap, delay)
	}
	freeing := time.Now()
	free()
	if _, err := s.Next(ctx); err != nil {
		t.Fatal(err)
	}
	if gap := time.Since(freeing); gap < delay {
		t.Errorf("the lease came %v after the request before it was done; the host's delay is %v", gap, delay)
	}
}
