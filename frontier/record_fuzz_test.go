package frontier

import (
	"testing"
	"time"
)

// FuzzDecodeRecord decodes any bytes as a stored record, as a damaged
// store may hold them: no panic, and a record it accepts is one the
// frontier can use (a known state and class, a shift in range, strings
// within the value).
func FuzzDecodeRecord(f *testing.F) {
	full := Record{Item: Item{URL: "http://a.example/x", Source: "s", Depth: 3, Class: IndexFollow, Shift: -1, Hops: 2, Via: "http://a.example/"},
		State: Fetched, Status: 200, ErrCount: 1, TempErrCount: 2, Indexed: true, HasLinks: true, Cycle: 7, SeenCycle: 7,
		FetchedAt: time.Unix(1e9, 0), CheckedAt: time.Unix(1e9, 5), ETag: `"e"`, Hash: "h", DocID: "d", Pending: "index", content: "c"}
	f.Add(appendRecord(nil, &full))
	f.Add(appendRecord(nil, &Record{Item: Item{URL: "http://b/"}}))
	f.Add([]byte{recVersion, 0, 0, 0})
	// String lengths whose sum wraps around to the bytes left.
	wrap := appendRecord(nil, &Record{})
	wrap = append(wrap[:len(wrap)-11], 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'a')
	f.Add(wrap)
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Record
		if err := decodeRecord(b, &r, false); err != nil {
			return
		}
		if err := decodeRecord(b, &r, true); err != nil {
			t.Fatalf("decoded without strings, refused with them: %v", err)
		}
		if r.State >= numStates || r.Class >= numClasses || r.Shift < MinShift || r.Shift > MaxShift {
			t.Fatalf("accepted %+v", r)
		}
		n := len(r.URL) + len(r.content) + len(r.Source) + len(r.Via) + len(r.Reason) + len(r.ETag) + len(r.LastModified) + len(r.Hash) + len(r.DocID) + len(r.Target) + len(r.Pending)
		if n > len(b) {
			t.Fatalf("strings of %d bytes from a value of %d", n, len(b))
		}
	})
}

// FuzzDecodeEvent decodes any bytes as a stored history event: no panic.
func FuzzDecodeEvent(f *testing.F) {
	f.Add(appendEvent(nil, &Event{Kind: EventFetched, At: time.Unix(1e9, 0), Status: 200, Bytes: 1234, Took: time.Second, Reason: "r", Detail: "d"}))
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		var ev Event
		_ = decodeEvent(b, &ev)
	})
}
