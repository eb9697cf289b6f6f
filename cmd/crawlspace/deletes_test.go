package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/rules"
)

// crawlSummary runs one crawl as `crawlspace crawl` does and returns its
// summary, failing the test unless it exits 0.
func crawlSummary(t *testing.T, cfg *config.Config, set *rules.Set) string {
	t.Helper()
	var summary strings.Builder
	if code := crawlOnce(context.Background(), cfg, set, jsonOutput(io.Discard, &summary), ""); code != exitOK {
		t.Fatalf("crawl exit %d", code)
	}
	return summary.String()
}

// bulkDeletes counts the delete actions of a file sink's NDJSON.
func bulkDeletes(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var action map[string]json.RawMessage
		if json.Unmarshal(sc.Bytes(), &action) == nil && action["delete"] != nil {
			n++
		}
	}
	return n
}

// A site that answers 404 everywhere: the crawl's summary, `status` (text,
// JSON, one URL) say its deletes are held, and `confirm-deletes` sends
// them, after which nothing is held.
func TestStatusSaysWhatIsHeldAndConfirmDeletesSendsIt(t *testing.T) {
	var gone atomic.Bool
	site := crawltest.VanishingSite(t, 12, &gone)
	out := filepath.Join(t.TempDir(), "docs.ndjson")
	cfg, set, path := writeConfig(t, fmt.Sprintf(`
output: {file: %s}
allow_private_networks: true
sources:
  - name: docs
    start_urls: [%q]
    max_age: 1ns
`, out, site.URL+"/"))
	crawlSummary(t, cfg, set)
	gone.Store(true)
	if summary := crawlSummary(t, cfg, set); !strings.Contains(summary, "deletes held 13") ||
		!strings.Contains(summary, "warning: source docs: 13 deletes held") {
		t.Errorf("the summary does not say 13 deletes are held:\n%s", summary)
	}
	if n := bulkDeletes(t, out); n != 0 {
		t.Errorf("the crawl wrote %d deletes, want none", n)
	}
	r := runCommand(t, "status", "-config", path)
	if r.code != exitOK || !strings.Contains(r.stdout, "deletes held: 13 of 13 documents (100%") ||
		!strings.Contains(r.stdout, "crawlspace confirm-deletes -config F -source docs") {
		t.Errorf("status: %s; want it to say 13 of 13 documents are held and how to confirm them", r)
	}
	r = runCommand(t, "status", "-config", path, "-json")
	var list []struct {
		Source      string `json:"source"`
		DeletesHeld *struct {
			Count     int `json:"count"`
			Documents int `json:"documents"`
		} `json:"deletes_held"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 || list[0].DeletesHeld == nil ||
		list[0].DeletesHeld.Count != 13 || list[0].DeletesHeld.Documents != 13 {
		t.Errorf("status -json: %s (%v); want deletes_held 13 of 13", r, err)
	}
	r = runCommand(t, "status", "-config", path, "-url", site.URL+"/p/3")
	if !strings.Contains(r.stdout, "its delete held") || !strings.Contains(r.stdout, "delete_held") {
		t.Errorf("status -url: %s; want it to say the page's delete is held, in its state and its history", r)
	}

	r = runCommand(t, "confirm-deletes", "-config", path, "-source", "docs")
	if r.code != exitOK || !strings.Contains(r.stdout, "13 held delete(s) of source docs sent to file "+out) {
		t.Errorf("confirm-deletes: %s; want 13 deletes sent", r)
	}
	if n := bulkDeletes(t, out); n != 13 {
		t.Errorf("the file holds %d deletes after the confirmation, want 13", n)
	}
	if r := runCommand(t, "status", "-config", path); strings.Contains(r.stdout, "deletes held") {
		t.Errorf("status after the confirmation: %s; want nothing held", r)
	}
	if r := runCommand(t, "confirm-deletes", "-config", path, "-source", "docs"); r.code != exitOK || !strings.Contains(r.stdout, "no delete of source docs is held") {
		t.Errorf("a second confirm-deletes: %s; want exit 0 saying nothing is held", r)
	}
	for _, args := range [][]string{{"-config", path}, {"-config", path, "-source", "nosuch"}} {
		if r := runCommand(t, append([]string{"confirm-deletes"}, args...)...); r.code != exitUsage {
			t.Errorf("confirm-deletes %v: %s; want exit 2", args, r)
		}
	}
}
