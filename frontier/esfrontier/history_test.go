package esfrontier_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/frontier/esfrontier"
	"github.com/crawlspace/crawlspace/internal/esclient"
	"github.com/crawlspace/crawlspace/internal/estest"
)

func openHistory(t *testing.T, history int) *esfrontier.Store {
	t.Helper()
	es, err := esclient.New(esclient.Config{Addresses: []string{estest.URL(t)}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := esfrontier.Open(context.Background(), esfrontier.Options{Client: es, Prefix: estest.Index(t), Node: "a",
		Partitions: 4, History: history, Policy: func(string) frontier.HostPolicy { return frontier.HostPolicy{MaxParallel: 1} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fetchOne leases u and stores o as its outcome.
func fetchOne(t *testing.T, s *esfrontier.Store, u string, o frontier.Outcome) {
	t.Helper()
	l, err := s.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Item().URL; got != u {
		t.Fatalf("leased %s, want %s", got, u)
	}
	l.Fetched(1234, 5*time.Millisecond)
	done := make(chan error, 1)
	if err := l.CompleteAsync(o, func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func kinds(evs []frontier.Event) string {
	out := ""
	for _, e := range evs {
		out += e.Kind.String() + ":" + e.Reason + " "
	}
	return out
}

func TestHistoryRecordsQueueFetchWriteAndAcknowledgementInOrder(t *testing.T) {
	t.Parallel()
	s := openHistory(t, frontier.DefaultHistory)
	if _, err := s.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	u := "http://a.test/"
	if _, err := s.Add(frontier.Item{URL: u, Source: "s", Class: frontier.Start, Via: "config"}); err != nil {
		t.Fatal(err)
	}
	fetchOne(t, s, u, frontier.Outcome{State: frontier.Fetched, Status: 200, Hash: "h", Pending: frontier.PendingIndex, DocID: u,
		History: []frontier.Event{{Kind: frontier.EventWriteSent, Reason: "index"}},
		Found:   &frontier.Found{Refused: []frontier.Refused{{Reason: "outside", Items: []frontier.Item{{URL: "http://b.test/", Source: "s", Via: u}}}}}})
	errs, err := s.Acknowledge([]frontier.Ack{{URL: u, Event: frontier.Event{Kind: frontier.EventWriteDone, Reason: "created"}}})
	if err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	evs, err := s.History(u)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(evs), "queued: fetched: write_sent:index write_done:created "; got != want {
		t.Fatalf("history %q, want %q", got, want)
	}
	if e := evs[0]; e.Via != "config" || e.Class != frontier.Start || e.Source != "s" {
		t.Errorf("queued event %+v lost the item's via, class or source", e)
	}
	if e := evs[1]; e.Status != 200 || e.Bytes != 1234 || e.Took != 5*time.Millisecond {
		t.Errorf("fetched event %+v, want status 200, 1234 bytes, 5ms", e)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].At.Before(evs[i-1].At) {
			t.Errorf("event %d at %v is before event %d at %v", i, evs[i].At, i-1, evs[i-1].At)
		}
	}
	refused, err := s.History("http://b.test/")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(refused), "refused:outside "; got != want {
		t.Fatalf("history of a refused URL %q, want %q", got, want)
	}
	if evs, err := s.History("http://unknown.test/"); err != nil || len(evs) != 0 {
		t.Fatalf("history of an unknown URL: %v, %v; want none", evs, err)
	}
}

// Both ways a history grows are bounded: the outcome's script in the
// scheduler's write, and the changes that read and write the whole record.
func TestHistoryKeepsOnlyTheNewestEventsOfAURL(t *testing.T) {
	t.Parallel()
	s := openHistory(t, 3)
	if _, err := s.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	u := "http://a.test/"
	if _, err := s.Add(frontier.Item{URL: u, Source: "s", Class: frontier.Start}); err != nil {
		t.Fatal(err)
	}
	var sent []frontier.Event
	for i := range 3 {
		sent = append(sent, frontier.Event{Kind: frontier.EventWriteSent, Reason: fmt.Sprint("w", i)})
	}
	fetchOne(t, s, u, frontier.Outcome{State: frontier.Fetched, Status: 200, Hash: "h", Pending: frontier.PendingIndex, DocID: u, History: sent})
	evs, err := s.History(u)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(evs), "write_sent:w0 write_sent:w1 write_sent:w2 "; got != want {
		t.Fatalf("history after an outcome of 4 events %q, want the newest 3 %q", got, want)
	}
	for i := range 2 {
		errs, err := s.Acknowledge([]frontier.Ack{{URL: u, Event: frontier.Event{Kind: frontier.EventWriteDone, Reason: fmt.Sprint("a", i)}}})
		if err != nil || errs[0] != nil {
			t.Fatal(err, errs)
		}
	}
	evs, err = s.History(u)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(evs), "write_sent:w2 write_done:a0 write_done:a1 "; got != want {
		t.Fatalf("history after two acknowledgements %q, want %q", got, want)
	}
}

func TestHistoryIsNotKeptWhenTheLengthIsZero(t *testing.T) {
	t.Parallel()
	s := openHistory(t, 0)
	if _, err := s.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	u := "http://a.test/"
	if _, err := s.Add(frontier.Item{URL: u, Source: "s", Class: frontier.Start}); err != nil {
		t.Fatal(err)
	}
	fetchOne(t, s, u, frontier.Outcome{State: frontier.Fetched, Status: 200, Hash: "h"})
	if evs, err := s.History(u); err != nil || len(evs) != 0 {
		t.Fatalf("history %v (%v), want none", evs, err)
	}
}

func TestHistoryRecordsASweepsRequeueAfterTheFetch(t *testing.T) {
	t.Parallel()
	s := openHistory(t, frontier.DefaultHistory)
	if _, err := s.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	u := "http://a.test/"
	if _, err := s.Add(frontier.Item{URL: u, Source: "s", Class: frontier.Start}); err != nil {
		t.Fatal(err)
	}
	fetchOne(t, s, u, frontier.Outcome{State: frontier.Error, Status: 404, Reason: "not_found"})
	if n, err := s.RequeueErrors("s"); err != nil || n != 1 {
		t.Fatalf("RequeueErrors requeued %d (%v), want 1", n, err)
	}
	evs, err := s.History(u)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(evs), "queued: error:not_found requeued:requeued "; got != want {
		t.Fatalf("history %q, want %q", got, want)
	}
}
