package provider_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/hostile"
	"github.com/crawlspace/crawlspace/provider"
)

// trapSite serves trap on loopback. A crawl that never ends must fail, not
// hang: once the trap has served stop pages the context given back is
// cancelled.
func trapSite(t *testing.T, trap *hostile.Trap, stop int64) (*httptest.Server, context.Context) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		trap.ServeHTTP(w, r)
		if trap.Pages() >= stop {
			cancel()
		}
	}))
	t.Cleanup(srv.Close)
	return srv, ctx
}

// crawlUntilItEnds runs one cycle with a crawler of its own that logs into log,
// as one `crawlspace crawl` does, and checks that it ended by itself.
func crawlUntilItEnds(t *testing.T, ctx context.Context, cfg *config.Config, log *syncBuffer) (*provider.Report, *provider.Crawler) {
	t.Helper()
	c := crawltest.NewLogged(t, cfg, slog.New(slog.NewTextHandler(log, nil)))
	report, err := c.Crawl(ctx)
	if ctx.Err() != nil {
		t.Fatalf("the crawl did not end by itself: stopped after the trap served its last page (report: fetched %d, reasons %v)",
			report.Total.Fetched, report.Total.Reasons)
	}
	if err != nil {
		t.Fatal(err)
	}
	return report, c
}

// storeCounts counts the records of a source by state, walking the store.
func storeCounts(t *testing.T, front *frontier.Frontier, source string) (int, map[frontier.State]int) {
	t.Helper()
	total, by := 0, map[frontier.State]int{}
	if err := frontier.ForEach(front, frontier.Query{Source: source}, func(r frontier.Record) error {
		total++
		by[r.State]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return total, by
}

func trapConfig(t *testing.T, url, budget string) *config.Config {
	return crawltest.Config(t, fmt.Sprintf(`
output: {file: %s}
allow_private_networks: true
sources:
  - name: trap
    start_urls: [%q]
    budget: {%s}
`, filepath.Join(t.TempDir(), "trap.ndjson"), url+"/", budget))
}

func TestTrapCrawlStopsAtItsBudgetsAndSaysWhy(t *testing.T) {
	t.Parallel()
	const urls, pages, links = 300, 100, 10
	trap := &hostile.Trap{Seed: 1, Links: links}
	site, ctx := trapSite(t, trap, 50*pages)
	cfg := trapConfig(t, site.URL, fmt.Sprintf("max_urls_per_host: %d, max_pages_per_cycle: %d", urls, pages))
	var log syncBuffer

	report, c := crawlUntilItEnds(t, ctx, cfg, &log)
	front := c.Frontier()
	total, by := storeCounts(t, front, "trap")
	if trap.Pages() != pages || report.Total.Fetched != pages {
		t.Errorf("the trap served %d pages, the report counts %d fetched; want max_pages_per_cycle %d", trap.Pages(), report.Total.Fetched, pages)
	}
	if total != urls {
		t.Errorf("the store holds %d URLs of the trap (%v), want max_urls_per_host %d", total, by, urls)
	}
	// Every link is new: those past the budget are counted, not stored.
	if got, want := report.Total.Reasons["max_urls_per_host"], pages*links-(urls-1); got != want {
		t.Errorf("report counts %d URLs under max_urls_per_host, want %d: the links of %d pages but the %d stored", got, want, pages, urls-1)
	}
	if got := report.Total.Reasons["max_pages_per_cycle"]; got != by[frontier.Waiting] || got != urls-pages {
		t.Errorf("report counts %d URLs under max_pages_per_cycle, %d wait in the store; want %d each", got, by[frontier.Waiting], urls-pages)
	}
	for _, key := range []string{"max_urls_per_host", "max_pages_per_cycle"} {
		if n := strings.Count(strings.Join(report.Warnings, "\n"), "budget "+key); n != 1 {
			t.Errorf("report has %d warnings of %s, want 1: %q", n, key, report.Warnings)
		}
		if n := strings.Count(log.String(), `msg="budget reached" source=trap reason=`+key+" "); n != 1 {
			t.Errorf("log has %d lines of %s reached, want 1 whatever the URLs:\n%s", n, key, log.String())
		}
	}
	u, err := front.Usage("trap")
	if err != nil {
		t.Fatal(err)
	}
	if u.URLs != urls || u.Pages != pages || u.Refused != int64(pages*links-(urls-1)) || u.Example == "" {
		t.Errorf("stored usage = %+v, want %d URLs, %d pages and the refused ones with an example", u, urls, pages)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	// The next cycle fetches what waited, and the store stays at the budget.
	report, c = crawlUntilItEnds(t, ctx, cfg, &log)
	total, by = storeCounts(t, c.Frontier(), "trap")
	if trap.Pages() != 2*pages || report.Total.Fetched != pages {
		t.Errorf("second cycle: the trap served %d pages in all, the report counts %d; want %d more", trap.Pages(), report.Total.Fetched, pages)
	}
	if total != urls {
		t.Errorf("second cycle: the store holds %d URLs (%v), want still %d", total, by, urls)
	}
	// The start page's links are known; the other pages' are all new.
	if got, want := report.Total.Reasons["max_urls_per_host"], (pages-1)*links; got != want {
		t.Errorf("second cycle: %d URLs counted under max_urls_per_host, want %d", got, want)
	}
	if got := report.Total.Reasons["max_pages_per_cycle"]; got != by[frontier.Waiting] || got != urls-2*pages+1 {
		t.Errorf("second cycle: %d held back, %d wait; want %d", got, by[frontier.Waiting], urls-2*pages+1)
	}
}

// Refused URLs are records too: a trap linking to ever new sites fills the
// store with them unless the source's budget counts them.
func TestRefusedURLsPastTheSourceBudgetAreCountedNotStored(t *testing.T) {
	t.Parallel()
	const urls, pages = 200, 50
	trap := &hostile.Trap{Seed: 2, Links: 3, Offsite: 7}
	site, ctx := trapSite(t, trap, 50*pages)
	cfg := trapConfig(t, site.URL, fmt.Sprintf("max_urls: %d, max_pages_per_cycle: %d", urls, pages))
	var log syncBuffer
	report, c := crawlUntilItEnds(t, ctx, cfg, &log)
	total, by := storeCounts(t, c.Frontier(), "trap")
	if total != urls {
		t.Errorf("the store holds %d URLs (%v), want max_urls %d", total, by, urls)
	}
	if stored := report.Total.Reasons["offsite"]; stored != by[frontier.Excluded] || stored == 0 {
		t.Errorf("report counts %d offsite URLs, the store holds %d; want the same, more than none", stored, by[frontier.Excluded])
	}
	if got, want := report.Total.Reasons["max_urls"], pages*10-(urls-1); got != want {
		t.Errorf("report counts %d URLs under max_urls, want %d", got, want)
	}
}

// liveHeap is the Go heap in use once garbage is collected: the bytes of
// live objects (HeapInuse would count whole spans, which fragmentation
// leaves partly empty).
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// trapBudgetEnv asks the test binary, run as a child, to crawl a trap to
// the budget it names and print its live heap before and after.
const trapBudgetEnv = "CRAWLSPACE_TEST_TRAP_BUDGET"

func TestTrapMemoryChild(t *testing.T) {
	budget, _ := strconv.Atoi(os.Getenv(trapBudgetEnv))
	if budget == 0 {
		t.Skip("run by TestTrapCrawledToALargerBudgetTakesNoMoreMemory")
	}
	base := liveHeap()
	trap := &hostile.Trap{Seed: uint64(budget), Links: 10}
	site, ctx := trapSite(t, trap, int64(10*budget))
	cfg := trapConfig(t, site.URL, fmt.Sprintf("max_urls_per_host: %d, max_pages_per_cycle: %d", budget, budget))
	var log syncBuffer
	report, c := crawlUntilItEnds(t, ctx, cfg, &log)
	heap := liveHeap() // the crawler still open, its store at the budget
	total, by := storeCounts(t, c.Frontier(), "trap")
	if report.Total.Fetched != budget || total != budget || by[frontier.Fetched] != budget {
		t.Fatalf("fetched %d pages, the store holds %d URLs (%v); want %d each, all fetched", report.Total.Fetched, total, by, budget)
	}
	fmt.Printf("live-heap %d %d\n", base, heap)
}

// A trap crawled up to a budget four times larger takes about the same
// memory: what grows with the budget is the store on disk, not the heap.
// Each crawl runs in a process of its own, so neither sees what the other
// left behind, and this test, measuring no memory of its own process, runs
// beside the others.
func TestTrapCrawledToALargerBudgetTakesNoMoreMemory(t *testing.T) {
	if os.Getenv(trapBudgetEnv) != "" {
		t.Skip("in the child")
	}
	t.Parallel()
	const n = 1000
	grew := func(budget int) int64 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTrapMemoryChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", trapBudgetEnv, budget))
		out, err := cmd.CombinedOutput()
		var base, heap int64
		i := bytes.Index(out, []byte("live-heap "))
		if err != nil || i < 0 {
			t.Fatalf("child crawling to %d: %v:\n%s", budget, err, out)
		}
		if _, err := fmt.Sscanf(string(out[i:]), "live-heap %d %d", &base, &heap); err != nil {
			t.Fatalf("child crawling to %d: %v:\n%s", budget, err, out)
		}
		t.Logf("live heap %d KiB before a crawl of a trap to a budget of %d URLs and pages, %d KiB (+%d) after it",
			base>>10, budget, heap>>10, (heap-base)>>10)
		return heap - base
	}
	grew1, grew4 := grew(n), grew(4*n)
	// Growing with the trap would be 4 times; the crawler's own fixed
	// costs (clients, extractors, the store's structures) are most of it.
	if grew4 > 2*max(grew1, 1<<20) {
		t.Errorf("the heap grew by %d KiB at a budget of %d and by %d KiB at 4 times that: it grows with the trap", grew1>>10, n, grew4>>10)
	}
}

// The page budget holds with the state shared in Elasticsearch as with the
// embedded store: a trap crawl stops at max_pages_per_cycle, says so once,
// counts what waits under its reason, and the next cycle fetches that many
// more. (Two processes under the page budgets: frontier/esfrontier.)
func TestThePageBudgetHoldsThroughTheSharedStateStoreAndTheNextCycleFetchesWhatWaited(t *testing.T) {
	t.Parallel()
	const pages, links = 40, 5
	trap := &hostile.Trap{Seed: 2, Links: links}
	site, ctx := trapSite(t, trap, 50*pages)
	cfg := crawltest.Config(t, fmt.Sprintf(`
output: {file: %s}
allow_private_networks: true
cluster: {state_index: %s-state, node_name: solo, partitions: 4, lease_ttl: 5s, elasticsearch: {addresses: [%q]}}
sources:
  - name: trap
    start_urls: [%q]
    budget: {max_urls_per_host: 1000, max_pages_per_cycle: %d}
`, filepath.Join(t.TempDir(), "trap.ndjson"), estest.Index(t), estest.URL(t), site.URL+"/", pages))
	var log syncBuffer
	for cycle := 1; cycle <= 2; cycle++ {
		report, c := crawlUntilItEnds(t, ctx, cfg, &log)
		if trap.Pages() != int64(cycle*pages) || report.Total.Fetched != pages {
			t.Errorf("cycle %d: the trap served %d pages in all, the report counts %d fetched; want max_pages_per_cycle %d a cycle",
				cycle, trap.Pages(), report.Total.Fetched, pages)
		}
		// Each page links to new pages: more wait than were fetched.
		if got := report.Total.Reasons["max_pages_per_cycle"]; got < pages {
			t.Errorf("cycle %d: report counts %d URLs under max_pages_per_cycle, want the %d or more left waiting", cycle, got, pages)
		}
		if n := strings.Count(strings.Join(report.Warnings, "\n"), "budget max_pages_per_cycle"); n != 1 {
			t.Errorf("cycle %d: report has %d warnings of max_pages_per_cycle, want 1: %q", cycle, n, report.Warnings)
		}
		if strings.Contains(strings.Join(report.Warnings, "\n"), "not enforced") {
			t.Errorf("cycle %d: the report says a budget is not enforced: %q", cycle, report.Warnings)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
