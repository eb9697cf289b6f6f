package provider_test

import (
	"slices"
	"testing"
)

// The cycle ends when the host's last page is done, not once its politeness
// delay after that page has passed: a host whose queue is empty has nothing
// to wait for. With one worker nobody else looks at the host's queue while
// its only page is in flight, and the crawl once waited the whole delay (an
// hour here) for a queue it had not seen empty; a regression hangs this
// test until go test's timeout.
func TestACycleEndsWhenTheLastPageIsDoneNotAfterTheHostsDelay(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.html("/", "home", "one page")
	cfg, _ := testConfig(t, "fetch: {concurrency: 1}", "robots: {obey: false}\npoliteness: {delay: 1h, max_parallel_per_host: 1}", site.URL+"/")

	report := crawl(t, cfg)

	if report.Total.Fetched != 1 || report.Total.Written != 1 {
		t.Errorf("fetched %d pages and wrote %d documents, want 1 and 1: %+v", report.Total.Fetched, report.Total.Written, report.Total)
	}
	if got := site.requested(); !slices.Equal(got, []string{"/"}) {
		t.Errorf("requested %v", got)
	}
}
