package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/docfields"
)

// src builds a config whose first source is named a and starts at
// http://example.com/, followed by lines indented under that source.
func src(sourceLines ...string) string {
	s := minimal
	for _, l := range sourceLines {
		s += "    " + l + "\n"
	}
	return s
}

func TestSourcesAreValidated(t *testing.T) {
	runErrCases(t, []errCase{
		{"no sources key", "state_dir: x\n", []string{
			`c.yaml: sources: at least one source is required`,
		}},
		{"empty sources list", "sources: []\n", []string{
			`c.yaml:1:10: sources: at least one source is required`,
		}},
		{"missing name and start URLs", "sources:\n  - discovery: true\n", []string{
			`c.yaml:2:5: sources[0].name: is required`,
			`c.yaml:2:5: sources[0].start_urls: at least one start URL is required`,
		}},
		{"unsafe name", "sources:\n  - name: my docs/2\n    start_urls: [http://example.com/]\n", []string{
			`c.yaml:2:11: sources[0].name: "my docs/2" may hold only letters, digits, _, - and . (at most 64, starting with a letter or digit): it is used in document fields and metrics`,
		}},
		{"duplicate names", minimal + "  - name: a\n    start_urls: [http://example.org/]\n", []string{
			`c.yaml:4:11: sources[1].name: duplicate source name "a"; first used at line 2`,
		}},
		{"explicit empty start URLs", "sources:\n  - name: a\n    start_urls: []\n", []string{
			`c.yaml:3:17: sources[0].start_urls: at least one start URL is required`,
		}},
		{"start URL problems", "sources:\n  - name: a\n    start_urls:\n" +
			"      - example.com/docs\n" +
			"      - ftp://example.com/\n" +
			"      - http:///path\n" +
			"      - http://user:secret@example.com/\n" +
			"      - http://example.com/#top\n" +
			"      - \" http://example.com/\"\n" +
			"      - http://example.com:99999/\n" +
			"      - \"\"\n", []string{
			`c.yaml:4:9: sources[0].start_urls[0]: "example.com/docs" is not an absolute URL; start it with http:// or https://`,
			`c.yaml:5:9: sources[0].start_urls[1]: scheme "ftp" is not allowed here (schemes: http, https)`,
			`c.yaml:6:9: sources[0].start_urls[2]: "http:///path" has no host`,
			`c.yaml:7:9: sources[0].start_urls[3]: must not carry credentials; use the source's auth block`,
			`c.yaml:8:9: sources[0].start_urls[4]: "http://example.com/#top" has a fragment (#...), which never reaches the server; remove it`,
			`c.yaml:9:9: sources[0].start_urls[5]: has leading or trailing spaces`,
			`c.yaml:10:9: sources[0].start_urls[6]: port "99999" is not a number from 1 to 65535`,
			`c.yaml:11:9: sources[0].start_urls[7]: must not be empty`,
		}},
		{"start URL outside the source's schemes", src("schemes: [https]"), []string{
			`c.yaml:3:18: sources[0].start_urls[0]: scheme "http" is not allowed here (schemes: https)`,
		}},
		{"schemes", src("schemes: [http, HTTPS, ftp, http]"), []string{
			`c.yaml:4:21: sources[0].schemes[1]: "HTTPS" is not one of http, https`,
			`c.yaml:4:28: sources[0].schemes[2]: "ftp" is not one of http, https`,
			`c.yaml:4:33: sources[0].schemes[3]: "http" is listed twice`,
		}},
		{"empty schemes", src("schemes: []"), []string{
			`c.yaml:3:18: sources[0].start_urls[0]: scheme "http" is not allowed here (schemes: )`,
			`c.yaml:4:14: sources[0].schemes: at least one scheme is required`,
		}},
		{"sitemaps and feeds", src("sitemaps: [/sitemap.xml]", "feeds: [\"feed://example.com/rss\"]"), []string{
			`c.yaml:4:16: sources[0].sitemaps[0]: "/sitemap.xml" is not an absolute URL; start it with http:// or https://`,
			`c.yaml:5:13: sources[0].feeds[0]: scheme "feed" is not allowed here (schemes: http, https)`,
		}},
		{"zero durations", src("discovery_interval: 0s", "max_age: 0"), []string{
			`c.yaml:4:25: sources[0].discovery_interval: must be between 1m and 8760h, got 0s`,
			`c.yaml:5:14: sources[0].max_age: must be between 1ns and 8760h, got 0`,
		}},
		{"negative delay", src("politeness: {delay: -1s}"), []string{
			`c.yaml:4:25: sources[0].politeness.delay: must be between 0s and 1h, got -1s`,
		}},
		{"integer ranges", src("max_link_depth: -1", "max_path_depth: -2", "max_url_length: 15",
			"politeness: {max_parallel_per_host: 0}", "max_temporary_errors: 0",
			"sitemap_limits: {max_bytes: 0, max_urls: 0, max_depth: -1}"), []string{
			`c.yaml:4:21: sources[0].max_link_depth: must be between 0 and 1000, got -1`,
			`c.yaml:5:21: sources[0].max_path_depth: must be between 0 and 1000, got -2`,
			`c.yaml:6:21: sources[0].max_url_length: must be between 16 and 32000, got 15`,
			`c.yaml:7:41: sources[0].politeness.max_parallel_per_host: must be between 1 and 64, got 0`,
			`c.yaml:8:27: sources[0].max_temporary_errors: must be between 1 and 1000, got 0`,
			`c.yaml:9:33: sources[0].sitemap_limits.max_bytes: must be between 1 and 256MiB, got 0`,
			`c.yaml:9:46: sources[0].sitemap_limits.max_urls: must be between 1 and 1000000, got 0`,
			`c.yaml:9:60: sources[0].sitemap_limits.max_depth: must be between 0 and 20, got -1`,
		}},
		{"budget ranges", src("budget: {max_urls: 0, max_urls_per_host: -1, max_hosts: 1000001,",
			"  max_pages_per_cycle: 1000000001, max_pages_per_host_per_cycle: 0}"), []string{
			`c.yaml:4:24: sources[0].budget.max_urls: must be between 1 and 1000000000, got 0`,
			`c.yaml:4:46: sources[0].budget.max_urls_per_host: must be between 1 and 1000000000, got -1`,
			`c.yaml:4:61: sources[0].budget.max_hosts: must be between 1 and 1000000, got 1000001`,
			`c.yaml:5:28: sources[0].budget.max_pages_per_cycle: must be between 1 and 1000000000, got 1000000001`,
			`c.yaml:5:70: sources[0].budget.max_pages_per_host_per_cycle: must be between 1 and 1000000000, got 0`,
		}},
		{"max_url_length past what the state store holds", src("max_url_length: 32001"), []string{
			`c.yaml:4:21: sources[0].max_url_length: must be between 16 and 32000, got 32001`,
		}},
		{"a start URL longer than the state store holds", "sources:\n  - name: a\n    start_urls: [http://example.org/" + strings.Repeat("x", 32000) + "]\n", []string{
			`c.yaml:3:18: sources[0].start_urls[0]: is 32019 bytes, longer than the state store holds (32000)`,
		}},
		{"enums", src("orphans: forget", "extraction: {title_order: [title, h2, title]}"), []string{
			`c.yaml:4:14: sources[0].orphans: "forget" is not one of keep, recheck, delete`,
			`c.yaml:5:39: sources[0].extraction.title_order[1]: "h2" is not one of title, meta, h1, url`,
			`c.yaml:5:43: sources[0].extraction.title_order[2]: "title" is listed twice`,
		}},
		{"explicit empty lists that cannot be empty", src("mime_types: []", "extraction: {title_order: []}"), []string{
			`c.yaml:4:17: sources[0].mime_types: at least one MIME type is required, or nothing would be indexed`,
			`c.yaml:5:31: sources[0].extraction.title_order: at least one title source is required (title, meta, h1, url)`,
		}},
		{"list entries", src("include: [\"\", \"regexp:\"]", "honored_query_params: [\"a=b\"]",
			"ignored_extensions: [pdf, \"a/b\"]", "mime_types: [html]",
			"extraction: {remove_elements: [\"div.x\"], remove_classes: [\"a b\"]}"), []string{
			`c.yaml:4:15: sources[0].include[0]: must not be empty`,
			`c.yaml:4:19: sources[0].include[1]: regexp: needs a pattern after it`,
			`c.yaml:5:28: sources[0].honored_query_params[0]: "a=b" is not a query parameter name`,
			`c.yaml:6:31: sources[0].ignored_extensions[1]: "a/b" is not a file extension`,
			`c.yaml:7:18: sources[0].mime_types[0]: "html" is not a MIME type such as text/html`,
			`c.yaml:8:36: sources[0].extraction.remove_elements[0]: "div.x" is not an HTML element name`,
			`c.yaml:8:63: sources[0].extraction.remove_classes[0]: "a b" is not a single class name (no spaces or dots)`,
		}},
		{"auth needs both fields", src("auth: {username: bob}"), []string{
			`c.yaml:4:11: sources[0].auth.password: is required (or password_env, or password_file)`,
		}},
		{"empty auth block", src("auth:"), []string{
			`c.yaml:4:5: sources[0].auth.username: is required with auth`,
			`c.yaml:4:5: sources[0].auth.password: is required (or password_env, or password_file)`,
		}},
		{"headers", src("auth: {username: bob, password: pw}", "headers:",
			"  \"Bad Name\": x", "  Content-Length: \"1\"", "  X-A: a", "  x-a: b", "  Authorization: Basic xyz"), []string{
			`c.yaml:6:7: sources[0].headers.Bad Name: "Bad Name" is not a valid HTTP header name`,
			`c.yaml:7:7: sources[0].headers.Content-Length: Content-Length is set by the HTTP client and cannot be configured`,
			`c.yaml:9:7: sources[0].headers.x-a: header x-a is set twice (also as X-A); header names are case-insensitive`,
			`c.yaml:10:7: sources[0].headers.Authorization: conflicts with auth; use one or the other`,
		}},
	})
}

func TestCrawlRulesAreValidated(t *testing.T) {
	rules := func(lines ...string) string {
		return src(append([]string{"crawl_rules:"}, lines...)...)
	}
	runErrCases(t, []errCase{
		{"two operators in one node", rules("  - match: {domain: example.com, path: /x}", "    index: false"), []string{
			`c.yaml:5:16: sources[0].crawl_rules[0].match: has 2 operators (domain, path); a match node takes exactly one: put them in a list under and`,
		}},
		{"empty node", rules("  - match: {}", "    index: false"), []string{
			`c.yaml:5:16: sources[0].crawl_rules[0].match: empty match: give one of and, or, not, atom, domain, host, path, ext, url, scheme, query, inquery, length`,
		}},
		{"empty and, empty not", rules("  - match: {or: [{and: []}, {not: }]}", "    index: false"), []string{
			`c.yaml:5:28: sources[0].crawl_rules[0].match.or[0].and: needs at least one match node`,
			`c.yaml:5:34: sources[0].crawl_rules[0].match.or[1].not: empty match: give one of and, or, not, atom, domain, host, path, ext, url, scheme, query, inquery, length`,
		}},
		{"no match, no action", rules("  - priority: 1", "  - match: {path: /x}"), []string{
			`c.yaml:5:9: sources[0].crawl_rules[0]: match is required`,
			`c.yaml:6:9: sources[0].crawl_rules[1]: no action: give one or more of index, follow, accept, ignore, source, priority, add_meta, render`,
		}},
		{"priority out of range", rules("  - match: {path: /x}", "    priority: 3"), []string{
			`c.yaml:6:19: sources[0].crawl_rules[0].priority: must be between -2 and 2, got 3`,
		}},
		{"ignore contradicts index", rules("  - match: {path: /x}", "    ignore: true", "    index: true"), []string{
			`c.yaml:7:16: sources[0].crawl_rules[0].index: contradicts ignore: true (ignore means no index, no follow)`,
		}},
		{"source must exist", rules("  - match: {path: /x}", "    source: b"), []string{
			`c.yaml:6:17: sources[0].crawl_rules[0].source: no source is named "b" (sources: a)`,
		}},
		{"atom fields", rules("  - match: {atom: {field: fragment, kind: regex, norm: upper}}", "    index: false",
			"  - match: {atom: {field: path, kind: prefix}}", "    index: false"), []string{
			`c.yaml:5:31: sources[0].crawl_rules[0].match.atom.field: "fragment" is not one of url, scheme, host, path, query`,
			`c.yaml:5:47: sources[0].crawl_rules[0].match.atom.kind: "regex" is not one of exact, prefix, suffix, inside, length`,
			`c.yaml:5:60: sources[0].crawl_rules[0].match.atom.norm: "upper" is not one of none, lower, norm`,
			`c.yaml:7:23: sources[0].crawl_rules[1].match.atom.value: must not be empty`,
		}},
		{"atom without field and kind", rules("  - match: {atom: {value: x}}", "    index: false"), []string{
			`c.yaml:5:23: sources[0].crawl_rules[0].match.atom.field: is required: one of url, scheme, host, path, query`,
			`c.yaml:5:23: sources[0].crawl_rules[0].match.atom.kind: is required: one of exact, prefix, suffix, inside, length`,
		}},
		{"length ranges", rules(
			"  - match: {length: {value: \"[30:]\"}}", "    index: false",
			"  - match: {length: {field: url, value: \"[:10]\"}}", "    index: false",
			"  - match: {atom: {field: query, kind: length, value: \"[11:12]\"}}", "    index: false",
			"  - match: {length: {field: body, value: \"30\"}}", "    index: false",
			"  - match: {atom: {field: path, kind: length, value: \"[5:2]\"}}", "    index: false",
			"  - match: {length: {value: \"[1048577:]\"}}", "    index: false",
			"  - match: {length: {value: \"[:99999999999999999999]\"}}", "    index: false",
		), []string{
			`c.yaml:11:33: sources[0].crawl_rules[3].match.length.field: "body" is not one of url, scheme, host, path, query`,
			`c.yaml:11:46: sources[0].crawl_rules[3].match.length.value: length range "30" must look like [30:], [:10] or [11:12]`,
			`c.yaml:13:58: sources[0].crawl_rules[4].match.atom.value: length range "[5:2]" is empty: 5 > 2`,
			`c.yaml:15:33: sources[0].crawl_rules[5].match.length.value: length range "[1048577:]": bound 1048577 is past 1048576, longer than any URL`,
			`c.yaml:17:33: sources[0].crawl_rules[6].match.length.value: length range "[:99999999999999999999]": bound 99999999999999999999 is past 1048576, longer than any URL`,
		}},
		{"shortcut values", rules("  - match: {or: [{domain: \"http://example.com\"}, {scheme: ftp}, {host: \"\"}]}", "    index: false"), []string{
			`c.yaml:5:31: sources[0].crawl_rules[0].match.or[0].domain: "http://example.com" is not a domain name; write the host name only, such as example.com`,
			`c.yaml:5:63: sources[0].crawl_rules[0].match.or[1].scheme: "ftp" is not one of http, https`,
			`c.yaml:5:76: sources[0].crawl_rules[0].match.or[2].host: must not be empty`,
		}},
	})
}

func TestIBMRulesShapeIsChecked(t *testing.T) {
	runErrCases(t, []errCase{
		{"shapes", src("rules:",
			"  - allow domain www.ibm.com",
			"  - forbid http://sales.ibm.com/*fs/*",
			"  - Allow Prefix http://sales.ibm.com/public/*",
			"  - allow address 9.0.0.0 255.0.0.0",
			"  - allow address [2001:db8:0:1:0:0:0:1]",
			"  - permit domain x",
			"  - allow domain",
			"  - allow host x",
			"  - allow domain a b",
			"  - \"forbid address :: :: ::\"",
			"  - \"\"",
		), []string{
			`c.yaml:10:9: sources[0].rules[5]: the action must be allow or forbid, got "permit"`,
			`c.yaml:11:9: sources[0].rules[6]: a rule is "allow|forbid domain|prefix|address TARGET"`,
			`c.yaml:12:9: sources[0].rules[7]: the rule type must be domain, prefix or address, got "host"`,
			`c.yaml:13:9: sources[0].rules[8]: a domain rule takes one target, got 2 words after "domain"`,
			`c.yaml:14:9: sources[0].rules[9]: an address rule takes an address and an optional netmask, got 3 words after "address"`,
			`c.yaml:15:9: sources[0].rules[10]: empty rule; write "allow|forbid domain|prefix|address TARGET"`,
		}},
	})
}

func TestExtraFieldsMetaMappingsAndAddMeta(t *testing.T) {
	runErrCases(t, []errCase{
		{"field names and types", "extra_fields:\n  extra_ok:\n  category: keyword\n  extra_Bad: text\n  extra_n: number\n" + minimal, []string{
			`c.yaml:3:3: extra_fields.category: field name "category" must match ^extra_[a-z0-9_]+$`,
			`c.yaml:4:3: extra_fields.extra_Bad: field name "extra_Bad" must match ^extra_[a-z0-9_]+$`,
			`c.yaml:5:3: extra_fields.extra_n: "number" is not one of keyword, text, long, integer, short, byte, double, float, half_float, date, boolean`,
		}},
		{"meta mappings", "extra_fields: {extra_category: keyword}\n" + src("extraction:",
			"  meta_mappings:",
			"    - category:extra_category",
			"    - og:title:extra_category",
			"    - category:category",
			"    - author:extra_author",
			"    - nocolon",
			"    - \":extra_category\"",
		), []string{
			`c.yaml:9:11: sources[0].extraction.meta_mappings[2]: field "category" must be named extra_*; did you mean "category:extra_category"?`,
			`c.yaml:10:11: sources[0].extraction.meta_mappings[3]: field extra_author is not declared in extra_fields (add "extra_author: keyword" there)`,
			`c.yaml:11:11: sources[0].extraction.meta_mappings[4]: "nocolon" must be metaname:extra_field, such as category:extra_category`,
			`c.yaml:12:11: sources[0].extraction.meta_mappings[5]: ":extra_category" must be metaname:extra_field, such as category:extra_category`,
		}},
		{"add_meta", "extra_fields: {extra_section: keyword}\n" + src("crawl_rules:",
			"  - match: {path: /news/}",
			"    add_meta: {section: news, topic: x, \"Bad-Key\": y}",
			"  - match: {path: /blog/}",
			"    add_meta: {section: a, extra_section: b}",
		), []string{
			`c.yaml:7:35: sources[0].crawl_rules[0].add_meta.topic: field extra_topic is not declared in extra_fields (add "extra_topic: keyword" there)`,
			`c.yaml:7:45: sources[0].crawl_rules[0].add_meta.Bad-Key: "Bad-Key" does not name an extra field (^extra_[a-z0-9_]+$, or the part after extra_)`,
			`c.yaml:9:20: sources[0].crawl_rules[1].add_meta.section: field extra_section is set twice (as section and extra_section)`,
		}},
	})
}

func TestGlobalSettingsAreValidated(t *testing.T) {
	runErrCases(t, []errCase{
		{"user agent product token", "user_agent: \"crawl space/1.0\"\n" + minimal, nil},
		{"user agent with a digit in its token", "user_agent: \"crawl2space/1.0\"\n" + minimal, []string{
			`c.yaml:1:13: user_agent: product token "crawl2space" (the first word, before any /) may hold only letters, _ and -: robots.txt user-agent lines are matched against it (RFC 9309)`,
		}},
		{"empty strings", "user_agent: \"\"\nstate_dir: \"\"\noutput: {file: \"\"}\n" + minimal, []string{
			`c.yaml:1:13: user_agent: must not be empty`,
			`c.yaml:2:12: state_dir: must not be empty`,
			`c.yaml:3:16: output.file: must not be empty when elasticsearch is not configured`,
		}},
		{"log", "log: {format: xml, level: verbose}\nmetrics_addr: localhost\n" + minimal, []string{
			`c.yaml:1:15: log.format: "xml" is not one of text, json`,
			`c.yaml:1:27: log.level: "verbose" is not one of debug, info, warn, error`,
			`c.yaml:2:15: metrics_addr: must be host:port, such as 127.0.0.1:9108 or :9108`,
		}},
		{"fetch", "fetch:\n  concurrency: 0\n  timeout: 0s\n  max_redirects: -1\n  max_links_per_page: 0\n  max_body_bytes: 0\n  proxy: \"ftp://proxy\"\n" + minimal, []string{
			`c.yaml:2:16: fetch.concurrency: must be between 1 and 512, got 0`,
			`c.yaml:3:12: fetch.timeout: must be between 10ms and 2h, got 0s`,
			`c.yaml:4:18: fetch.max_redirects: must be between 0 and 100, got -1`,
			`c.yaml:5:23: fetch.max_links_per_page: must be between 1 and 100000, got 0`,
			`c.yaml:6:19: fetch.max_body_bytes: must be between 1 and 1GiB, got 0`,
			`c.yaml:7:10: fetch.proxy: must be an absolute URL with scheme http, https or socks5 and a host`,
		}},
		{"missing CA file", "fetch: {ca_file: no-such-ca.pem}\n" + minimal, []string{
			`c.yaml:1:18: fetch.ca_file: cannot read no-such-ca.pem: no such file or directory`,
		}},
		{"elasticsearch", "elasticsearch:\n  addresses: [\"127.0.0.1:9200\", \"ftp://x\"]\n  index: Web\n  shards: 0\n  replicas: -1\n  bulk_workers: 0\n  bulk_flush_interval: 0s\n  username: elastic\n" + minimal, []string{
			`c.yaml:2:15: elasticsearch.addresses[0]: must be an absolute http:// or https:// URL with a host, such as http://127.0.0.1:9200`,
			`c.yaml:2:33: elasticsearch.addresses[1]: must be an absolute http:// or https:// URL with a host, such as http://127.0.0.1:9200`,
			`c.yaml:3:10: elasticsearch.index: "Web" must be lower-case`,
			`c.yaml:4:11: elasticsearch.shards: must be between 1 and 1024, got 0`,
			`c.yaml:5:13: elasticsearch.replicas: must be between 0 and 64, got -1`,
			`c.yaml:6:17: elasticsearch.bulk_workers: must be between 1 and 64, got 0`,
			`c.yaml:7:24: elasticsearch.bulk_flush_interval: must be between 10ms and 1h, got 0s`,
			`c.yaml:8:13: elasticsearch.username: password is required with username`,
		}},
		{"elasticsearch index names", "elasticsearch: {index: \"_web\", addresses: []}\n" + minimal, []string{
			`c.yaml:1:24: elasticsearch.index: "_web" must not start with -, _, + or .`,
			`c.yaml:1:43: elasticsearch.addresses: at least one address is required`,
		}},
		{"api key and password together", "elasticsearch: {api_key: k, username: u, password: p}\n" + minimal, []string{
			`c.yaml:1:26: elasticsearch.api_key: use either api_key or username and password, not both`,
		}},
		{"always ignored extensions", "always_ignored_extensions: [\"\"]\n" + minimal, []string{
			`c.yaml:1:29: always_ignored_extensions[0]: must not be empty`,
		}},
	})
}

// Secrets reach the config as passwords, API keys, header values and URLs
// with credentials; no error may repeat them, since errors go to logs and CI
// output.
func TestSecretsAreNeverEchoedInErrors(t *testing.T) {
	const secret = "Sup3rS3cret"
	for _, bad := range []string{
		"elasticsearch: {password: " + secret + "}\n" + minimal,
		"elasticsearch: {api_key: " + secret + ", username: u, password: " + secret + "}\n" + minimal,
		"elasticsearch: {addresses: [\"tcp://u:" + secret + "@h:9200\"]}\n" + minimal,
		"elasticsearch: {addresses: [\"http://u:" + secret + "@h:99999\"]}\n" + minimal,
		"elasticsearch: {password: [" + secret + "]}\n" + minimal,
		"fetch: {proxy: \"gopher://u:" + secret + "@proxy\"}\n" + minimal,
		"fetch: {proxy: \"http://u:" + secret + "@[::1\"}\n" + minimal,
		src("auth: {password: " + secret + "}"),
		src("auth: {username: \"a:b\", password: " + secret + "}"),
		src("headers: {X-Token: \"" + secret + "\\n\"}"),
		src("headers: {Authorization: \"Bearer "+secret+"\"}", "auth: {username: a, password: "+secret+"}"),
		"sources:\n  - name: a\n    start_urls: [\"http://u:" + secret + "@example.com/\"]\n",
		"sources:\n  - name: a\n    start_urls: [\"//u:" + secret + "@example.com/#x\"]\n",
		"sources:\n  - name: a\n    start_urls: [\"ftp://u:" + secret + "@example.com/\"]\n",
		"sources:\n  - name: a\n    start_urls: [\"https://u:" + secret + "@example.com:99999/\"]\n",
	} {
		got := errs(t, bad)
		if len(got) == 0 {
			t.Errorf("config accepted, want an error:\n%s", bad)
		}
		for _, e := range got {
			if strings.Contains(e, secret) {
				t.Errorf("error repeats a secret: %s", e)
			}
		}
	}
}

func TestCAFilesAreCheckedRelativeToTheConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte("fetch: {ca_file: ca.pem}\nelasticsearch: {ca_file: ca.pem}\n"+minimal), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "ca.pem")
	if c.Fetch.CAFile != want || c.Elasticsearch.CAFile != want {
		t.Errorf("ca files %q, %q; want %q", c.Fetch.CAFile, c.Elasticsearch.CAFile, want)
	}
}

// The mapping is the one list of extra field types: every type it maps is
// accepted here, and mapped as declared.
func TestEveryExtraTypeTheMappingSupportsIsAccepted(t *testing.T) {
	var b strings.Builder
	b.WriteString("extra_fields:\n")
	for _, typ := range docfields.ExtraTypes {
		b.WriteString("  extra_" + typ + ": " + typ + "\n")
	}
	c, err := Parse("c.yaml", []byte(b.String()+minimal))
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range docfields.ExtraTypes {
		if got := c.ExtraFields["extra_"+typ]; got != typ {
			t.Errorf("extra_%s has type %q, want %q", typ, got, typ)
		}
	}
}

// What the extractor of a source needs is checked here, once, at the key
// path of each mistake: the extractor trusts a loaded configuration.
func TestExtractionMistakesAreReportedAtTheirKeyPaths(t *testing.T) {
	got := errs(t, `extra_fields:
  extra_category:
fetch: {max_links_per_page: -1}
sources:
  - name: a
    start_urls: ["http://a.test/"]
  - name: b
    start_urls: ["http://b.test/"]
    extraction:
      remove_elements: [header, "bad name"]
      remove_classes: ["", "a<b"]
      meta_mappings: ["category:extra_category", "no-colon", "category:Extra_Bad", "category:extra_undeclared", ":extra_category", "category:doc_title"]
      title_order: [h1, subtitle, h1]
      max_body_bytes: 0
    crawl_rules:
      - match: {path: /x}
        add_meta: {section: x, extra_nope: y}
`)
	for _, path := range []string{
		"sources[1].extraction.max_body_bytes",
		"fetch.max_links_per_page",
		"sources[1].extraction.remove_elements[1]",
		"sources[1].extraction.remove_classes[0]",
		"sources[1].extraction.remove_classes[1]",
		"sources[1].extraction.title_order[1]",
		"sources[1].extraction.title_order[2]",
		"sources[1].extraction.meta_mappings[1]",
		"sources[1].extraction.meta_mappings[2]",
		"sources[1].extraction.meta_mappings[3]",
		"sources[1].extraction.meta_mappings[4]",
		"sources[1].extraction.meta_mappings[5]",
		"sources[1].crawl_rules[0].add_meta.extra_nope",
		"sources[1].crawl_rules[0].add_meta.section",
	} {
		if !slices.ContainsFunc(got, func(e string) bool { return strings.Contains(e, " "+path+": ") }) {
			t.Errorf("no error at %s in:\n%s", path, strings.Join(got, "\n"))
		}
	}
}
