package frontier

import (
	"errors"
	"testing"
)

func TestAcknowledgeEndsAWriteOrLeavesARefusedOnePending(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(4, 0), History: DefaultHistory})
	done, refused, gone := "http://a.test/done", "http://a.test/refused", "http://a.test/gone"
	mustAdd(t, f, Item{URL: done, Source: "s"}, Item{URL: refused, Source: "s"}, Item{URL: gone, Source: "s"})
	for range 3 {
		l := mustLease(t, f)
		o := Outcome{State: Fetched, Status: 200, Hash: "h", Pending: PendingIndex, DocID: "id"}
		if l.Item().URL == gone {
			o.Pending = PendingDelete
		}
		mustComplete(t, l, o)
	}
	errs, err := f.Acknowledge([]Ack{
		{URL: done, Event: Event{Kind: EventWriteDone}},
		{URL: refused, Failed: true, Reason: "index_failed", Event: Event{Kind: EventWriteFailed}},
		{URL: gone, Delete: true, Event: Event{Kind: EventWriteDone}},
		{URL: "http://a.test/unknown", Event: Event{Kind: EventWriteDone}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || errs[1] != nil || errs[2] != nil || !errors.Is(errs[3], ErrNotFound) {
		t.Errorf("errs = %v, want the unknown URL's ErrNotFound alone", errs)
	}
	if r := mustGet(t, f, done); r.Pending != "" || !r.Indexed || r.State != Fetched {
		t.Errorf("acknowledged index: %+v", r)
	}
	if r := mustGet(t, f, refused); r.Pending != PendingIndex || r.Hash != "" || r.State != Error || r.Reason != "index_failed" {
		t.Errorf("refused index: %+v", r)
	}
	if r := mustGet(t, f, gone); r.Pending != "" || r.Indexed {
		t.Errorf("acknowledged delete: %+v", r)
	}
	recs, err := f.Pending()
	if err != nil || len(recs) != 1 || recs[0].URL != refused {
		t.Fatalf("Pending = %v, %v; want the refused write alone", recs, err)
	}
	if evs, _ := f.History(refused); evs[len(evs)-1].Kind != EventWriteFailed {
		t.Errorf("history of the refused write ends with %v", evs[len(evs)-1])
	}

	if err := f.Refetch([]string{refused, "http://a.test/unknown"}); err != nil {
		t.Fatal(err)
	}
	if r := mustGet(t, f, refused); r.State != Waiting || r.Class != Refresh || r.Hash != "" {
		t.Errorf("refetched: %+v", r)
	}
}

func TestScanPagesThroughTheRecordsOfTheStatesAsked(t *testing.T) {
	f := openTest(t, "", Options{})
	n := 2*readChunk + 5
	mustAdd(t, f, urlsOf("a.test", n)...)
	if _, err := f.Exclude("test", urlsOf("b.test", 7)...); err != nil {
		t.Fatal(err)
	}
	var (
		q       = Query{States: []State{Excluded}}
		got     int
		pages   int
		lastURL string
	)
	for {
		recs, next, err := f.Scan(q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range recs {
			if r.State != Excluded || r.URL <= lastURL {
				t.Errorf("%s (%s) after %s", r.URL, r.State, lastURL)
			}
			lastURL = r.URL
			got++
		}
		if next == "" {
			break
		}
		q.After = next
	}
	if got != 7 || pages != 3 {
		t.Errorf("scanned %d excluded records in %d pages, want 7 in 3", got, pages)
	}
}
