package provider_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
)

// atMaxima is every source key at the upper bound validation allows;
// docs/config.md gives the bounds.
const atMaxima = `
    sitemap_limits: {max_bytes: 256MiB, max_urls: 1000000, max_depth: 20}
    discovery_interval: 8760h
    max_age: 8760h
    max_link_depth: 1000
    max_path_depth: 1000
    max_url_length: 32000
    politeness: {delay: 1h, max_parallel_per_host: 64}
    extraction: {max_body_bytes: 16MiB}
    max_temporary_errors: 1000
    budget: {max_urls: 1000000000, max_urls_per_host: 1000000000, max_hosts: 1000000, max_pages_per_cycle: 1000000000, max_pages_per_host_per_cycle: 1000000000}
    crawl_rules: [{match: {path: /}, priority: 2}]
`

// A configuration at the upper bounds is one the process can run: the
// crawler is built and crawls without a panic (a fetch.concurrency of
// 9223372036854775807 once passed validation and panicked making the
// worker pool). fetch.concurrency and fetch.max_body_bytes are tried each
// at its maximum, with the other as large as their product allows.
func TestConfigAtTheMaximaBuildsACrawlerThatCrawls(t *testing.T) {
	t.Parallel()
	esURL := estest.URL(t)
	const limits = "connect_timeout: 10m, response_header_timeout: 1h, timeout: 2h, max_redirects: 100, max_links_per_page: 100000"
	for _, tc := range []struct{ name, fetch string }{
		{"most requests in flight", "{concurrency: 512, max_body_bytes: 16MiB, " + limits + "}"},
		{"largest body", "{concurrency: 8, max_body_bytes: 1GiB, " + limits + "}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site := newSite(t)
			site.html("/", "home", "one page, so the hour between loads of a host never comes")
			// robots.txt is a load of its host too, which the page would wait the hour
			// after (TestRobotsTxtIsARequestThePolitenessDelayFollows): not read here.
			// Shards and replicas stay what the one test node can hold: 1024
			// shards and 64 replicas are Elasticsearch's to refuse, not ours.
			cfg := crawltest.Config(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, shards: 1, replicas: 0, bulk_flush_bytes: 64MiB, bulk_flush_interval: 1h, bulk_workers: 64, request_timeout: 10m}
allow_private_networks: true
fetch: %s
sources:
  - name: s
    start_urls: [%q]
    robots: {obey: false}
`+atMaxima, esURL, estest.Index(t), tc.fetch, site.URL+"/"))

			report := crawl(t, cfg)

			if report.Total.Created != 1 {
				t.Errorf("created %d documents, want 1: %+v", report.Total.Created, report.Total)
			}
			if got := site.requested(); !slices.Equal(got, []string{"/"}) {
				t.Errorf("requested %v", got)
			}
		})
	}
}
