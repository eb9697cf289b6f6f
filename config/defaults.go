package config

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/crawlspace/crawlspace/docfields"
)

// Defaults, applied after decoding to every key the file leaves out. A key
// written with no value ("key:" or "key: ~") counts as left out. An explicit
// empty list is kept: "honored_query_params: []" drops every query
// parameter, "ignored_extensions: []" ignores none, "remove_elements: []"
// removes none. Relative paths (state_dir, output.file, reject_list, both
// ca_file keys, the password_file and api_key_file keys) are resolved
// against the directory of the config file.
//
//	key                                     default
//	user_agent                              "crawlspace/0.1 (+https://github.com/crawlspace/crawlspace)"
//	state_dir                               .crawlspace
//	cluster.node_name                       the host name, when cluster.state_index is set and node_name_env is not
//	cluster.partitions, .lease_ttl          64, 30s, when cluster.state_index is set
//	cluster.elasticsearch (a block)         as elasticsearch: addresses, shards, replicas, request_timeout
//	output.file                             out/documents.ndjson, only when elasticsearch is absent
//	log.format, log.level                   text, info
//	service.address                         127.0.0.1:9108 when a service block is written; else
//	                                        metrics_addr, its older name (none: nothing listens)
//	service.notify[].timeout, .attempts, .queue   10s, 5, 100
//	elasticsearch (an empty block)          addresses [http://127.0.0.1:9200]
//	elasticsearch.index                     web
//	elasticsearch.shards, .replicas         1, 1 (write replicas: 0 for a single node: green, not yellow)
//	elasticsearch.bulk_flush_bytes          5000000 (5 MB)
//	elasticsearch.bulk_flush_interval       1s
//	elasticsearch.bulk_workers              2
//	elasticsearch.request_timeout           90s
//	fetch.concurrency                       16
//	fetch.connect_timeout                   10s
//	fetch.response_header_timeout           30s
//	fetch.timeout                           60s
//	fetch.max_body_bytes                    10485760 (10 MiB)
//	fetch.max_document_bytes                67108864 (64 MiB); less past concurrency 128, as
//	                                        concurrency × it stays within 8 GiB
//	fetch.max_redirects                     10
//	fetch.max_links_per_page                2000
//	documents.timeout                       60s
//	documents.max_memory_bytes              536870912 (512 MiB)
//	documents.max_unpacked_bytes            268435456 (256 MiB)
//	documents.max_entries                   10000
//	documents.max_xml_token_bytes           8388608 (8 MiB)
//	documents.tika                          none; its types [] when url is set
//	browser.path, .tabs                     /usr/bin/chromium, 2
//	browser.max_memory_bytes                2147483648 (2 GiB)
//	extra_fields.X (no type)                keyword
//	sources[].discovery                     true
//	sources[].use_sitemaps                  true
//	sources[].sitemap_limits                max_bytes 10485760 (10 MiB), max_urls 50000, max_depth 5,
//	                                        max_files 100
//	sources[].discovery_interval            1h
//	sources[].max_age                       48h
//	sources[].stay_on_start_hosts           true
//	sources[].schemes                       [http, https]
//	sources[].max_link_depth                10
//	sources[].max_path_depth                20
//	sources[].max_url_length                2048
//	sources[].follow_query_strings          true
//	sources[].honored_query_params          [id]
//	sources[].ignored_extensions            [default]
//	sources[].mime_types                    BuiltinTypes (HTML, PDF, Office, OpenDocument, RTF,
//	                                        plain text), then documents.tika.types
//	sources[].robots.obey                   true
//	sources[].politeness                    delay 0s, max_parallel_per_host 2, obey_crawl_delay true,
//	                                        max_crawl_delay 5m
//	sources[].extraction.remove_elements    [header, footer]
//	sources[].extraction.remove_classes     [noindex]
//	sources[].extraction.title_order        [title, meta, h1, url]
//	sources[].extraction.max_body_bytes     1048576 (1 MiB)
//	sources[].extraction.rules[].fields[].values   first
//	sources[].render                        enabled false, wait network_idle, timeout 20s;
//	                                        a crawl rule's render: enabled true, the source's for the rest
//	sources[].orphans                       keep
//	sources[].max_temporary_errors          3
//	sources[].budget                        max_urls 5000000, max_urls_per_host 1000000, max_hosts 10000,
//	                                        max_pages_per_cycle 2000000, max_pages_per_host_per_cycle 1000000
//	sources[].crawl_rules[].match...length.field   path
//
// After Load every *bool of a source (discovery, use_sitemaps,
// stay_on_start_hosts, follow_query_strings, robots.obey,
// politeness.obey_crawl_delay) and elasticsearch.replicas is non-nil; only
// the crawl rule actions index, follow and accept stay nil when unset,
// because unset there means "this rule does not decide".
// BuiltinTypes are the media types crawlspace reads itself, HTML first:
// a source's mime_types unless it says otherwise. provider's formats read
// exactly these (a test keeps the two lists equal).
var BuiltinTypes = []string{
	"text/html", "application/xhtml+xml",
	"application/pdf",
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	"application/vnd.openxmlformats-officedocument.presentationml.presentation",
	"application/vnd.oasis.opendocument.text",
	"application/vnd.oasis.opendocument.spreadsheet",
	"application/vnd.oasis.opendocument.presentation",
	"application/rtf", "text/rtf",
	"text/plain",
}

const (
	DefaultUserAgent = "crawlspace/0.1 (+https://github.com/crawlspace/crawlspace)"
	DefaultStateDir  = ".crawlspace"
	DefaultOutput    = "out/documents.ndjson"
	DefaultESAddress = "http://127.0.0.1:9200"
	DefaultIndex     = "web"
)

// The default budget of a source: well above what an ordinary site of a
// few hundred thousand pages needs (its pages, their redirects and the
// links it refuses), low enough that a spider trap stops with a store of
// some hundreds of megabytes rather than growing for as long as it runs.
const (
	DefaultMaxURLs                 = 5_000_000
	DefaultMaxURLsPerHost          = 1_000_000
	DefaultMaxHosts                = 10_000
	DefaultMaxPagesPerCycle        = 2_000_000
	DefaultMaxPagesPerHostPerCycle = 1_000_000
)

// The default guard against a cycle deleting much of a source's index
// (docs/config.md says why these): Algolia's crawler refuses to publish a
// crawl that lost more than 10% of the records; below 100 documents the
// count rules, so that a small source's ordinary edits (3 pages of 20)
// are not held every time.
const (
	DefaultHoldDeletesPercent  = 10
	DefaultHoldDeletesMinCount = 10
)

// Upper bounds of the budget keys: a billion URLs is some hundreds of
// gigabytes of state, and each host queued on costs the scheduler a few
// hundred bytes of memory while it has work.
const (
	maxBudgetURLs  = 1_000_000_000
	maxBudgetHosts = 1_000_000
)

// Bounds of elasticsearch.request_timeout. The default leaves room above
// the minute Elasticsearch itself waits for an unavailable shard before it
// answers a _bulk item with 503, and for a large _bulk on a busy node.
const (
	DefaultESRequestTimeout = 90 * time.Second
	MinESRequestTimeout     = time.Second
	MaxESRequestTimeout     = 10 * time.Minute
)

// Defaults of the embeddings keys. Passages of 200 tokens (about 230
// word pieces of all-MiniLM-L6-v2 on English documentation) stay within
// the 256 such models read; docs/semantic.md gives the measurements.
const (
	DefaultEmbedBatchSize      = 32
	DefaultEmbedMaxInFlight    = 2
	DefaultEmbedRequestTimeout = time.Minute
	DefaultPassageTokens       = 200
	DefaultPassageOverlap      = 40
	DefaultPassagesPerDocument = 256
)

func (e *Embeddings) setDefaults(p string, written func(string) bool, dir string) {
	defaultAt(written, p+".service", &e.Service, EmbedOpenAI)
	defaultAt(written, p+".similarity", &e.Similarity, "cosine")
	defaultAt(written, p+".index_type", &e.IndexType, "int8_hnsw")
	defaultAt(written, p+".batch_size", &e.BatchSize, DefaultEmbedBatchSize)
	defaultAt(written, p+".max_in_flight", &e.MaxInFlight, DefaultEmbedMaxInFlight)
	defaultAt(written, p+".request_timeout", &e.RequestTimeout, Duration(DefaultEmbedRequestTimeout))
	defaultAt(written, p+".on_failure", &e.OnFailure, OnFailureWait)
	defaultAt(written, p+".passages.max_tokens", &e.Passages.MaxTokens, DefaultPassageTokens)
	defaultAt(written, p+".passages.overlap_tokens", &e.Passages.OverlapTokens, DefaultPassageOverlap)
	defaultAt(written, p+".passages.max_per_document", &e.Passages.MaxPerDocument, DefaultPassagesPerDocument)
	defaultBool(&e.Passages.Title, true)
	defaultBool(&e.Passages.Headings, true)
	e.APIKeyFile = resolve(dir, e.APIKeyFile)
	e.CAFile = resolve(dir, e.CAFile)
}

func defaultAt[T any](written func(string) bool, path string, p *T, v T) {
	if !written(path) {
		*p = v
	}
}

func defaultBool(p **bool, v bool) {
	if *p == nil {
		*p = &v
	}
}

// Defaults of the cluster keys.
const (
	DefaultPartitions = 64
	DefaultLeaseTTL   = 30 * time.Second
)

// defaultNodeName is the machine's name: stable across restarts, so a
// restarted process takes its own partitions back at once.
func defaultNodeName() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "crawlspace"
	}
	return h
}

func defaultList(p *[]string, v ...string) {
	if *p == nil {
		*p = v
	}
}

// setDefaults fills what the file left out; written tells which key paths
// the file gave a value, so an explicit 0 or "" is kept for validation.
func (c *Config) setDefaults(written func(string) bool) {
	dir := filepath.Dir(c.File)
	defaultAt(written, "user_agent", &c.UserAgent, DefaultUserAgent)
	defaultAt(written, "state_dir", &c.StateDir, DefaultStateDir)
	c.StateDir = resolve(dir, c.StateDir)
	if c.Cluster.StateIndex != "" {
		if !written("cluster.node_name_env") {
			defaultAt(written, "cluster.node_name", &c.Cluster.NodeName, defaultNodeName())
		}
		defaultAt(written, "cluster.partitions", &c.Cluster.Partitions, DefaultPartitions)
		defaultAt(written, "cluster.lease_ttl", &c.Cluster.LeaseTTL, Duration(DefaultLeaseTTL))
	}
	if es := c.Cluster.Elasticsearch; es != nil {
		defaultList(&es.Addresses, DefaultESAddress)
		defaultAt(written, "cluster.elasticsearch.shards", &es.Shards, 1)
		if es.Replicas == nil {
			one := 1
			es.Replicas = &one
		}
		defaultAt(written, "cluster.elasticsearch.request_timeout", &es.RequestTimeout, Duration(DefaultESRequestTimeout))
		es.CAFile = resolve(dir, es.CAFile)
		es.PasswordFile = resolve(dir, es.PasswordFile)
		es.APIKeyFile = resolve(dir, es.APIKeyFile)
	}
	if c.Elasticsearch == nil {
		defaultAt(written, "output.file", &c.Output.File, DefaultOutput)
	}
	defaultAt(written, "output.index", &c.Output.Index, DefaultIndex)
	c.Output.File = resolve(dir, c.Output.File)
	c.setServiceDefaults(written, dir)
	defaultAt(written, "log.format", &c.Log.Format, "text")
	defaultAt(written, "log.level", &c.Log.Level, "info")

	if es := c.Elasticsearch; es != nil {
		defaultList(&es.Addresses, DefaultESAddress)
		defaultAt(written, "elasticsearch.index", &es.Index, DefaultIndex)
		defaultAt(written, "elasticsearch.shards", &es.Shards, 1)
		if es.Replicas == nil {
			one := 1
			es.Replicas = &one
		}
		defaultAt(written, "elasticsearch.bulk_flush_bytes", &es.BulkFlushBytes, 5_000_000)
		defaultAt(written, "elasticsearch.bulk_flush_interval", &es.BulkFlushInterval, Duration(time.Second))
		defaultAt(written, "elasticsearch.bulk_workers", &es.BulkWorkers, 2)
		defaultAt(written, "elasticsearch.request_timeout", &es.RequestTimeout, Duration(DefaultESRequestTimeout))
		es.CAFile = resolve(dir, es.CAFile)
		es.PasswordFile = resolve(dir, es.PasswordFile)
		es.APIKeyFile = resolve(dir, es.APIKeyFile)
		if e := es.Embeddings; e != nil {
			e.setDefaults("elasticsearch.embeddings", written, dir)
		}
	}

	f := &c.Fetch
	defaultAt(written, "fetch.concurrency", &f.Concurrency, 16)
	defaultAt(written, "fetch.connect_timeout", &f.ConnectTimeout, Duration(10*time.Second))
	defaultAt(written, "fetch.response_header_timeout", &f.ResponseHeaderTimeout, Duration(30*time.Second))
	defaultAt(written, "fetch.timeout", &f.Timeout, Duration(60*time.Second))
	defaultAt(written, "fetch.max_body_bytes", &f.MaxBodyBytes, 10<<20)
	// Documents in flight are held whole in memory like pages: a high
	// concurrency gets a smaller default, within what bodies may hold.
	docMax := int64(64 << 20)
	if n := int64(f.Concurrency); n > 0 && n <= maxConcurrency {
		docMax = min(docMax, maxBodiesInFlight/n)
	}
	defaultAt(written, "fetch.max_document_bytes", &f.MaxDocumentBytes, docMax)
	defaultAt(written, "fetch.max_redirects", &f.MaxRedirects, 10)
	defaultAt(written, "fetch.max_links_per_page", &f.MaxLinksPerPage, 2000)
	f.CAFile = resolve(dir, f.CAFile)

	d := &c.Documents
	defaultAt(written, "documents.timeout", &d.Timeout, Duration(time.Minute))
	defaultAt(written, "documents.max_memory_bytes", &d.MaxMemoryBytes, 512<<20)
	defaultAt(written, "documents.max_unpacked_bytes", &d.MaxUnpackedBytes, 256<<20)
	defaultAt(written, "documents.max_entries", &d.MaxEntries, 10000)
	defaultAt(written, "documents.max_xml_token_bytes", &d.MaxXMLTokenBytes, 8<<20)

	br := &c.Browser
	defaultAt(written, "browser.path", &br.Path, "/usr/bin/chromium")
	defaultAt(written, "browser.tabs", &br.Tabs, 2)
	defaultAt(written, "browser.max_memory_bytes", &br.MaxMemoryBytes, 2<<30)

	for name, typ := range c.ExtraFields {
		if typ == "" {
			c.ExtraFields[name] = docfields.DefaultExtraType
		}
	}

	for i := range c.Sources {
		s := &c.Sources[i]
		s.Index = i
		s.cfg = c
		s.setDefaults(SourcePath(i), written, dir)
	}
}

func (s *Source) setDefaults(p string, written func(string) bool, dir string) {
	at := func(key string) string { return p + "." + key }
	defaultBool(&s.Discovery, true)
	defaultBool(&s.UseSitemaps, true)
	defaultAt(written, at("sitemap_limits.max_bytes"), &s.SitemapLimits.MaxBytes, 10<<20)
	defaultAt(written, at("sitemap_limits.max_urls"), &s.SitemapLimits.MaxURLs, 50_000)
	defaultAt(written, at("sitemap_limits.max_depth"), &s.SitemapLimits.MaxDepth, 5)
	defaultAt(written, at("sitemap_limits.max_files"), &s.SitemapLimits.MaxFiles, 100)
	defaultAt(written, at("discovery_interval"), &s.DiscoveryInterval, Duration(time.Hour))
	defaultAt(written, at("max_age"), &s.MaxAge, Duration(48*time.Hour))
	defaultBool(&s.StayOnStartHosts, true)
	defaultList(&s.Schemes, "http", "https")
	defaultAt(written, at("max_link_depth"), &s.MaxLinkDepth, 10)
	defaultAt(written, at("max_path_depth"), &s.MaxPathDepth, 20)
	defaultAt(written, at("max_url_length"), &s.MaxURLLength, 2048)
	defaultBool(&s.FollowQueryStrings, true)
	defaultList(&s.HonoredQueryParams, "id")
	defaultList(&s.IgnoredExtensions, "default")
	if s.MimeTypes == nil && s.cfg != nil {
		s.MimeTypes = append(slices.Clone(BuiltinTypes), s.cfg.Documents.Tika.Types...)
	}
	s.RejectList = resolve(dir, s.RejectList)

	defaultBool(&s.Robots.Obey, true)
	defaultAt(written, at("politeness.max_parallel_per_host"), &s.Politeness.MaxParallelPerHost, 2)
	defaultBool(&s.Politeness.ObeyCrawlDelay, true)
	defaultAt(written, at("politeness.max_crawl_delay"), &s.Politeness.MaxCrawlDelay, Duration(5*time.Minute))

	e := &s.Extraction
	defaultList(&e.RemoveElements, "header", "footer")
	defaultList(&e.RemoveClasses, "noindex")
	defaultList(&e.TitleOrder, "title", "meta", "h1", "url")
	defaultAt(written, at("extraction.max_body_bytes"), &e.MaxBodyBytes, 1<<20)
	for j := range e.Rules {
		for f := range e.Rules[j].Fields {
			fr := &e.Rules[j].Fields[f]
			defaultAt(written, at("extraction.rules["+strconv.Itoa(j)+"].fields["+strconv.Itoa(f)+"].values"), &fr.Values, "first")
		}
	}

	r := &s.Render
	defaultBool(&r.Enabled, false)
	defaultAt(written, at("render.wait"), &r.Wait, "network_idle")
	defaultAt(written, at("render.timeout"), &r.Timeout, Duration(20*time.Second))
	for j := range s.CrawlRules {
		if cr := s.CrawlRules[j].Render; cr != nil {
			rp := p + ".crawl_rules[" + strconv.Itoa(j) + "].render."
			// A rule with a render block is written to render its section.
			defaultBool(&cr.Enabled, true)
			defaultAt(written, rp+"wait", &cr.Wait, r.Wait)
			if !written(rp+"selector") && !written(rp+"wait") {
				cr.Selector = r.Selector
			}
			defaultAt(written, rp+"timeout", &cr.Timeout, r.Timeout)
		}
	}

	defaultAt(written, at("orphans"), &s.Orphans, "keep")
	defaultAt(written, at("max_temporary_errors"), &s.MaxTemporaryErrors, 3)

	b := &s.Budget
	defaultAt(written, at("budget.max_urls"), &b.MaxURLs, DefaultMaxURLs)
	defaultAt(written, at("budget.max_urls_per_host"), &b.MaxURLsPerHost, DefaultMaxURLsPerHost)
	defaultAt(written, at("budget.max_hosts"), &b.MaxHosts, DefaultMaxHosts)
	defaultAt(written, at("budget.max_pages_per_cycle"), &b.MaxPagesPerCycle, DefaultMaxPagesPerCycle)
	defaultAt(written, at("budget.max_pages_per_host_per_cycle"), &b.MaxPagesPerHostPerCycle, DefaultMaxPagesPerHostPerCycle)
	defaultAt(written, at("hold_deletes.percent"), &s.HoldDeletes.Percent, DefaultHoldDeletesPercent)
	defaultAt(written, at("hold_deletes.min_count"), &s.HoldDeletes.MinCount, DefaultHoldDeletesMinCount)

	if s.Auth != nil {
		s.Auth.setDefaults(at("auth"), written, dir)
	}

	for j := range s.CrawlRules {
		defaultMatch(&s.CrawlRules[j].Match, p+".crawl_rules["+strconv.Itoa(j)+"].match", written)
	}
}

func defaultMatch(m *Match, p string, written func(string) bool) {
	for i := range m.And {
		defaultMatch(&m.And[i], p+".and["+strconv.Itoa(i)+"]", written)
	}
	for i := range m.Or {
		defaultMatch(&m.Or[i], p+".or["+strconv.Itoa(i)+"]", written)
	}
	if m.Not != nil {
		defaultMatch(m.Not, p+".not", written)
	}
	if m.Length != nil {
		// Exalead's Length shortcut "specifies the length of the URL path".
		defaultAt(written, p+".length.field", &m.Length.Field, "path")
	}
}

// resolve makes a relative path relative to the config file's directory, so
// a config means the same files whatever directory crawlspace starts in.
func resolve(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}
