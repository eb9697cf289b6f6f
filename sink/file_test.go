package sink_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/sink"
)

func TestFileSinkAcknowledgesAWriteOnlyOnceItIsOnDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out", "docs.ndjson")
	var got results
	// No background sync during the test: only Flush makes writes durable.
	s, err := sink.NewFileEvery(path, "web", got.add, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Index(ctx, doc("http://example.test/a", "a")); err != nil {
		t.Fatal(err)
	}
	if err := s.Index(ctx, doc("http://example.test/b", "b")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "id-c", "http://example.test/c"); err != nil {
		t.Fatal(err)
	}
	if n := len(got.outcomes()); n != 0 {
		t.Fatalf("%d writes acknowledged before a sync, want none", n)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	outs := got.outcomes()
	if len(outs) != 3 || outs[2] != sink.Deleted {
		t.Fatalf("after Flush: %v", outs)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if lines := bytes.Count(raw, []byte("\n")); lines != 5 {
		t.Errorf("the file holds %d lines, want 5 (two index actions with sources, one delete)", lines)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// A second sink appends to the same file.
	s2, err := sink.NewFile(path, "web", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Index(ctx, doc("http://example.test/d", "d")); err != nil {
		t.Fatal(err)
	}
	if err := s2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(path)
	if lines := bytes.Count(raw, []byte("\n")); lines != 7 {
		t.Errorf("after a second crawl the file holds %d lines, want 7", lines)
	}
}

func TestFileSinkSyncsAndAcknowledgesInTheBackgroundWithoutAFlush(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docs.ndjson")
	acked := make(chan sink.Result, 2)
	s, err := sink.NewFileEvery(path, "web", func(r sink.Result) { acked <- r }, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if err := s.Index(context.Background(), doc("http://example.test/a", "a")); err != nil {
		t.Fatal(err)
	}
	// The background sync acknowledges the write; nothing else would.
	if r := <-acked; r.URL != "http://example.test/a" || r.Outcome != sink.Written {
		t.Fatalf("acknowledged %+v", r)
	}
	raw, err := os.ReadFile(path)
	if err != nil || bytes.Count(raw, []byte("\n")) != 2 {
		t.Errorf("after the acknowledgement the file holds %q (%v), want the action and the document", raw, err)
	}
}

// The file sink writes an update as _bulk takes it: the action, then the
// partial document under "doc".
func TestFileSinkWritesAnUpdateAsBulkTakesIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docs.ndjson")
	var got results
	s, err := sink.NewFileEvery(path, "web", got.add, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	u := "http://example.test/a"
	if err := s.Update(ctx, docfields.ID(u), u, docfields.AppendGroupJSON(nil, []string{u + "?id=1"}, "h1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if outs := got.outcomes(); !slices.Equal(outs, []sink.Outcome{sink.Written}) {
		t.Errorf("outcomes %v, want one written", outs)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 2 {
		t.Fatalf("the file holds %d lines, want 2: %q", len(lines), lines)
	}
	var action map[string]struct {
		Index string `json:"_index"`
		ID    string `json:"_id"`
	}
	var body struct {
		Doc map[string]any `json:"doc"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &action); err != nil || action["update"].ID != docfields.ID(u) || action["update"].Index != "web" {
		t.Errorf("action line %s (%v), want an update of %s in web", lines[0], err, docfields.ID(u))
	}
	if err := json.Unmarshal([]byte(lines[1]), &body); err != nil || body.Doc["doc_content_hash"] != "h1" || len(body.Doc) != 2 {
		t.Errorf("source line %s (%v), want the list and the hash under doc", lines[1], err)
	}
}
