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

// A delete held back is recorded with its outcome, kept across a reopen,
// listed by Held and not by Pending (nothing was sent), and moved by
// MoveHeld, with its event, to held or to a delete to send.
func TestAHeldDeleteIsKeptListedByHeldAndMovedByMoveHeld(t *testing.T) {
	dir := t.TempDir()
	f := openTest(t, dir, Options{Policy: policy(4, 0), History: DefaultHistory})
	held, other, indexed := "http://a.test/held", "http://b.test/held", "http://a.test/indexed"
	mustAdd(t, f, Item{URL: held, Source: "s"}, Item{URL: other, Source: "t"}, Item{URL: indexed, Source: "s"})
	for range 3 {
		l := mustLease(t, f)
		o := Outcome{State: Error, Reason: "http_404", Status: 404, Pending: PendingHold, DocID: "id"}
		if l.Item().URL == indexed {
			o = Outcome{State: Fetched, Status: 200, Hash: "h", Pending: PendingIndex, DocID: "id"}
		}
		mustComplete(t, l, o)
	}
	f.Close()
	f = openTest(t, dir, Options{Policy: policy(4, 0), History: DefaultHistory})

	if recs, err := f.Pending(); err != nil || len(recs) != 1 || recs[0].URL != indexed {
		t.Errorf("Pending = %v, %v; want the index write alone", recs, err)
	}
	all, err := f.Held("")
	if err != nil || len(all) != 2 {
		t.Errorf("Held(\"\") = %v, %v; want both held deletes", all, err)
	}
	if recs, err := f.Held("s"); err != nil || len(recs) != 1 || recs[0].URL != held || recs[0].Pending != PendingHold {
		t.Errorf("Held(s) = %v, %v; want %s, held until its cycle's end", recs, err, held)
	}

	ev := Event{Kind: EventDeleteHeld, Reason: PendingHeld, Detail: "too many"}
	moved, err := f.MoveHeld([]string{held, indexed, "http://a.test/unknown"}, PendingHeld, ev)
	if err != nil || len(moved) != 1 || moved[0].URL != held || moved[0].Pending != PendingHeld {
		t.Errorf("MoveHeld to held = %v, %v; want %s alone", moved, err, held)
	}
	if moved, err := f.MoveHeld([]string{held}, PendingHeld, ev); err != nil || len(moved) != 0 {
		t.Errorf("MoveHeld of a delete held already = %v, %v; want nothing moved", moved, err)
	}
	if evs, _ := f.History(held); evs[len(evs)-1].Kind != EventDeleteHeld || evs[len(evs)-1].Detail != "too many" {
		t.Errorf("history of the held delete ends with %+v", evs[len(evs)-1])
	}
	moved, err = f.MoveHeld([]string{held, other}, PendingDelete, Event{Kind: EventWriteSent, Reason: PendingDelete})
	if err != nil || len(moved) != 2 {
		t.Errorf("MoveHeld to delete = %v, %v; want both", moved, err)
	}
	if recs, err := f.Held(""); err != nil || len(recs) != 0 {
		t.Errorf("Held after the deletes were released = %v, %v; want none", recs, err)
	}
	if recs, err := f.Pending(); err != nil || len(recs) != 3 {
		t.Errorf("Pending after the deletes were released = %v, %v; want them and the index write", recs, err)
	}
	if _, err := f.MoveHeld([]string{held}, PendingIndex, ev); err == nil {
		t.Error("MoveHeld to an index write: no error")
	}
}
