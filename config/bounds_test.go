package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// numericKey is one number of the configuration with its bounds as YAML
// spells them. yaml is a whole config with %s where the value goes.
type numericKey struct {
	path         string
	yaml         string
	lo, hi       string // inclusive; "" for a key whose bounds another change owns
	below, above string // the nearest values past lo and hi
}

func global(line string) string { return line + "\n" + minimal }

// embed is a config whose embeddings block holds keys, and %s.
func embed(keys string) string {
	return global("elasticsearch: {embeddings: {url: \"http://127.0.0.1:9997/v1\", model: m, " + keys + "}}")
}

// numericKeys lists every number a configuration holds;
// TestEveryNumericKeyIsInTheBoundsTable keeps it complete.
var numericKeys = []numericKey{
	{"elasticsearch.shards", global("elasticsearch: {shards: %s}"), "1", "1024", "0", "1025"},
	{"elasticsearch.replicas", global("elasticsearch: {replicas: %s}"), "0", "64", "-1", "65"},
	{"elasticsearch.bulk_flush_bytes", global("elasticsearch: {bulk_flush_bytes: %s}"), "1", "64MiB", "0", "67108865"},
	{"elasticsearch.bulk_flush_interval", global("elasticsearch: {bulk_flush_interval: %s}"), "10ms", "1h", "9999999ns", "3600000000001ns"},
	{"elasticsearch.bulk_workers", global("elasticsearch: {bulk_workers: %s}"), "1", "64", "0", "65"},
	{"elasticsearch.request_timeout", global("elasticsearch: {request_timeout: %s}"), "1s", "10m", "999999999ns", "600000000001ns"},
	{"elasticsearch.refresh_interval", global("elasticsearch: {refresh_interval: %s}"), "100ms", "1h", "99999999ns", "3600000000001ns"},
	{"elasticsearch.embeddings.dimensions", embed("dimensions: %s"), "1", "4096", "0", "4097"},
	{"elasticsearch.embeddings.batch_size", embed("dimensions: 384, batch_size: %s"), "1", "2048", "0", "2049"},
	{"elasticsearch.embeddings.max_in_flight", embed("dimensions: 384, max_in_flight: %s"), "1", "64", "0", "65"},
	{"elasticsearch.embeddings.request_timeout", embed("dimensions: 384, request_timeout: %s"), "1s", "10m", "999999999ns", "600000000001ns"},
	{"elasticsearch.embeddings.passages.max_tokens", embed("dimensions: 384, passages: {max_tokens: %s, overlap_tokens: 0}"), "16", "8192", "15", "8193"},
	{"elasticsearch.embeddings.passages.overlap_tokens", embed("dimensions: 384, passages: {max_tokens: 100, overlap_tokens: %s}"), "0", "50", "-1", "51"},
	{"elasticsearch.embeddings.passages.max_per_document", embed("dimensions: 384, passages: {max_per_document: %s}"), "1", "100000", "0", "100001"},
	{"cluster.partitions", global("elasticsearch: {}\ncluster: {state_index: st, partitions: %s}"), "1", "4096", "0", "4097"},
	{"cluster.lease_ttl", global("elasticsearch: {}\ncluster: {state_index: st, lease_ttl: %s}"), "3s", "10m", "2999999999ns", "600000000001ns"},
	{"cluster.elasticsearch.shards", global("cluster: {state_index: st, elasticsearch: {shards: %s}}"), "1", "1024", "0", "1025"},
	{"cluster.elasticsearch.replicas", global("cluster: {state_index: st, elasticsearch: {replicas: %s}}"), "0", "64", "-1", "65"},
	{"cluster.elasticsearch.request_timeout", global("cluster: {state_index: st, elasticsearch: {request_timeout: %s}}"), "1s", "10m", "999999999ns", "600000000001ns"},
	{"service.notify[0].timeout", global("service: {notify: [{url: http://127.0.0.1/h, secret: s, timeout: %s}]}"), "1s", "5m", "999999999ns", "300000000001ns"},
	{"service.notify[0].attempts", global("service: {notify: [{url: http://127.0.0.1/h, secret: s, attempts: %s}]}"), "1", "20", "0", "21"},
	{"service.notify[0].queue", global("service: {notify: [{url: http://127.0.0.1/h, secret: s, queue: %s}]}"), "1", "10000", "0", "10001"},
	{"fetch.concurrency", global("fetch: {concurrency: %s}"), "1", "512", "0", "513"},
	{"fetch.connect_timeout", global("fetch: {connect_timeout: %s}"), "10ms", "10m", "9999999ns", "600000000001ns"},
	{"fetch.response_header_timeout", global("fetch: {response_header_timeout: %s}"), "10ms", "1h", "9999999ns", "3600000000001ns"},
	{"fetch.timeout", global("fetch: {timeout: %s}"), "10ms", "2h", "9999999ns", "7200000000001ns"},
	// Concurrency 8 keeps the largest body within what bodies in flight may hold.
	{"fetch.max_body_bytes", global("fetch: {concurrency: 8, max_body_bytes: %s}"), "1", "1GiB", "0", "1073741825"},
	{"fetch.max_document_bytes", global("fetch: {concurrency: 8, max_document_bytes: %s}"), "1", "1GiB", "0", "1073741825"},
	{"documents.timeout", global("documents: {timeout: %s}"), "1s", "1h", "999999999ns", "3600000000001ns"},
	{"documents.max_memory_bytes", global("documents: {max_memory_bytes: %s}"), "16MiB", "4GiB", "16777215", "4294967297"},
	{"documents.max_unpacked_bytes", global("documents: {max_unpacked_bytes: %s}"), "1MiB", "16GiB", "1048575", "17179869185"},
	{"documents.max_entries", global("documents: {max_entries: %s}"), "1", "1000000", "0", "1000001"},
	{"documents.max_xml_token_bytes", global("documents: {max_xml_token_bytes: %s}"), "64KiB", "1GiB", "65535", "1073741825"},
	{"browser.tabs", global("browser: {tabs: %s}"), "1", "64", "0", "65"},
	{"browser.max_memory_bytes", global("browser: {max_memory_bytes: %s}"), "512MiB", "256GiB", "536870911", "274877906945"},
	{"fetch.max_redirects", global("fetch: {max_redirects: %s}"), "0", "100", "-1", "101"},
	{"fetch.max_links_per_page", global("fetch: {max_links_per_page: %s}"), "1", "100000", "0", "100001"},
	{"sources[0].sitemap_limits.max_bytes", src("sitemap_limits: {max_bytes: %s}"), "1", "256MiB", "0", "268435457"},
	{"sources[0].sitemap_limits.max_urls", src("sitemap_limits: {max_urls: %s}"), "1", "1000000", "0", "1000001"},
	{"sources[0].sitemap_limits.max_depth", src("sitemap_limits: {max_depth: %s}"), "0", "20", "-1", "21"},
	{"sources[0].sitemap_limits.max_files", src("sitemap_limits: {max_files: %s}"), "1", "100000", "0", "100001"},
	{"sources[0].discovery_interval", src("discovery_interval: %s"), "1m", "8760h", "59s", "8760h0m0.000000001s"},
	{"sources[0].max_age", src("max_age: %s"), "1ns", "8760h", "0s", "8760h0m0.000000001s"},
	{"sources[0].max_link_depth", src("max_link_depth: %s"), "0", "1000", "-1", "1001"},
	{"sources[0].max_path_depth", src("max_path_depth: %s"), "0", "1000", "-1", "1001"},
	// Its upper bound is what the state store can hold (urlnorm.MaxLength).
	{"sources[0].max_url_length", src("max_url_length: %s"), "16", "32000", "15", "32001"},
	{"sources[0].politeness.delay", src("politeness: {delay: %s}"), "0s", "1h", "-1ns", "3600000000001ns"},
	{"sources[0].politeness.max_parallel_per_host", src("politeness: {max_parallel_per_host: %s}"), "1", "64", "0", "65"},
	{"sources[0].politeness.max_crawl_delay", src("politeness: {max_crawl_delay: %s}"), "0s", "24h", "-1ns", "24h0m0.000000001s"},
	{"sources[0].extraction.max_body_bytes", src("extraction: {max_body_bytes: %s}"), "1", "16MiB", "0", "16777217"},
	{"sources[0].max_temporary_errors", src("max_temporary_errors: %s"), "1", "1000", "0", "1001"},
	{"sources[0].budget.max_urls", src("budget: {max_urls: %s}"), "1", "1000000000", "0", "1000000001"},
	{"sources[0].budget.max_urls_per_host", src("budget: {max_urls_per_host: %s}"), "1", "1000000000", "0", "1000000001"},
	{"sources[0].budget.max_hosts", src("budget: {max_hosts: %s}"), "1", "1000000", "0", "1000001"},
	{"sources[0].budget.max_pages_per_cycle", src("budget: {max_pages_per_cycle: %s}"), "1", "1000000000", "0", "1000000001"},
	{"sources[0].budget.max_pages_per_host_per_cycle", src("budget: {max_pages_per_host_per_cycle: %s}"), "1", "1000000000", "0", "1000000001"},
	{"sources[0].hold_deletes.percent", src("hold_deletes: {percent: %s}"), "0", "100", "-1", "101"},
	{"sources[0].hold_deletes.min_count", src("hold_deletes: {min_count: %s}"), "0", "1000000000", "-1", "1000000001"},
	{"sources[0].render.timeout", src("render: {timeout: %s}"), "1s", "10m", "999999999ns", "600000000001ns"},
	{"sources[0].crawl_rules[0].render.timeout", src("crawl_rules: [{match: {path: /x}, render: {timeout: %s}}]"), "1s", "10m", "999999999ns", "600000000001ns"},
	{"sources[0].crawl_rules[0].priority", src("crawl_rules: [{match: {path: /x}, priority: %s}]"), "-2", "2", "-3", "3"},
}

// at returns the config with v in place and where v starts in it.
func (k numericKey) at(v string) (yaml string, line, col int) {
	yaml = fmt.Sprintf(k.yaml, v)
	for i, l := range strings.Split(k.yaml, "\n") {
		if c := strings.Index(l, "%s"); c >= 0 {
			return yaml, i + 1, c + 1
		}
	}
	panic("no %s in " + k.yaml)
}

// absurd are values no key accepts: the int64 extremes and past them, what
// overflows every integer type, and negatives.
func (k numericKey) absurd() []string {
	ints := []string{"9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"-9223372036854775809", "99999999999999999999999", "-99999999999999999999999"}
	switch {
	case strings.HasSuffix(k.lo, "s") || k.path == "sources[0].max_age" || strings.Contains(k.path, "interval") || strings.Contains(k.path, "timeout") || strings.HasSuffix(k.path, "delay"):
		return []string{"9223372036854775807ns", "2562048h", "-2562048h", "99999999999999999999999h", "-1h"}
	case strings.HasSuffix(k.path, "bytes"):
		return append(ints, "8589934592GiB", "9223372036854775807B", "-1")
	case strings.HasPrefix(k.lo, "-"):
		return ints
	}
	return append(ints, "-1")
}

// oneErrorAt parses yaml and checks it has exactly one error, at line:col,
// about path, starting with msg.
func oneErrorAt(t *testing.T, yaml string, line, col int, path, msg string) {
	t.Helper()
	got := errs(t, yaml)
	prefix := fmt.Sprintf("c.yaml:%d:%d: %s: %s", line, col, path, msg)
	if len(got) != 1 || !strings.HasPrefix(got[0], prefix) {
		t.Errorf("errors %q\nwant one starting %q", got, prefix)
	}
}

func TestEveryNumericKeyIsBoundedAbovePastItsBoundAndAgainstAbsurdValues(t *testing.T) {
	for _, k := range numericKeys {
		t.Run(k.path, func(t *testing.T) {
			if k.lo != "" {
				for _, v := range []string{k.lo, k.hi} {
					yaml, _, _ := k.at(v)
					if got := errs(t, yaml); got != nil {
						t.Errorf("%s at its bound %s: %q", k.path, v, got)
					}
				}
				bounds := fmt.Sprintf("must be between %s and %s, got ", k.lo, k.hi)
				for _, v := range []string{k.below, k.above} {
					yaml, line, col := k.at(v)
					oneErrorAt(t, yaml, line, col, k.path, bounds)
				}
			}
			for _, v := range k.absurd() {
				yaml, line, col := k.at(v)
				oneErrorAt(t, yaml, line, col, k.path, "")
				if k.lo == "" {
					continue
				}
				// The value is shown as written, not as what it overflowed to.
				want := fmt.Sprintf("c.yaml:%d:%d: %s: must be between %s and %s, got %s", line, col, k.path, k.lo, k.hi, v)
				if got := errs(t, yaml); len(got) != 1 || got[0] != want {
					t.Errorf("errors %q\nwant %q", got, want)
				}
			}
		})
	}
}

// numericPaths lists the key path of every integer and duration field under
// t, as a config with one source, one crawl rule and so on would spell it.
// outer holds the struct types being walked: a match tree nests matches.
func numericPaths(t reflect.Type, path string, outer ...reflect.Type) []string {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice:
		if t.Kind() == reflect.Slice {
			path += "[0]"
		}
		return numericPaths(t.Elem(), path, outer...)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return []string{path}
	case reflect.Struct:
		if slices.Contains(outer, t) {
			return nil
		}
		var out []string
		f := fieldsOf(t)
		for _, name := range f.names {
			out = append(out, numericPaths(t.FieldByIndex(f.index[name]).Type, joinPath(path, name), append(outer, t)...)...)
		}
		return out
	}
	return nil
}

func TestEveryNumericKeyIsInTheBoundsTable(t *testing.T) {
	var listed []string
	for _, k := range numericKeys {
		listed = append(listed, k.path)
	}
	for _, p := range numericPaths(reflect.TypeFor[Config](), "") {
		if !slices.Contains(listed, p) {
			t.Errorf("%s is a number with no entry in numericKeys: give it bounds in validation and a row here", p)
		}
	}
}

// Bodies in flight are held in memory: their product is bounded as well,
// so neither key at its own maximum lets the other take the machine.
func TestConcurrencyTimesBodySizeIsBounded(t *testing.T) {
	for _, tc := range []struct {
		fetch string
		msg   string // "" for a config that loads
	}{
		{"{concurrency: 512, max_body_bytes: 1GiB}", "with fetch.concurrency 512, bodies in flight may hold 512GiB: keep concurrency × max_body_bytes at most 8GiB"},
		{"{max_body_bytes: 1GiB}", "with fetch.concurrency 16, bodies in flight may hold 16GiB: keep concurrency × max_body_bytes at most 8GiB"},
		{"{concurrency: 512, max_body_bytes: 16MiB}", ""},
		{"{concurrency: 512}", ""},
		{"{concurrency: 8, max_body_bytes: 1GiB}", ""},
		{"{concurrency: 512, max_document_bytes: 1GiB}", "with fetch.concurrency 512, bodies in flight may hold 512GiB: keep concurrency × max_document_bytes at most 8GiB"},
	} {
		yaml := global("fetch: " + tc.fetch)
		if tc.msg == "" {
			if got := errs(t, yaml); got != nil {
				t.Errorf("fetch: %s: %q", tc.fetch, got)
			}
			continue
		}
		key := "max_body_bytes"
		if strings.Contains(tc.fetch, "max_document_bytes") {
			key = "max_document_bytes"
		}
		oneErrorAt(t, yaml, 1, strings.Index(yaml, key+":")+len(key+": ")+1, "fetch."+key, tc.msg)
	}
}
