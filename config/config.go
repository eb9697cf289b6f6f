// Package config loads, defaults and validates a crawlspace configuration.
//
// docs/config.md documents every key. Loading is strict: an
// unknown key is an error, and every error names the file, line, column and
// key path it is about, so an administrator can jump straight to it.
package config

import (
	"fmt"
	"strconv"
	"time"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/passage"
)

// Config is one crawlspace configuration file.
type Config struct {
	// Elasticsearch is nil when the file sink is used instead.
	Elasticsearch *Elasticsearch `yaml:"elasticsearch"`
	Output        Output         `yaml:"output"`
	// StateDir holds the embedded state store: frontier, per-URL state, validators.
	StateDir  string `yaml:"state_dir"`
	UserAgent string `yaml:"user_agent"`
	// AllowPrivateNetworks permits requests to loopback, link-local and private
	// ranges. Off by default so a crawler inside a network cannot be steered
	// at internal services by a link on a public page.
	AllowPrivateNetworks bool `yaml:"allow_private_networks"`
	// MetricsAddr is the older spelling of Service.Address; after Load both
	// hold the service's address.
	MetricsAddr string `yaml:"metrics_addr"`
	// Service is the address of `crawlspace run`: metrics, the status page
	// and the control API, and the notifications of its cycles.
	Service Service `yaml:"service"`
	// Log controls the structured log (text or json).
	Log Log `yaml:"log"`
	// Fetch holds the limits shared by every source: global concurrency,
	// timeouts, size caps, proxy and TLS.
	Fetch Fetch `yaml:"fetch"`
	// Documents bounds how document files are read, and names the Tika
	// server that reads the formats crawlspace does not read itself.
	Documents Documents `yaml:"documents"`
	// Browser is the headless Chromium that renders the pages of sources
	// and crawl rules with render enabled (docs/rendering.md).
	Browser Browser `yaml:"browser"`
	// ExtraFields declares the custom document fields (named extra_*) and
	// their Elasticsearch types; a field declared with no type is keyword.
	ExtraFields map[string]string `yaml:"extra_fields"`
	// AlwaysIgnoredExtensions are ignored by every source, whatever its own list says.
	AlwaysIgnoredExtensions []string `yaml:"always_ignored_extensions"`
	Sources                 []Source `yaml:"sources"`

	// Cluster, when its state_index is set, keeps the state in
	// Elasticsearch instead of state_dir, so that several processes
	// share one crawl (docs/cluster.md).
	Cluster Cluster `yaml:"cluster"`

	// File is the path the configuration was loaded from.
	File string `yaml:"-"`
	// positions maps a key path such as "sources[0].exclude[2]" to where its
	// value starts in File, for errors and for explain's rule references.
	positions map[string]Position
}

// Elasticsearch is the target cluster. Index is an alias; documents live in a
// versioned physical index behind it.
type Elasticsearch struct {
	Addresses   []string `yaml:"addresses"`
	Index       string   `yaml:"index"`
	Credentials `yaml:",inline"`
	CAFile      string `yaml:"ca_file"`
	// InsecureSkipVerify disables TLS certificate checks; logged loudly when set.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
	Shards             int  `yaml:"shards"`
	// Replicas is a pointer so 0 (the right value for a single node) can be told from unset.
	Replicas *int `yaml:"replicas"`
	// BulkFlushBytes and BulkFlushInterval bound how long a document waits in the bulk buffer.
	BulkFlushBytes    int      `yaml:"bulk_flush_bytes"`
	BulkFlushInterval Duration `yaml:"bulk_flush_interval"`
	BulkWorkers       int      `yaml:"bulk_workers"`
	// RequestTimeout bounds each request to the cluster: connecting, the
	// TLS handshake and the wait for the answer. A node that takes longer
	// is treated as unreachable and the writes are sent again.
	RequestTimeout Duration `yaml:"request_timeout"`
	// Pipeline is the ingest pipeline every write goes through (the _bulk
	// pipeline parameter); empty for none, or the index's default.
	Pipeline string `yaml:"pipeline"`
	// RefreshInterval is index.refresh_interval of the physical index;
	// zero leaves Elasticsearch's default.
	RefreshInterval Duration `yaml:"refresh_interval"`
	// Analysis is index.analysis of the physical index: section (analyzer,
	// tokenizer, filter, char_filter, normalizer) → name → definition, as
	// Elasticsearch takes them.
	Analysis map[string]map[string]any `yaml:"analysis"`
	// Analyzers sets the analyzer of text fields: field → analyzer name.
	Analyzers map[string]string `yaml:"analyzers"`
	// Subfields adds multi-fields to fields: field → name → mapping.
	Subfields map[string]map[string]map[string]any `yaml:"subfields"`
	// Embeddings cuts every document into passages and gives each a vector
	// from an embedding service, for semantic and hybrid search
	// (docs/semantic.md); nil for an index searched by words alone.
	Embeddings *Embeddings `yaml:"embeddings"`
}

// Embedding services.
const (
	// EmbedOpenAI is an OpenAI-compatible POST /v1/embeddings: OpenAI's
	// own, Ollama, vLLM, text-embeddings-inference, LocalAI.
	EmbedOpenAI = "openai"
	// EmbedElasticsearch is an inference endpoint of the documents'
	// cluster: POST _inference/text_embedding/<inference_id>.
	EmbedElasticsearch = "elasticsearch"
)

// What a document waits for when its passages cannot be embedded.
const (
	// OnFailureWait keeps the document pending until its vectors come.
	OnFailureWait = "wait"
	// OnFailureIndex writes it without vectors (searchable by words) and
	// sends it again in the next cycle.
	OnFailureIndex = "index_without_vectors"
)

// Embeddings is the embedding service of an index and how documents are
// cut into passages for it.
type Embeddings struct {
	Service string `yaml:"service"`
	// URL is the OpenAI-compatible API's base, ending in /v1 (the
	// request goes to URL/embeddings).
	URL string `yaml:"url"`
	// InferenceID names the elasticsearch service's inference endpoint.
	InferenceID string `yaml:"inference_id"`
	// Model is the model asked for; with an inference endpoint it only
	// names the model for the fingerprint (the endpoint knows its own).
	Model string `yaml:"model"`
	// Dimensions is the length of the model's vectors, checked against
	// every answer.
	Dimensions int    `yaml:"dimensions"`
	Similarity string `yaml:"similarity"`
	// IndexType is the dense_vector's index_options type.
	IndexType string `yaml:"index_type"`
	// BatchSize is the most texts one request carries; MaxInFlight the
	// requests at once.
	BatchSize      int      `yaml:"batch_size"`
	MaxInFlight    int      `yaml:"max_in_flight"`
	RequestTimeout Duration `yaml:"request_timeout"`
	// APIKey is sent as "Authorization: Bearer KEY" (openai); written as
	// api_key, api_key_env or api_key_file like every secret.
	APIKey     string `yaml:"api_key"`
	APIKeyEnv  string `yaml:"api_key_env"`
	APIKeyFile string `yaml:"api_key_file"`
	// CAFile is added to the system's roots to verify the service's
	// certificate.
	CAFile   string   `yaml:"ca_file"`
	Passages Passages `yaml:"passages"`
	// OnFailure is wait (the default) or index_without_vectors.
	OnFailure string `yaml:"on_failure"`
}

// Passages says how documents are cut and what of them is embedded.
type Passages struct {
	MaxTokens      int `yaml:"max_tokens"`
	OverlapTokens  int `yaml:"overlap_tokens"`
	MaxPerDocument int `yaml:"max_per_document"`
	// Title and Headings put the document's title and the passage's
	// heading path before its text in what is embedded.
	Title    *bool `yaml:"title"`
	Headings *bool `yaml:"headings"`
}

// Cluster is the state store shared by several crawlspace processes: the
// frontier in indices of the elasticsearch cluster, hosts split into
// partitions, each partition leased by one live process.
type Cluster struct {
	// StateIndex prefixes the state indices (-urls, -links, -meta); empty
	// keeps the embedded store under state_dir.
	StateIndex string `yaml:"state_index"`
	// NodeName names this process among the others; unique per process.
	// NodeNameEnv names an environment variable holding it instead (a
	// Kubernetes pod's name, given by the downward API).
	NodeName    string   `yaml:"node_name"`
	NodeNameEnv string   `yaml:"node_name_env"`
	Partitions  int      `yaml:"partitions"`
	LeaseTTL    Duration `yaml:"lease_ttl"`
	// Elasticsearch is the cluster holding the state when it is not the
	// documents' (nil: the state lives beside the documents).
	Elasticsearch *StateConnection `yaml:"elasticsearch"`
}

// Credentials are what a connection to a cluster signs in with: a user
// and password, or an API key. Each secret may be written as is, named by
// an environment variable (password_env) or read from a file
// (password_file), as every secret; after Load Password and APIKey hold
// it.
type Credentials struct {
	Username     string `yaml:"username"`
	Password     string `yaml:"password"`
	PasswordEnv  string `yaml:"password_env"`
	PasswordFile string `yaml:"password_file"`
	APIKey       string `yaml:"api_key"`
	APIKeyEnv    string `yaml:"api_key_env"`
	APIKeyFile   string `yaml:"api_key_file"`
}

// StateConnection reaches the cluster holding the shared state: the
// connection keys of Elasticsearch, same names, defaults and checks, and
// the shards and replicas its URL index is created with.
type StateConnection struct {
	Addresses          []string `yaml:"addresses"`
	Credentials        `yaml:",inline"`
	CAFile             string   `yaml:"ca_file"`
	InsecureSkipVerify bool     `yaml:"insecure_skip_verify"`
	Shards             int      `yaml:"shards"`
	Replicas           *int     `yaml:"replicas"`
	RequestTimeout     Duration `yaml:"request_timeout"`
}

// connection is s as the Elasticsearch connection it describes.
func (s *StateConnection) connection() *Elasticsearch {
	return &Elasticsearch{Addresses: s.Addresses, Credentials: s.Credentials, CAFile: s.CAFile, InsecureSkipVerify: s.InsecureSkipVerify, Shards: s.Shards, Replicas: s.Replicas,
		RequestTimeout: s.RequestTimeout}
}

// StateCluster is the connection to the cluster holding the shared
// state: cluster.elasticsearch when set, else the documents' cluster (nil
// when there is neither).
func (c *Config) StateCluster() *Elasticsearch {
	if c.Cluster.Elasticsearch != nil {
		return c.Cluster.Elasticsearch.connection()
	}
	return c.Elasticsearch
}

// Output is the file sink, used when Elasticsearch is not configured.
type Output struct {
	// File receives Elasticsearch _bulk NDJSON: one action line and one source line per document.
	File string `yaml:"file"`
	// Index names the target index in the action lines, for replaying the file into a cluster.
	Index string `yaml:"index"`
}

// Log configures the structured log.
type Log struct {
	Format string `yaml:"format"` // text (default) or json
	Level  string `yaml:"level"`  // debug, info (default), warn, error
}

// Fetch holds the HTTP client settings shared by every source.
type Fetch struct {
	// Concurrency bounds requests in flight across all sources and hosts.
	Concurrency           int      `yaml:"concurrency"`
	ConnectTimeout        Duration `yaml:"connect_timeout"`
	ResponseHeaderTimeout Duration `yaml:"response_header_timeout"`
	Timeout               Duration `yaml:"timeout"`
	MaxBodyBytes          int64    `yaml:"max_body_bytes"`
	// MaxDocumentBytes caps the body of every response that is not an
	// HTML page: PDFs and Office files are often far larger than pages.
	MaxDocumentBytes   int64  `yaml:"max_document_bytes"`
	MaxRedirects       int    `yaml:"max_redirects"`
	MaxLinksPerPage    int    `yaml:"max_links_per_page"`
	Proxy              string `yaml:"proxy"`
	CAFile             string `yaml:"ca_file"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// Documents bounds the reading of one document file (PDF, Office,
// OpenDocument, RTF, text).
type Documents struct {
	// Timeout bounds one file's extraction.
	Timeout Duration `yaml:"timeout"`
	// MaxMemoryBytes bounds the memory the PDF reader's sandbox may use for one
	// file.
	MaxMemoryBytes int64 `yaml:"max_memory_bytes"`
	// MaxUnpackedBytes and MaxEntries bound what a zip-based file (Office,
	// OpenDocument) may unpack to.
	MaxUnpackedBytes int64 `yaml:"max_unpacked_bytes"`
	MaxEntries       int   `yaml:"max_entries"`
	// MaxXMLTokenBytes bounds one XML token of such a file: a text run, or
	// a tag with its attributes.
	MaxXMLTokenBytes int64 `yaml:"max_xml_token_bytes"`
	Tika             Tika  `yaml:"tika"`
}

// Tika is an Apache Tika server that reads the media types listed, such
// as the legacy binary Office formats.
type Tika struct {
	URL   string   `yaml:"url"`
	Types []string `yaml:"types"`
}

// Source is one site or group of sites with its own crawl space.
type Source struct {
	Name      string   `yaml:"name"`
	StartURLs []string `yaml:"start_urls"`
	// Discovery false crawls only start URLs, sitemaps and feeds.
	Discovery         *bool    `yaml:"discovery"`
	Sitemaps          []string `yaml:"sitemaps"`
	UseSitemaps       *bool    `yaml:"use_sitemaps"`
	SitemapLimits     Sitemaps `yaml:"sitemap_limits"`
	Feeds             []string `yaml:"feeds"`
	DiscoveryInterval Duration `yaml:"discovery_interval"`
	MaxAge            Duration `yaml:"max_age"`

	StayOnStartHosts   *bool    `yaml:"stay_on_start_hosts"`
	StayInStartDir     bool     `yaml:"stay_in_start_dir"`
	Schemes            []string `yaml:"schemes"`
	MaxLinkDepth       int      `yaml:"max_link_depth"`
	MaxPathDepth       int      `yaml:"max_path_depth"`
	MaxURLLength       int      `yaml:"max_url_length"`
	FollowQueryStrings *bool    `yaml:"follow_query_strings"`
	// HonoredQueryParams are kept; every other query parameter is dropped
	// before a URL is queued. "*" keeps them all.
	HonoredQueryParams []string `yaml:"honored_query_params"`
	Include            []string `yaml:"include"`
	Exclude            []string `yaml:"exclude"`
	// IgnoredExtensions: "default" stands for the Smartsite default list.
	IgnoredExtensions []string    `yaml:"ignored_extensions"`
	MimeTypes         []string    `yaml:"mime_types"`
	Rules             []string    `yaml:"rules"`
	CrawlRules        []CrawlRule `yaml:"crawl_rules"`
	KillExact         []string    `yaml:"kill_exact"`
	KillPatterns      []string    `yaml:"kill_patterns"`
	RejectList        string      `yaml:"reject_list"`

	Robots     Robots     `yaml:"robots"`
	Politeness Politeness `yaml:"politeness"`
	Extraction Extraction `yaml:"extraction"`
	// Render renders the source's HTML pages in the browser before they
	// are read; crawl rules may say otherwise for their URLs.
	Render Render `yaml:"render"`

	// Orphans decides what happens to known pages no longer linked from
	// anywhere: keep (default), recheck or delete.
	Orphans string `yaml:"orphans"`
	// KeepDuplicates indexes each URL of a set serving the same content on
	// its own, instead of one document listing the others. Negative, so
	// that its zero is the default.
	KeepDuplicates bool `yaml:"keep_duplicates"`
	// MaxTemporaryErrors is how many temporary errors in a row delete a document.
	MaxTemporaryErrors int `yaml:"max_temporary_errors"`
	// Budget bounds what the source may hold in the state store and fetch
	// in one cycle, so a spider trap stops at a bounded size.
	Budget Budget `yaml:"budget"`
	// HoldDeletes holds back the deletes of a cycle that would take too
	// large a share of the source's documents (a site answering 404
	// everywhere, robots.txt disallowing all, a lost login) until a later
	// visit decides them again or an operator confirms them.
	HoldDeletes HoldDeletes `yaml:"hold_deletes"`
	// Auth and Headers are sent only to the hosts of this source's start URLs.
	Auth    *Auth             `yaml:"auth"`
	Headers map[string]string `yaml:"headers"`

	// Index is the source's place in Config.Sources; SourcePath(Index) is
	// the key path other packages hand to Config.Errorf and Config.Ref.
	Index int `yaml:"-"`
	// cfg is the configuration the source was loaded from, so Fingerprint
	// can include the global keys that shape this source's crawl space.
	cfg *Config
}

// Browser is the Chromium process shared by every source that renders.
type Browser struct {
	// Path is the Chromium executable (Debian's chromium package).
	Path string `yaml:"path"`
	// Tabs bounds the pages rendered at once.
	Tabs int `yaml:"tabs"`
	// MaxMemoryBytes bounds the resident memory of the browser's processes
	// together; past it the browser is restarted between pages.
	MaxMemoryBytes int64 `yaml:"max_memory_bytes"`
}

// Render says whether and how HTML pages are rendered in the browser.
type Render struct {
	// Enabled is nil in a crawl rule that leaves it to the source.
	Enabled *bool `yaml:"enabled"`
	// Wait is what the DOM is taken after: load, network_idle or element.
	Wait string `yaml:"wait"`
	// Selector is the CSS selector wait: element waits for.
	Selector string `yaml:"selector"`
	// Timeout bounds the wait: the DOM is taken as it is then.
	Timeout Duration `yaml:"timeout"`
}

// Renders says whether any source or crawl rule renders pages.
func (c *Config) Renders() bool {
	for i := range c.Sources {
		s := &c.Sources[i]
		if s.Render.Enabled != nil && *s.Render.Enabled {
			return true
		}
		for j := range s.CrawlRules {
			if r := s.CrawlRules[j].Render; r != nil && r.Enabled != nil && *r.Enabled {
				return true
			}
		}
	}
	return false
}

// Sitemaps caps the work one sitemap file may cost.
type Sitemaps struct {
	MaxBytes int64 `yaml:"max_bytes"`
	MaxURLs  int   `yaml:"max_urls"`
	MaxDepth int   `yaml:"max_depth"`
	// MaxFiles bounds the sitemap and feed files a source reads in one
	// cycle, child files of an index included: the count of the requests
	// and of the files waiting to be read.
	MaxFiles int `yaml:"max_files"`
}

// Budget bounds one source. The URL limits are totals, kept across cycles:
// they bound the state store. The page limits count the requests of one
// cycle: they bound how long a cycle runs.
type Budget struct {
	// MaxURLs bounds the URLs the store holds for the source, in any state
	// (refused ones included); a URL found beyond it is counted, not stored.
	MaxURLs int64 `yaml:"max_urls"`
	// MaxURLsPerHost is MaxURLs for the source's URLs on one host.
	MaxURLsPerHost int64 `yaml:"max_urls_per_host"`
	// MaxHosts bounds the hosts the source queues URLs on.
	MaxHosts int64 `yaml:"max_hosts"`
	// MaxPagesPerCycle bounds the requests of one cycle; what is still
	// queued then waits for the next cycle.
	MaxPagesPerCycle int64 `yaml:"max_pages_per_cycle"`
	// MaxPagesPerHostPerCycle is MaxPagesPerCycle for one host.
	MaxPagesPerHostPerCycle int64 `yaml:"max_pages_per_host_per_cycle"`
}

// HoldDeletes is a source's guard against losing much of its index in
// one cycle: a cycle whose deletes are more than MinCount and more than
// Percent of the source's documents holds them.
type HoldDeletes struct {
	// Percent is the share of the source's documents, in percent, that
	// one cycle may delete; 100 never holds (and sends every delete as it
	// is decided).
	Percent int `yaml:"percent"`
	// MinCount is how many deletes one cycle may make whatever their share.
	MinCount int64 `yaml:"min_count"`
}

// CrawlRule is an Exalead-style rule: a boolean match tree and the actions
// taken when it matches. The first matching rule of a source gives the actions.
type CrawlRule struct {
	Match Match `yaml:"match"`
	// Unset actions leave the decision to the other rule forms.
	Index    *bool             `yaml:"index"`
	Follow   *bool             `yaml:"follow"`
	Accept   *bool             `yaml:"accept"`
	Ignore   bool              `yaml:"ignore"`
	Source   string            `yaml:"source"`
	Priority int               `yaml:"priority"`
	AddMeta  map[string]string `yaml:"add_meta"`
	// Render, when given, is the rendering of the rule's URLs: its unset
	// keys are the source's.
	Render *Render `yaml:"render"`
}

// Match is one node of a crawl rule tree; exactly one of its fields is set.
type Match struct {
	And []Match `yaml:"and"`
	Or  []Match `yaml:"or"`
	Not *Match  `yaml:"not"`

	Atom *Atom `yaml:"atom"`

	// Shortcuts, as in the Exalead seed.
	Domain  *string `yaml:"domain"`
	Host    *string `yaml:"host"`
	Path    *string `yaml:"path"`
	Ext     *string `yaml:"ext"`
	URL     *string `yaml:"url"`
	Scheme  *string `yaml:"scheme"`
	Query   *string `yaml:"query"`
	InQuery *string `yaml:"inquery"`
	Length  *Length `yaml:"length"`
}

// Atom is the generic crawl rule test.
type Atom struct {
	Field string `yaml:"field"` // url|scheme|host|path|query
	Kind  string `yaml:"kind"`  // exact|prefix|suffix|inside|length
	Norm  string `yaml:"norm"`  // none|lower|norm
	Value string `yaml:"value"`
}

// Length tests the length of a URL part against a range such as "[30:]".
type Length struct {
	Field string `yaml:"field"`
	Value string `yaml:"value"`
}

// Robots controls obedience to robots.txt and robots directives.
type Robots struct {
	// Obey false ignores robots.txt and meta robots; it is warned about in the log and report.
	Obey           *bool `yaml:"obey"`
	IgnoreNofollow bool  `yaml:"ignore_nofollow"`
	IgnoreNoindex  bool  `yaml:"ignore_noindex"`
}

// Politeness limits the load put on each host.
type Politeness struct {
	Delay              Duration `yaml:"delay"`
	MaxParallelPerHost int      `yaml:"max_parallel_per_host"`
	ObeyCrawlDelay     *bool    `yaml:"obey_crawl_delay"`
	// MaxCrawlDelay is the longest robots.txt Crawl-delay honoured; a
	// longer one is cut to it, and said so.
	MaxCrawlDelay Duration `yaml:"max_crawl_delay"`
}

// Extraction controls how a page becomes a document.
type Extraction struct {
	RemoveElements []string `yaml:"remove_elements"`
	RemoveClasses  []string `yaml:"remove_classes"`
	// MetaMappings are "metaname:extra_field" pairs; values accumulate.
	MetaMappings []string `yaml:"meta_mappings"`
	// TitleOrder is the order of title fallbacks: title, meta, h1, url.
	TitleOrder   []string `yaml:"title_order"`
	MaxBodyBytes int      `yaml:"max_body_bytes"`

	// Rules fill extra fields from CSS selectors, the URL or fixed values,
	// each for the pages its include and exclude patterns select.
	Rules []ExtractionRule `yaml:"rules"`
	// StructuredDataMappings are "[Type.]property.path:extra_field" pairs
	// read from schema.org JSON-LD, microdata and RDFa lite.
	StructuredDataMappings []string `yaml:"structured_data_mappings"`
	// IgnoreStructuredData reads no structured data at all: neither the
	// mappings nor the defaults for doc_modified, doc_author and
	// doc_description. Negative, so that its zero is the default.
	IgnoreStructuredData bool `yaml:"ignore_structured_data"`
	// Languages are the ISO 639-1 codes language detection chooses among
	// for a page that declares none; empty: every language it knows.
	Languages []string `yaml:"languages"`
	// NoLanguageDetection leaves doc_language empty when a page declares
	// no language.
	NoLanguageDetection bool `yaml:"no_language_detection"`
}

// ExtractionRule fills extra fields for the pages it selects: those that
// match one of Include (or every page when it is empty) and none of
// Exclude, in the forms of a source's include and exclude.
type ExtractionRule struct {
	Include []string    `yaml:"include"`
	Exclude []string    `yaml:"exclude"`
	Fields  []FieldRule `yaml:"fields"`
}

// FieldRule fills one extra field from exactly one of Selector, URL and
// Value.
type FieldRule struct {
	Field string `yaml:"field"`
	// Selector is a CSS selector; the element's text, or its Attribute.
	Selector  string `yaml:"selector"`
	Attribute string `yaml:"attribute"`
	// Values is first (the first non-empty value) or all.
	Values string `yaml:"values"`
	// URL is a regular expression on the page's URL: its first group's
	// match, or the whole match without a group.
	URL string `yaml:"url"`
	// Value is a fixed value.
	Value *string `yaml:"value"`
}

// Duration is a time.Duration written as "1h30m" in YAML.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Position is a place in a configuration file.
type Position struct {
	Line, Column int
}

// IndexOptions are the settings of the physical index a team sets here, in
// the form docfields builds the index from and names it by.
func (es *Elasticsearch) IndexOptions() docfields.IndexOptions {
	o := docfields.IndexOptions{Analysis: es.Analysis, Analyzers: es.Analyzers, Subfields: es.Subfields}
	if es.RefreshInterval > 0 {
		o.RefreshInterval = strconv.FormatInt(es.RefreshInterval.D().Milliseconds(), 10) + "ms"
	}
	if e := es.Embeddings; e != nil {
		p := e.Passages
		o.Vectors = &docfields.Vectors{Dims: e.Dimensions, Similarity: e.Similarity, IndexType: e.IndexType,
			Fingerprint: fmt.Sprintf("%s; passages v%d of %d tokens, %d overlap, at most %d, title %t, headings %t",
				e.ModelID(), passage.Version, p.MaxTokens, p.OverlapTokens, p.MaxPerDocument, *p.Title, *p.Headings)}
	}
	return o
}

// ModelID names the model whose vectors the passages get: what makes the
// same text embed the same way, and so part of every passage's hash. The
// service's address is not in it: the same model elsewhere gives the same
// vectors.
func (e *Embeddings) ModelID() string {
	name := e.Model
	if e.Service == EmbedElasticsearch && name == "" {
		name = e.InferenceID
	}
	return e.Service + ":" + name + ":" + strconv.Itoa(e.Dimensions)
}
