package provider

import (
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/frontier"
)

// The store bounds the documents waiting for its commits by their size
// (frontier's Outcome.Holds): a pending write must tell it.
func TestAPendingDocumentWriteTellsTheStoreWhatItHolds(t *testing.T) {
	w := &write{id: "x", url: "http://a.example/", doc: &docfields.Document{Body: strings.Repeat("a", 1<<20)}}
	var o frontier.Outcome
	w.pend(&o)
	if o.Holds < 1<<20 {
		t.Errorf("a 1 MiB document's write holds %d bytes, want at least 1 MiB", o.Holds)
	}
	var d frontier.Outcome
	deletion(frontier.Record{Item: frontier.Item{URL: "http://a.example/"}}).pend(&d)
	if d.Holds != 0 {
		t.Errorf("a deletion holds %d bytes, want none", d.Holds)
	}
}
