package frontier

import (
	"context"
	"strings"
	"testing"
)

func TestRequeueIndexedForgetsHashesAndQueuesOnlyIndexedURLs(t *testing.T) {
	f := openTest(t, t.TempDir(), Options{})
	mustAdd(t, f, Item{URL: "http://a.test/doc", Source: "s", Class: IndexFollow},
		Item{URL: "http://a.test/nodoc", Source: "s", Class: FollowOnly})
	for range 2 {
		l, err := f.next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Complete(Outcome{State: Fetched, Hash: "h", ETag: `"e"`}); err != nil {
			t.Fatal(err)
		}
		if u := l.Item().URL; u == "http://a.test/doc" {
			if err := f.Update(u, func(r *Record) error { r.Indexed = true; return nil }); err != nil {
				t.Fatal(err)
			}
		}
	}
	n, err := f.RequeueIndexed()
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("requeued %d, want the one indexed URL", n)
	}
	r := mustGet(t, f, "http://a.test/doc")
	if r.State != Waiting || r.Class != Refresh || r.Indexed || r.Hash != "" || r.ETag != "" {
		t.Errorf("indexed URL after RequeueIndexed: %+v", r)
	}
	if r := mustGet(t, f, "http://a.test/nodoc"); r.State != Fetched || r.Hash != "h" {
		t.Errorf("URL without a document changed: %+v", r)
	}
}

func TestReapplyExcludesWhatLeftTheSpaceAndRequeuesWhatEnteredIt(t *testing.T) {
	f := openTest(t, t.TempDir(), Options{})
	mustAdd(t, f, Item{URL: "http://a.test/keep", Source: "s", Class: IndexFollow},
		Item{URL: "http://a.test/private/doc", Source: "s", Class: IndexFollow},
		Item{URL: "http://a.test/private/queued", Source: "s", Class: IndexFollow})
	for range 2 {
		l, err := f.next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Complete(Outcome{State: Fetched, Hash: "h"}); err != nil {
			t.Fatal(err)
		}
		if err := f.Update(l.Item().URL, func(r *Record) error { r.Indexed, r.DocID = true, "id"; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.Exclude("excluded", Item{URL: "http://a.test/archive/", Source: "s", Depth: 1, Class: IndexFollow}); err != nil {
		t.Fatal(err)
	}
	// The new config excludes /private/ and no longer excludes /archive/.
	dropped, requeued, err := f.reapply(func(r Record) Verdict {
		if strings.Contains(r.URL, "/private/") {
			return Verdict{Reason: "excluded"}
		}
		return Verdict{Allowed: true}
	})
	if err != nil {
		t.Fatal(err)
	}
	if dropped != 2 || requeued != 1 {
		t.Fatalf("dropped %d, requeued %d; want 2 and 1", dropped, requeued)
	}
	var fetched string
	for _, u := range []string{"http://a.test/keep", "http://a.test/private/doc"} {
		if r := mustGet(t, f, u); r.State == Fetched {
			fetched = u
		}
	}
	if fetched == "" {
		t.Fatal("no URL kept its Fetched state")
	}
	for _, u := range []string{"http://a.test/private/doc", "http://a.test/private/queued"} {
		r := mustGet(t, f, u)
		if r.State != Excluded || r.Reason != "excluded" {
			t.Errorf("%s: %s %q, want excluded", u, r.State, r.Reason)
		}
		if want := map[bool]string{true: "delete", false: ""}[r.Indexed]; r.Pending != want {
			t.Errorf("%s: pending %q with indexed %v", u, r.Pending, r.Indexed)
		}
	}
	if r := mustGet(t, f, "http://a.test/archive/"); r.State != Waiting {
		t.Errorf("newly allowed URL is %s, want waiting", r.State)
	}
	var pending int
	if err := f.pendingEach(func(Record) error { pending++; return nil }); err != nil {
		t.Fatal(err)
	}
	if pending != 1 {
		t.Errorf("%d pending writes, want the one delete", pending)
	}
}
