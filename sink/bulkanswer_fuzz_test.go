package sink

import (
	"strings"
	"testing"
)

// An answer whose item says nothing of how the write went (a proxy's own
// JSON, a mangled body) once counted as a landed write, status 0 being
// under 300: the write was acknowledged and its document never indexed.
func TestBulkAnswerItemWithoutAStatusIsNeverTakenAsLanded(t *testing.T) {
	for _, body := range []string{
		`{"items":[{"index":{"_id":"a","result":"created"}}]}`,
		`{"items":[{}]}`,
		`{"items":[{"index":{"status":201},"delete":{"status":200}}]}`,
		`{"items":[{"index":{"status":-1}}]}`,
	} {
		if items, err := readBulkAnswer(strings.NewReader(body), 1); err == nil {
			t.Errorf("%s read as %+v, want an error that sends the write again", body, items)
		}
	}
	items, err := readBulkAnswer(strings.NewReader(`{"took":3,"errors":false,"items":[{"index":{"_id":"a","status":201,"result":"created"}}]}`), 1)
	if err != nil || items[0].Status != 201 || items[0].Result != "created" {
		t.Errorf("a real answer read as %+v, %v", items, err)
	}
}

// FuzzReadBulkAnswer reads any bytes as a _bulk answer: no panic, and an
// answer it accepts gives each write one item with a real HTTP status.
func FuzzReadBulkAnswer(f *testing.F) {
	f.Add([]byte(`{"took":3,"errors":true,"items":[{"index":{"_id":"a","status":503,"error":{"type":"unavailable_shards_exception","reason":"primary shard is not active"}}},{"delete":{"_id":"b","status":404,"result":"not_found"}}]}`), 2)
	f.Add([]byte(`{"items":[{"index":{"status":429,"error":{"type":"es_rejected_execution_exception","caused_by":{"type":"x","reason":"y"}}}}]}`), 1)
	f.Add([]byte(`<html>502 Bad Gateway</html>`), 1)
	f.Add([]byte(`{"items":null}`), 0)
	f.Fuzz(func(t *testing.T, body []byte, n int) {
		if n < 0 || n > 1000 {
			return
		}
		items, err := readBulkAnswer(strings.NewReader(string(body)), n)
		if err != nil {
			return
		}
		if len(items) != n {
			t.Fatalf("%d items for %d writes", len(items), n)
		}
		for i, it := range items {
			if it.Status < 100 || it.Status > 599 {
				t.Fatalf("item %d accepted with status %d", i, it.Status)
			}
			_ = it.reason()
		}
	})
}
