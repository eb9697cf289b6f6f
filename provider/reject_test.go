package provider_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/provider"
)

// rejectSite has a home page linking to /a/0…/a/9 then /b/0…/b/9. Requests
// for /a/1.html edit the reject list to reject /b/ when armed, while the /b/
// pages wait in the queue behind the /a/ ones.
func rejectSite(t *testing.T, rejectList string, armed *atomic.Bool) (*testSite, []string) {
	t.Helper()
	site := newSite(t)
	var a, b []string
	for i := range 10 {
		a = append(a, fmt.Sprintf("/a/%d.html", i))
		b = append(b, fmt.Sprintf("/b/%d.html", i))
	}
	site.html("/", "home", links(append(a, b...)...))
	site.handle("/a/", slowPage("a"))
	site.handle("/b/", slowPage("b"))
	site.handle("/a/1.html", func(w http.ResponseWriter, r *http.Request) {
		if armed.CompareAndSwap(true, false) {
			if err := os.WriteFile(rejectList, []byte("# added while crawling\n/b/\n"), 0o644); err != nil {
				t.Error(err)
			}
		}
		slowPage("a1")(w, r)
	})
	return site, b
}

func TestRejectListEditedDuringACrawlDropsTheQueuedURLsItNowMatches(t *testing.T) {
	t.Parallel()
	rejectList := filepath.Join(t.TempDir(), "reject.txt")
	if err := os.WriteFile(rejectList, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	armed.Store(true)
	site, b := rejectSite(t, rejectList, &armed)
	// One request at a time, so the /b/ pages are still queued when the list changes.
	cfg, out := testConfig(t, "fetch: {concurrency: 1}",
		fmt.Sprintf("reject_list: %q\npoliteness: {max_parallel_per_host: 1}\nkeep_duplicates: true", rejectList), site.URL+"/")

	c, report := crawlTimed(t, cfg, provider.Timing{Checkpoint: 5 * time.Millisecond})

	for _, p := range b {
		r := wantState(t, c, site.URL+p, frontier.Excluded, "rejected")
		if !r.CheckedAt.IsZero() {
			t.Errorf("%s was leased and re-decided, not dropped from the queue", p)
		}
		if n := site.hit(p); n != 0 {
			t.Errorf("%s requested %d times", p, n)
		}
	}
	if got := report.Total.Reasons["rejected"]; got != len(b) {
		t.Errorf("report counts %d rejected, want %d: %v", got, len(b), report.Total.Reasons)
	}
	if got := len(indexedURLs(t, out)); got != 11 {
		t.Errorf("%d documents written, want home and the ten /a/ pages", got)
	}
}

func TestRejectListEditedDuringACrawlDeletesTheDocumentsOfQueuedURLsItNowMatches(t *testing.T) {
	t.Parallel()
	rejectList := filepath.Join(t.TempDir(), "reject.txt")
	if err := os.WriteFile(rejectList, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	site, b := rejectSite(t, rejectList, &armed)
	cfg, out := testConfig(t, "fetch: {concurrency: 1}",
		fmt.Sprintf("reject_list: %q\nmax_age: 1ns\npoliteness: {max_parallel_per_host: 1}\nkeep_duplicates: true", rejectList), site.URL+"/")

	c, _ := crawlTimed(t, cfg, provider.Timing{Checkpoint: 5 * time.Millisecond})
	for _, p := range b {
		if r := record(t, c, site.URL+p); !r.Indexed {
			t.Fatalf("first cycle did not index %s", p)
		}
	}
	// The second cycle queues every page again for its aged check; the list
	// changes while the /b/ pages wait, documents in the index.
	armed.Store(true)
	report := again(t, c)

	var want []string
	for _, p := range b {
		r := wantState(t, c, site.URL+p, frontier.Excluded, "rejected")
		if r.Indexed || r.Pending != "" {
			t.Errorf("%s: indexed %v, pending %q after it was rejected", p, r.Indexed, r.Pending)
		}
		if n := site.hit(p); n != 1 {
			t.Errorf("%s requested %d times, want 1 (the first cycle)", p, n)
		}
		want = append(want, docfields.ID(site.URL+p))
	}
	slices.Sort(want)
	if got := deletedIDs(t, out); !slices.Equal(got, want) {
		t.Errorf("delete actions for %d ids, want the %d rejected pages", len(got), len(want))
	}
	if report.Total.Deleted != len(b) || report.Total.Reasons["rejected"] != len(b) {
		t.Errorf("second cycle: %d deleted, %d rejected; want %d each", report.Total.Deleted, report.Total.Reasons["rejected"], len(b))
	}
}
