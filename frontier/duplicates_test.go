package frontier

import (
	"slices"
	"testing"
)

func TestOutcomesRegroupTheirURLAndOnlyFetchedOnesJoinAGroup(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(8, 0)})
	a, b, c, d := "http://a.test/a", "http://a.test/b", "http://b.test/c", "http://a.test/d"
	mustAdd(t, f, Item{URL: a, Source: "s"}, Item{URL: b, Source: "s"}, Item{URL: c, Source: "s"}, Item{URL: d, Source: "t"})
	for range 4 {
		l := mustLease(t, f)
		o := Outcome{State: Fetched, Status: 200, Hash: "h1", Content: "h1"}
		if l.Item().URL == a {
			o.Claim = 3
		}
		mustComplete(t, l, o)
	}
	group := func(source, content string) []Member {
		t.Helper()
		m, err := f.SameContent(source, content)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// The group is the source's: d, in another source, is not in it.
	if got, want := group("s", "h1"), []Member{{a, 3}, {b, 0}, {c, 0}}; !slices.Equal(got, want) {
		t.Fatalf("group = %v, want %v", got, want)
	}
	if content, claim, err := f.ContentOf(a); err != nil || content != "h1" || claim != 3 {
		t.Errorf("ContentOf(a) = %q %d %v", content, claim, err)
	}

	if err := f.Refetch([]string{a, b, c}); err != nil {
		t.Fatal(err)
	}
	// A temporary failure keeps the URL where it was; a change of content
	// moves it; an error takes it out.
	for range 3 {
		l := mustLease(t, f)
		switch l.Item().URL {
		case a:
			mustComplete(t, l, Outcome{State: Waiting, Reason: "timeout"})
		case b:
			mustComplete(t, l, Outcome{State: Fetched, Status: 200, Hash: "h2", Content: "h2", Claim: 1})
		case c:
			mustComplete(t, l, Outcome{State: Error, Reason: "http_404", Status: 404})
		}
	}
	if got, want := group("s", "h1"), []Member{{a, 3}}; !slices.Equal(got, want) {
		t.Errorf("group h1 = %v, want %v", got, want)
	}
	if got, want := group("s", "h2"), []Member{{b, 1}}; !slices.Equal(got, want) {
		t.Errorf("group h2 = %v, want %v", got, want)
	}
	if content, _, _ := f.ContentOf(c); content != "" {
		t.Errorf("c is in group %q after its 404", content)
	}
	// A page fetched without Content (noindex, an alias) leaves its group.
	if err := f.Refetch([]string{b}); err != nil {
		t.Fatal(err)
	}
	for done := false; !done; {
		l := mustLease(t, f)
		done = l.Item().URL == b
		mustComplete(t, l, Outcome{State: Fetched, Status: 200, Hash: "h2"})
	}
	if got := group("s", "h2"); len(got) != 0 {
		t.Errorf("group h2 = %v after its member was fetched without content", got)
	}
}

func TestAMemberExcludedWithoutAnOutcomeIsLeftOutOfItsGroup(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(8, 0)})
	a, b := "http://a.test/a", "http://a.test/b"
	mustAdd(t, f, Item{URL: a, Source: "s"}, Item{URL: b, Source: "s"})
	for range 2 {
		mustComplete(t, mustLease(t, f), Outcome{State: Fetched, Status: 200, Hash: "h", Content: "h"})
	}
	if _, _, err := f.Reapply([]Verdict{{URL: a, Allowed: false, Reason: "excluded"}}); err != nil {
		t.Fatal(err)
	}
	got, err := f.SameContent("s", "h")
	if err != nil || !slices.Equal(got, []Member{{b, 0}}) {
		t.Errorf("group = %v, %v; want b alone", got, err)
	}
}
