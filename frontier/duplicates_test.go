package frontier

import (
	"errors"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
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

func TestAnUnchangedPageKeepsItsGroupAndANewClaimIsStored(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(8, 0)})
	a, b := "http://a.test/a", "http://a.test/b"
	mustAdd(t, f, Item{URL: a, Source: "s"}, Item{URL: b, Source: "s"})
	for range 2 {
		l := mustLease(t, f)
		o := Outcome{State: Fetched, Status: 200, Hash: "h", Content: "h"}
		if l.Item().URL == a {
			o.Claim = 5
		}
		mustComplete(t, l, o)
	}
	// Other pages, each a group of its own, so that the groups' buckets
	// have pages of their own rather than being inlined in their parent.
	others := urlsOf("b.test", 300)
	mustAdd(t, f, others...)
	for range others {
		l := mustLease(t, f)
		mustComplete(t, l, Outcome{State: Fetched, Status: 200, Hash: l.Item().URL, Content: l.Item().URL})
	}
	recheck := func(claims map[string]int) {
		t.Helper()
		if err := f.Refetch([]string{a, b}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			l := mustLease(t, f)
			mustComplete(t, l, Outcome{State: Fetched, Status: 304, Hash: "h", Content: "h", Claim: claims[l.Item().URL]})
		}
	}
	// The groups' bucket is copied on write: a bucket whose root page
	// stays where it was was not written.
	roots := func() uint64 {
		t.Helper()
		var r uint64
		if err := f.db.View(func(tx *bolt.Tx) error {
			r = uint64(tx.Bucket(bucketGroups).Root())
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return r
	}
	// A 304 gives the page's group and claim as they were: nothing moves,
	// and nothing of the groups is written.
	before := roots()
	recheck(map[string]int{a: 5})
	if got, want := mustGroup(t, f, "s", "h"), []Member{{a, 5}, {b, 0}}; !slices.Equal(got, want) {
		t.Errorf("group after unchanged pages = %v, want %v", got, want)
	}
	if after := roots(); after != before {
		t.Errorf("unchanged pages rewrote the groups' bucket (root page %v, then %v)", before, after)
	}
	// The same group with another claim is a change, and is stored. (Its
	// root page proves nothing here: two commits that each rewrite the
	// bucket may give it back the page the first one freed.)
	recheck(map[string]int{a: 0, b: 9})
	if got, want := mustGroup(t, f, "s", "h"), []Member{{a, 0}, {b, 9}}; !slices.Equal(got, want) {
		t.Errorf("group after new claims = %v, want %v", got, want)
	}
	if content, claim, err := f.ContentOf(b); err != nil || content != "h" || claim != 9 {
		t.Errorf("ContentOf(b) = %q %d %v, want h 9", content, claim, err)
	}
}

func mustGroup(t *testing.T, f *Frontier, source, content string) []Member {
	t.Helper()
	m, err := f.SameContent(source, content)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// GroupOf reads for a 304 what ContentOf and then SameContent read, the
// URL listed as its outcome will leave it (Fetched) even while its record
// says otherwise.
func TestGroupOfIsContentOfAndTheGroupWithTheURLItself(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(8, 0)})
	a, b, c, d := "http://a.test/a", "http://a.test/b", "http://a.test/c", "http://a.test/d"
	mustAdd(t, f, Item{URL: a, Source: "s"}, Item{URL: b, Source: "s"}, Item{URL: c, Source: "s"}, Item{URL: d, Source: "s"})
	for range 4 {
		l := mustLease(t, f)
		o := Outcome{State: Fetched, Status: 200, Hash: "h", Content: "h"}
		switch l.Item().URL {
		case a:
			o.Claim = 7
		case d:
			o.Content = "" // in no group
		}
		mustComplete(t, l, o)
	}
	// c leaves the crawl without an outcome: SameContent leaves it out.
	if _, _, err := f.Reapply([]Verdict{{URL: c, Allowed: false, Reason: "excluded"}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url, content string
		claim        int
		members      []Member
	}{
		{a, "h", 7, []Member{{a, 7}, {b, 0}}},
		{c, "h", 0, []Member{{a, 7}, {b, 0}, {c, 0}}},
		{d, "", 0, nil},
	} {
		content, claim, members, err := groupOf(t, f, tc.url)
		if err != nil || content != tc.content || claim != tc.claim || !slices.Equal(members, tc.members) {
			t.Errorf("GroupOf(%s) = %q %d %v %v, want %q %d %v", tc.url, content, claim, members, err, tc.content, tc.claim, tc.members)
		}
		if wc, wclaim, _ := f.ContentOf(tc.url); wc != content || wclaim != claim {
			t.Errorf("GroupOf(%s) gives %q %d, ContentOf %q %d", tc.url, content, claim, wc, wclaim)
		}
	}
	// The record a lease gives, as the crawler passes it for a 304.
	if n, err := f.RequeueDue("", time.Now().Add(time.Hour)); err != nil || n != 3 {
		t.Fatalf("RequeueDue: %d, %v; want a, b and d", n, err)
	}
	want := map[string][]Member{a: {{a, 7}, {b, 0}}, b: {{a, 7}, {b, 0}}, d: nil}
	for range 3 {
		l := mustLease(t, f)
		u := l.Item().URL
		if _, _, members, err := f.GroupOf(l.Record()); err != nil || !slices.Equal(members, want[u]) {
			t.Errorf("GroupOf(the lease's record of %s): %v %v, want %v", u, members, err, want[u])
		}
	}
}

// groupOf is GroupOf of url's stored record.
func groupOf(t testing.TB, f *Frontier, url string) (string, int, []Member, error) {
	t.Helper()
	rec, ok, err := f.Get(url)
	if err != nil || !ok {
		t.Fatalf("Get(%s): %v %v", url, ok, err)
	}
	return f.GroupOf(rec)
}

// A group larger than what one read lists still gives each URL its own
// claim, read beside the members for those the list leaves out.
func TestGroupOfGivesTheClaimOfAURLPastTheMembersRead(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(8, 0)})
	items := urlsOf("a.test", maxGroupScan+20)
	mustAdd(t, f, items...)
	// Grouped in one transaction as completions would group them: a
	// lease and a commit each would take seconds.
	claims := map[string]int{}
	if err := f.db.Update(func(tx *bolt.Tx) error {
		for i, it := range items {
			claims[it.URL] = i + 1
			if err := groupDirectly(tx, it.URL, &Outcome{State: Fetched, Content: "h", Claim: i + 1}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The URLs past the members read, and a few among them.
	listed := mustGroup(t, f, "s", "h")
	var check []string
	for _, it := range items {
		if !slices.ContainsFunc(listed, func(m Member) bool { return m.URL == it.URL }) {
			check = append(check, it.URL)
		}
	}
	if len(check) != len(items)-maxGroupScan {
		t.Fatalf("%d URLs past the %d members read, want %d", len(check), len(listed), len(items)-maxGroupScan)
	}
	check = append(check, listed[0].URL, listed[maxGroupScan/2].URL, listed[maxGroupScan-1].URL)
	for _, u := range check {
		content, claim, members, err := groupOf(t, f, u)
		if err != nil || content != "h" || claim != claims[u] || len(members) != maxGroupScan {
			t.Errorf("GroupOf(%s) = %q %d, %d members, %v; want h %d, %d members", u, content, claim, len(members), err, claims[u], maxGroupScan)
		}
	}
}

// BenchmarkGroupReadOfAnUnchangedPage is what the crawler reads of a 304's
// group of duplicates in a store of 100,000 pages, each alone in its group:
// ContentOf before the completion and SameContent after it, or GroupOf of
// the record the URL's lease gave.
func BenchmarkGroupReadOfAnUnchangedPage(b *testing.B) {
	f := openTest(b, "", Options{Policy: policy(8, 0)})
	items := urlsOf("a.test", 100_000)
	for i := 0; i < len(items); i += 10_000 {
		mustAdd(b, f, items[i:i+10_000]...)
	}
	if err := f.db.Update(func(tx *bolt.Tx) error {
		for _, it := range items {
			if err := groupDirectly(tx, it.URL, &Outcome{State: Fetched, Content: it.URL, Claim: 1}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	b.Run("ContentOf+SameContent", func(b *testing.B) {
		i := 0
		for b.Loop() {
			u := items[(i*7919)%len(items)].URL
			i++
			content, _, err := f.ContentOf(u)
			if err != nil || content != u {
				b.Fatal(content, err)
			}
			if m, err := f.SameContent("s", content); err != nil || len(m) != 1 {
				b.Fatal(m, err)
			}
		}
	})
	// The crawler has the record from the URL's lease.
	recs := make([]Record, len(items))
	for i := range recs {
		var ok bool
		var err error
		if recs[i], ok, err = f.Get(items[(i*7919)%len(items)].URL); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
	b.Run("GroupOf", func(b *testing.B) {
		i := 0
		for b.Loop() {
			r := recs[i%len(recs)]
			i++
			if content, _, m, err := f.GroupOf(r); err != nil || content != r.URL || len(m) != 1 {
				b.Fatal(content, m, err)
			}
		}
	})
}

// groupDirectly applies o's group to url's record as a completion would,
// without a lease: a lease and a commit for each of thousands of pages
// would take seconds.
func groupDirectly(tx *bolt.Tx, url string, o *Outcome) error {
	w := newWtx(tx)
	key, v, err := w.lookup(url)
	if err != nil {
		return err
	}
	if v == nil {
		return ErrNotFound
	}
	var rec Record
	if err := decodeRecord(v, &rec, true); err != nil {
		return err
	}
	if err := regroup(tx, &rec, o); err != nil {
		return err
	}
	return w.put(key, &rec, rec.Pending != "")
}

// A Reclaim changes a member's claim, and records the write that makes it
// true as an outcome would, only where the store still holds what the
// crawler read: the URL in that group with that claim, not leased, and,
// for an update in place, its document indexed with no write pending.
func TestAReclaimChangesAClaimOnlyWhereTheGroupIsAsRead(t *testing.T) {
	f := openTest(t, "", Options{Policy: policy(8, 0), History: 8})
	a, b, c := "http://a.test/a", "http://a.test/bb", "http://b.test/ccc"
	mustAdd(t, f, Item{URL: a, Source: "s"}, Item{URL: b, Source: "s"}, Item{URL: c, Source: "s"})
	claims := map[string]int{a: 5, b: 3, c: 4}
	for range 3 {
		l := mustLease(t, f)
		u := l.Item().URL
		mustComplete(t, l, Outcome{State: Fetched, Status: 200, Hash: "h", Content: "h", Claim: claims[u],
			Pending: PendingIndex, DocID: u})
	}
	// a's and b's documents landed; c's is still on its way.
	if _, err := f.Acknowledge([]Ack{{URL: a}, {URL: b}}); err != nil {
		t.Fatal(err)
	}
	rs := []Reclaim{
		{URL: a, Content: "h", From: 5, To: 9, Hash: "h9", Pending: PendingIndex, DocID: a, Detail: "duplicates listed: 2"},
		{URL: b, Content: "h", From: 2, To: 0, Hash: "h", Pending: PendingDelete, DocID: b},
		{URL: c, Content: "h", From: 4, To: 0, Hash: "h", Pending: PendingDelete, DocID: c},
		{URL: b, Content: "other", From: 3, To: 0, Hash: "h", Pending: PendingDelete, DocID: b},
		{URL: "http://a.test/unknown", Content: "h", From: 1, To: 0, Pending: PendingDelete},
	}
	errs, err := f.Reclaim(rs)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []error{nil, ErrStale, ErrUnsettled, ErrStale, ErrNotFound} {
		if !errors.Is(errs[i], want) {
			t.Errorf("Reclaim of %s (%d → %d in %s) = %v, want %v", rs[i].URL, rs[i].From, rs[i].To, rs[i].Content, errs[i], want)
		}
	}
	if got, want := mustGroup(t, f, "s", "h"), []Member{{a, 9}, {b, 3}, {c, 4}}; !slices.Equal(got, want) {
		t.Errorf("group after the reclaims = %v, want %v", got, want)
	}
	rec := mustGet(t, f, a)
	if rec.Hash != "h9" || rec.Pending != PendingIndex || rec.DocID != a || !rec.Indexed {
		t.Errorf("a's record after its reclaim: hash %q, pending %q, doc %q, indexed %v", rec.Hash, rec.Pending, rec.DocID, rec.Indexed)
	}
	pending, err := f.Pending()
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 2 {
		t.Errorf("%d writes pending, want a's and c's: %v", len(pending), pending)
	}
	events, err := f.History(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 {
		t.Fatal("a has no history")
	}
	if e := events[len(events)-1]; e.Kind != EventWriteSent || e.Reason != PendingIndex || e.Detail != "duplicates listed: 2" {
		t.Errorf("a's last event is %+v, want the write sent", e)
	}

	// A leased URL is its lease's: its outcome settles its group.
	if _, err := f.Acknowledge([]Ack{{URL: a}}); err != nil {
		t.Fatal(err)
	}
	if err := f.Refetch([]string{a}); err != nil {
		t.Fatal(err)
	}
	l := mustLease(t, f)
	if l.Item().URL != a {
		t.Fatalf("leased %s, want %s", l.Item().URL, a)
	}
	errs, err = f.Reclaim([]Reclaim{{URL: a, Content: "h", From: 9, To: 11, Hash: "h11", Pending: PendingIndex, DocID: a}})
	if err != nil || !errors.Is(errs[0], ErrLeased) {
		t.Errorf("Reclaim of a leased URL = %v, %v; want %v", errs, err, ErrLeased)
	}
	mustComplete(t, l, Outcome{State: Fetched, Status: 304, Hash: "h9", Content: "h", Claim: 9})
	if got, want := mustGroup(t, f, "s", "h"), []Member{{a, 9}, {b, 3}, {c, 4}}; !slices.Equal(got, want) {
		t.Errorf("group after the refused reclaim = %v, want %v", got, want)
	}
}
