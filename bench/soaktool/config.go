package main

import (
	"fmt"
	"strings"
	"time"
)

// config is the service's configuration: the ordinary site and each hostile site as a source of
// its own, with the politeness its host is checked against, and Elasticsearch behind the proxy.
//
// Every source is revisited every minute (discovery_interval's least) and, but for the trap,
// checks every page it knows each cycle (max_age 1s), so a change reaches the index in the
// next cycle. The trap keeps its pages (max_age 48h) so its budget alone bounds it: it may
// fetch the URLs it holds once, up to max_pages_per_cycle a cycle.
func (s *soak) config() string {
	var b strings.Builder
	fmt.Fprintf(&b, `# written by bench/soak
state_dir: %q
user_agent: "crawlspace-soak/1.0"
allow_private_networks: true
metrics_addr: "127.0.0.1:0"
log: {format: json, level: info}
fetch:
  concurrency: 8
  timeout: %s
  response_header_timeout: %s
  max_body_bytes: 8MiB
  max_redirects: 10
elasticsearch:
  addresses: [%q]
  index: %s
  shards: 1
  replicas: 0
  request_timeout: %s
sources:
`, s.opts.Dir+"/state", fetchTimeout, fetchTimeout, s.proxy.URL, s.opts.Index, requestTimeout)
	src := func(name, extra string) {
		h := s.hosts[name]
		fmt.Fprintf(&b, `  - name: %s
    start_urls: ["%s/"]
    discovery_interval: 1m
    use_sitemaps: %v
    politeness: {delay: %s, max_parallel_per_host: %d}
`, name, h.URL, name == "fanout", duration(h.delay), h.maxParallel)
		b.WriteString(extra)
	}
	src("site", "    max_age: 1s\n")
	src("trap", fmt.Sprintf(`    max_age: 48h
    max_link_depth: 0
    budget: {max_urls: %d, max_pages_per_cycle: %d}
`, trapMaxURLs, trapPagesPerCyle))
	src("bombs", "    max_age: 1s\n")
	// A drip ends in a timeout; one a cycle is enough.
	src("drips", "    max_age: 1s\n    max_temporary_errors: 1\n")
	// The chains' hops differ by their query (?hop=N): the default filter, which keeps only
	// id, would make every hop the URL it came from.
	src("redirects", "    max_age: 1s\n    honored_query_params: [hop]\n")
	// The lies are one text in several encodings: each is checked as a document of its own.
	src("lies", "    max_age: 1s\n    keep_duplicates: true\n")
	// Every copy is a new URL one link deeper: the budget (200 URLs, so 200 links deep at
	// most), not the depth, ends the chain.
	src("churn", fmt.Sprintf("    max_age: 1s\n    max_link_depth: 1000\n    honored_query_params: [id]\n    budget: {max_urls: %d}\n", churnMaxURLs))
	// Its robots.txt names the sitemaps that never end (use_sitemaps, above).
	src("fanout", "    max_age: 1s\n")
	return b.String()
}

// duration writes d as the config reads it.
func duration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	return d.String()
}
