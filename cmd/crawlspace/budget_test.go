package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/hostile"
)

func TestBudgetsReachedShowInTheSummaryLogAndStatus(t *testing.T) {
	trap := &hostile.Trap{Seed: 3, Links: 10}
	site := httptest.NewServer(trap)
	defer site.Close()
	dir := t.TempDir()
	cfg, set, _ := writeConfig(t, fmt.Sprintf(`
output: {file: %s}
allow_private_networks: true
sources:
  - name: trap
    start_urls: [%q]
    budget: {max_urls_per_host: 120, max_pages_per_cycle: 40}
`, filepath.Join(dir, "trap.ndjson"), site.URL+"/"))
	var logs lockedBuffer
	var summary bytes.Buffer
	if code := crawlOnce(context.Background(), cfg, set, jsonOutput(&logs, &summary), ""); code != exitOK {
		t.Fatalf("crawl exit %d:\n%s", code, summary.String())
	}
	if trap.Pages() != 40 {
		t.Errorf("the trap served %d pages, want max_pages_per_cycle 40", trap.Pages())
	}
	_, _, counts, warnings := parseSummary(t, summary.String())
	if counts["trap"] == nil || counts["trap"].Reasons["max_urls_per_host"] == 0 || counts["trap"].Reasons["max_pages_per_cycle"] != 80 {
		t.Errorf("summary counts %+v, want URLs under max_urls_per_host and the 80 left waiting under max_pages_per_cycle", counts["trap"])
	}
	if w := strings.Join(warnings, "\n"); !strings.Contains(w, "reached its budget max_urls_per_host 120 on "+site.URL) ||
		!strings.Contains(w, "reached its budget max_pages_per_cycle 40") {
		t.Errorf("summary warnings = %q, want both budgets named", warnings)
	}
	reached := map[string]int{}
	for _, rec := range logRecords(t, logs.String()) {
		if rec["msg"] == "budget reached" {
			reached[rec["reason"].(string)]++
			if rec["source"] != "trap" || rec["url"] == "" {
				t.Errorf("budget line lacks its source or URL: %v", rec)
			}
		}
	}
	if reached["max_urls_per_host"] != 1 || reached["max_pages_per_cycle"] != 1 || len(reached) != 2 {
		t.Errorf("budget lines in the log: %v, want one per budget", reached)
	}
	front, err := frontier.Open(cfg.StateDir, frontier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()
	usage, err := front.Usage("trap")
	if err != nil {
		t.Fatal(err)
	}
	refused, waiting := usage.Example, ""
	frontier.ForEach(front, frontier.Query{Source: "trap"}, func(r frontier.Record) error {
		if r.State == frontier.Waiting {
			waiting = r.URL
		}
		return nil
	})
	if refused == "" || waiting == "" {
		t.Fatalf("no URL kept out (%q) or left waiting (%q)", refused, waiting)
	}
	list, err := sourceStatuses(cfg, front)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	printStatuses(&out, list)
	for _, want := range []string{
		"budget: 120 of 5000000 URLs, 1 of 10000 hosts, 40 of 40 requests in cycle 1",
		"budget reached: max_pages_per_cycle",
		"hosts at their budget:\n    " + site.URL + "  120 of 120 URLs, 40 of 1000000 requests in cycle 1: max_urls_per_host reached",
		"URLs a budget kept out of the store: ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}

	// A URL the budget kept out is not in the store, and status says why.
	out.Reset()
	if code := statusOfURL(&out, cfg, set, front, refused, false); code != exitOK {
		t.Fatalf("status -url of a URL over the budget: exit %d", code)
	}
	if s := out.String(); !strings.Contains(s, "not in the state store") ||
		!strings.Contains(s, "budget: source trap holds 120 URLs on "+site.URL+", its max_urls_per_host 120: a URL found beyond its budget is counted, not stored") {
		t.Errorf("status -url of %s:\n%s", refused, s)
	}
	out.Reset()
	if code := statusOfURL(&out, cfg, set, front, waiting, true); code != exitOK {
		t.Fatalf("status -url of a URL left waiting: exit %d", code)
	}
	var st urlStatus
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if st.State != "waiting" || !strings.Contains(st.Budget, "its max_pages_per_cycle 40: the URL waits for the next cycle") {
		t.Errorf("status -url of a URL left waiting = %s %q", st.State, st.Budget)
	}
	// A URL never found at all is still not in the store for want of a
	// crawl, where no budget covers it.
	cfg.Sources[0].Budget.MaxURLsPerHost = 1000
	if code := statusOfURL(io.Discard, cfg, set, front, refused, false); code != exitFailed {
		t.Errorf("status -url of an unknown URL under the budget: exit %d, want %d", code, exitFailed)
	}
}
