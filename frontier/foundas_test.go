package frontier

import (
	"encoding/hex"
	"reflect"
	"testing"
	"time"
)

// oldRecord is a record as the store wrote it before it kept a URL as
// found (appendRecord of that version, for the record oldRecordFields
// builds): a store written then is read now.
const oldRecord = "020203000102c801000083020303008080d0e2c6bfce972f80a087eaafc5ce972f80a087eaafc5ce972f2801140004000101000000687474703a2f2f736974652e6578616d706c652f6c6973743f706167653d3226736f72743d61736373687474703a2f2f736974652e6578616d706c652f226531226864"

func oldRecordFields() Record {
	return Record{Item: Item{URL: "http://site.example/list?page=2&sort=asc", Source: "s", Depth: 2, Class: IndexFollow, Shift: -1,
		Lastmod: time.Unix(1700000000, 0).UTC(), Via: "http://site.example/", Hops: 1},
		State: Fetched, Status: 200, FetchedAt: time.Unix(1700000100, 0).UTC(), CheckedAt: time.Unix(1700000100, 0).UTC(),
		ETag: `"e1"`, Hash: "h", DocID: "d", Indexed: true, Cycle: 3, SeenCycle: 3, HasLinks: true}
}

// A URL found as it is keyed costs nothing: its record is written byte
// for byte as before the URL as found was kept, and a record written then
// reads as found as keyed. One found otherwise keeps how it was found.
func TestARecordKeepsItsURLAsFoundOnlyWhereItDiffersAndOldRecordsStillRead(t *testing.T) {
	old, _ := hex.DecodeString(oldRecord)
	want := oldRecordFields()
	if got := appendRecord(nil, &want); hex.EncodeToString(got) != oldRecord {
		t.Errorf("a record found as keyed is written\n%x\nwhere it was written\n%s", got, oldRecord)
	}
	var r Record
	if err := decodeRecord(old, &r, true); err != nil {
		t.Fatal(err)
	}
	r.stored = walkView{}
	if !reflect.DeepEqual(r, want) || r.AsFound() != want.URL {
		t.Errorf("an old record reads\n%+v\nwant\n%+v", r, want)
	}

	want.SetFoundAs("http://site.example/list?sort=asc&page=2")
	enc := appendRecord(nil, &want)
	if len(enc) != len(old)+1+len(want.FoundAs) {
		t.Errorf("the URL as found costs %d bytes, want its length and one", len(enc)-len(old))
	}
	r = Record{}
	if err := decodeRecord(enc, &r, true); err != nil {
		t.Fatal(err)
	}
	if r.FoundAs != want.FoundAs || r.AsFound() != want.FoundAs || r.URL != want.URL || r.content != "" {
		t.Errorf("read back: URL %q, as found %q, content %q", r.URL, r.FoundAs, r.content)
	}
	if err := decodeRecord(enc[:len(enc)-1], &r, false); err == nil {
		t.Error("a cut record with a URL as found reads")
	}
}

// The store keeps a queued URL's spelling as found, hands it out with
// the lease, and takes a start URL's new spelling when it is queued again.
func TestTheURLAsFoundIsStoredLeasedAndRenewedWithAStartURL(t *testing.T) {
	clk := newClock()
	f := openTest(t, "", Options{Now: clk.Now, Policy: policy(4, 0)})
	if _, err := f.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	a := Item{URL: "http://a.test/list?a=1&b=2", Source: "s", Class: Start}
	a.SetFoundAs("http://a.test/list?b=2&a=1")
	b := Item{URL: "http://a.test/plain", Source: "s", Class: IndexFollow}
	b.SetFoundAs("http://a.test/plain")
	mustAdd(t, f, a, b)
	if b.FoundAs != "" {
		t.Errorf("a URL found as keyed keeps %q", b.FoundAs)
	}
	if r := mustGet(t, f, a.URL); r.FoundAs != a.FoundAs {
		t.Errorf("stored as found %q, want %q", r.FoundAs, a.FoundAs)
	}
	leased := map[string]string{}
	for range 2 {
		l := mustLease(t, f)
		leased[l.Item().URL] = l.Item().FoundAs
		if err := l.Complete(Outcome{State: Fetched, Status: 200}); err != nil {
			t.Fatal(err)
		}
	}
	if leased[a.URL] != a.FoundAs || leased[b.URL] != "" {
		t.Errorf("leased %q", leased)
	}
	if _, err := f.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	a.SetFoundAs("http://a.test/list?a=1&b=2")
	mustAdd(t, f, a)
	if r := mustGet(t, f, a.URL); r.FoundAs != "" {
		t.Errorf("a start URL now written as keyed is still found as %q", r.FoundAs)
	}
}
