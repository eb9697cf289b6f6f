package config

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/andybalholm/cascadia"
	"golang.org/x/net/http/httpguts"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/urlnorm"
)

var (
	// Source names end up in document fields, state keys and metric labels.
	sourceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	// RFC 9309 product tokens: what robots.txt user-agent lines are matched against.
	productToken = regexp.MustCompile(`^[A-Za-z_-]+$`)
	elementName  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*$`)
	mimeType     = regexp.MustCompile(`^[a-z0-9!#$&^_.+-]+/([a-z0-9!#$&^_.+-]+|\*)$`)
)

// headers the HTTP client owns; setting them per source breaks requests.
var reservedHeaders = []string{"Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Upgrade"}

type checker struct {
	c *Config
	// bad holds the key paths that already failed to decode; no error is
	// added at or below them. unknown holds the mappings with an unknown key.
	bad, unknown map[string]bool
	// numbers holds every number as the file wrote it; overflow those too
	// large for their type, decoded as its extreme for a range check to
	// report, that no range check has reported yet.
	numbers  map[string]string
	overflow map[string]bool
	errs     Errors
}

// check validates a defaulted config decoded by d.
func (c *Config) check(d *decoder) Errors {
	k := &checker{c: c, bad: d.bad, unknown: d.unknown, numbers: d.numbers, overflow: d.overflow}
	k.global()
	for i := range c.Sources {
		k.source(i)
	}
	// Every number has a range check; this is for one added without.
	for _, p := range slices.Sorted(maps.Keys(k.overflow)) {
		k.errorf(p, "%s is out of range", k.numbers[p])
	}
	return k.errs
}

func (k *checker) errorf(path, format string, args ...any) {
	for p := path; p != ""; p = parentPath(p) {
		if k.bad[p] {
			return
		}
	}
	// A key missing beside an unknown one is most likely that key
	// misspelled; the unknown key's error, with its suggestion, says it.
	if !k.has(path) && k.unknown[parentPath(path)] {
		return
	}
	k.errs = append(k.errs, k.c.Errorf(path, format, args...))
}

// has reports whether path was written in the file.
func (k *checker) has(path string) bool {
	_, ok := k.c.positions[path]
	return ok
}

func (k *checker) oneOf(path, v string, allowed ...string) {
	if !slices.Contains(allowed, v) {
		k.errorf(path, "%q is not one of %s", v, strings.Join(allowed, ", "))
	}
}

// inRange checks that v is from lo to hi, both included, and reports the
// value as the file wrote it, with bounds formatted by show.
func (k *checker) inRange(path string, v, lo, hi int64, show func(int64) string) bool {
	delete(k.overflow, path)
	if lo <= v && v <= hi {
		return true
	}
	got, ok := k.numbers[path]
	if !ok {
		got = show(v)
	}
	k.errorf(path, "must be between %s and %s, got %s", show(lo), show(hi), got)
	return false
}

func (k *checker) between(path string, v, lo, hi int64) bool {
	return k.inRange(path, v, lo, hi, func(n int64) string { return strconv.FormatInt(n, 10) })
}

func (k *checker) size(path string, v, lo, hi int64) bool {
	return k.inRange(path, v, lo, hi, formatSize)
}

func (k *checker) span(path string, d, lo, hi Duration) bool {
	return k.inRange(path, int64(d), int64(lo), int64(hi), func(n int64) string { return formatDuration(time.Duration(n)) })
}

// formatSize writes a byte count the way a config may: 64MiB, 1GiB, 1000.
func formatSize(n int64) string {
	for _, u := range []struct {
		unit  string
		shift uint
	}{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.unit
		}
	}
	return strconv.FormatInt(n, 10)
}

// formatDuration writes a duration without zero minutes and seconds: 1h,
// 10m, 8760h, 1h30m, 10ms.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func (k *checker) nonEmpty(path, v string) bool {
	if strings.TrimSpace(v) == "" {
		k.errorf(path, "must not be empty")
		return false
	}
	return true
}

func (k *checker) entries(path string, list []string) {
	for i, v := range list {
		k.nonEmpty(indexPath(path, i), v)
	}
}

func (k *checker) readable(path, file string) {
	if file == "" {
		return
	}
	if _, err := os.Stat(file); err != nil {
		k.errorf(path, "cannot read %s: %s", file, pathErr(err))
	}
}

func (k *checker) global() {
	c := k.c
	if k.nonEmpty("user_agent", c.UserAgent) {
		token, _, _ := strings.Cut(strings.Fields(c.UserAgent)[0], "/")
		switch {
		case !httpguts.ValidHeaderFieldValue(c.UserAgent):
			k.errorf("user_agent", "holds control characters")
		case !productToken.MatchString(token):
			k.errorf("user_agent", "product token %q (the first word, before any /) may hold only letters, _ and -: robots.txt user-agent lines are matched against it (RFC 9309)", token)
		}
	}
	k.nonEmpty("state_dir", c.StateDir)
	if cl := &c.Cluster; cl.StateIndex != "" {
		if c.StateCluster() == nil {
			k.errorf("cluster.state_index", "needs elasticsearch (or cluster.elasticsearch): the state lives in its cluster")
		}
		if msg := indexNameProblem(cl.StateIndex); msg != "" {
			k.errorf("cluster.state_index", "%s", msg)
		}
		switch {
		case k.has("cluster.node_name") && k.has("cluster.node_name_env"):
			k.errorf("cluster.node_name_env", "give one of node_name and node_name_env")
		case k.has("cluster.node_name_env"):
			// A Kubernetes pod's name, say, by the downward API.
			k.fromEnv("cluster.node_name_env", &cl.NodeName, cl.NodeNameEnv)
		default:
			k.nonEmpty("cluster.node_name", cl.NodeName)
		}
		k.between("cluster.partitions", int64(cl.Partitions), 1, 4096)
		k.span("cluster.lease_ttl", cl.LeaseTTL, Duration(3*time.Second), Duration(10*time.Minute))
	}
	if c.Cluster.Elasticsearch != nil {
		k.stateCluster(c.Cluster.Elasticsearch)
	}
	k.service()
	k.oneOf("log.format", c.Log.Format, "text", "json")
	k.oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")

	if c.Elasticsearch != nil {
		k.elasticsearch(c.Elasticsearch)
	} else if c.Output.File == "" {
		k.errorf("output.file", "must not be empty when elasticsearch is not configured")
	}
	if msg := indexNameProblem(c.Output.Index); msg != "" {
		k.errorf("output.index", "%s", msg)
	}

	k.fetch(&c.Fetch)
	k.documents(&c.Documents)
	k.browser(c)
	f := &c.Fetch
	if f.Proxy != "" {
		// The proxy URL may carry credentials: never echo it.
		u, err := url.Parse(f.Proxy)
		if err != nil || u.Host == "" || !slices.Contains([]string{"http", "https", "socks5", "socks5h"}, strings.ToLower(u.Scheme)) {
			k.errorf("fetch.proxy", "must be an absolute URL with scheme http, https or socks5 and a host")
		}
	}
	k.readable("fetch.ca_file", f.CAFile)

	for _, name := range slices.Sorted(maps.Keys(c.ExtraFields)) {
		p := "extra_fields." + name
		if !docfields.ValidExtraName(name) {
			k.errorf(p, "field name %q must match ^extra_[a-z0-9_]+$", name)
		}
		k.oneOf(p, c.ExtraFields[name], docfields.ExtraTypes...)
	}
	k.extensions("always_ignored_extensions", c.AlwaysIgnoredExtensions)

	if len(c.Sources) == 0 {
		k.errorf("sources", "at least one source is required")
	}
}

// Bounds of the fetch keys. Timeouts under 10ms fail even on loopback;
// past an hour of waiting for a connection or headers, or two for a whole
// body (1GiB at a slow 150KB/s), a stalled server holds a worker for
// nothing.
const (
	// Every request in flight holds a socket: 512 stays under the usual
	// limit of 1024 open files with room for the state store and sink.
	maxConcurrency = 512
	// A body is held whole in memory, so its cap times the requests in
	// flight is what bodies may cost: 8GiB at most.
	maxBodyBytes      = 1 << 30
	maxBodiesInFlight = 8 << 30
	// A page's links are queued in the transaction that completes it.
	maxLinksPerPage = 100_000
	minTimeout      = Duration(10 * time.Millisecond)
)

func (k *checker) fetch(f *Fetch) {
	okC := k.between("fetch.concurrency", int64(f.Concurrency), 1, maxConcurrency)
	k.span("fetch.connect_timeout", f.ConnectTimeout, minTimeout, Duration(10*time.Minute))
	k.span("fetch.response_header_timeout", f.ResponseHeaderTimeout, minTimeout, Duration(time.Hour))
	k.span("fetch.timeout", f.Timeout, minTimeout, Duration(2*time.Hour))
	okB := k.size("fetch.max_body_bytes", f.MaxBodyBytes, 1, maxBodyBytes)
	if okC && okB && int64(f.Concurrency)*f.MaxBodyBytes > maxBodiesInFlight {
		k.errorf("fetch.max_body_bytes", "with fetch.concurrency %d, bodies in flight may hold %s: keep concurrency × max_body_bytes at most %s",
			f.Concurrency, formatSize(int64(f.Concurrency)*f.MaxBodyBytes), formatSize(maxBodiesInFlight))
	}
	okD := k.size("fetch.max_document_bytes", f.MaxDocumentBytes, 1, maxBodyBytes)
	if okC && okD && int64(f.Concurrency)*f.MaxDocumentBytes > maxBodiesInFlight {
		k.errorf("fetch.max_document_bytes", "with fetch.concurrency %d, bodies in flight may hold %s: keep concurrency × max_document_bytes at most %s",
			f.Concurrency, formatSize(int64(f.Concurrency)*f.MaxDocumentBytes), formatSize(maxBodiesInFlight))
	}
	k.between("fetch.max_redirects", int64(f.MaxRedirects), 0, 100)
	k.between("fetch.max_links_per_page", int64(f.MaxLinksPerPage), 1, maxLinksPerPage)
}

// Bounds of the browser keys. Chromium with one tab on a blank page holds
// about 390MiB (proportional set sizes, Debian's chromium 156), and a
// tab of an ordinary page some tens of megabytes more; a page's render is
// killed past the bound, so below 512MiB no page would render.
const (
	maxBrowserTabs   = 64
	minBrowserMemory = 512 << 20
	maxBrowserMemory = 256 << 30
)

func (k *checker) browser(c *Config) {
	b := &c.Browser
	k.between("browser.tabs", int64(b.Tabs), 1, maxBrowserTabs)
	k.size("browser.max_memory_bytes", b.MaxMemoryBytes, minBrowserMemory, maxBrowserMemory)
	if !k.nonEmpty("browser.path", b.Path) || !c.Renders() {
		return
	}
	// Only a configuration that renders needs the browser: say so before
	// the crawl, not at its first page.
	if st, err := os.Stat(b.Path); err != nil {
		k.errorf("browser.path", "cannot run %s: %s; rendering needs Chromium (Debian's chromium package) or browser.path naming it", b.Path, pathErr(err))
	} else if st.IsDir() || st.Mode()&0o111 == 0 {
		k.errorf("browser.path", "%s is not an executable file", b.Path)
	}
}

// Bounds of render.timeout: a page's scripts get at least a second, and a
// tab is not held past ten minutes.
const (
	minRenderTimeout = Duration(time.Second)
	maxRenderTimeout = Duration(10 * time.Minute)
)

func (k *checker) render(p string, r *Render) {
	k.oneOf(p+".wait", r.Wait, "load", "network_idle", "element")
	switch {
	case r.Wait == "element" && strings.TrimSpace(r.Selector) == "":
		at := p + ".selector"
		if !k.has(at) {
			at = p + ".wait"
		}
		k.errorf(at, "wait: element needs a selector, the CSS selector of the element to wait for")
	case r.Selector != "" && r.Wait != "element" && k.has(p+".selector"):
		k.errorf(p+".selector", "is read only with wait: element (wait is %s)", r.Wait)
	case r.Selector != "":
		if _, err := cascadia.Compile(r.Selector); err != nil {
			k.errorf(p+".selector", "%q is not a CSS selector: %v", r.Selector, err)
		}
	}
	k.span(p+".timeout", r.Timeout, minRenderTimeout, maxRenderTimeout)
}

func (k *checker) documents(d *Documents) {
	k.span("documents.timeout", d.Timeout, Duration(time.Second), Duration(time.Hour))
	// The PDF reader's WebAssembly memory is 32-bit: 4 GiB at most.
	k.size("documents.max_memory_bytes", d.MaxMemoryBytes, 16<<20, 4<<30)
	k.size("documents.max_unpacked_bytes", d.MaxUnpackedBytes, 1<<20, 16<<30)
	k.between("documents.max_entries", int64(d.MaxEntries), 1, 1_000_000)
	k.size("documents.max_xml_token_bytes", d.MaxXMLTokenBytes, 64<<10, 1<<30)
	t := d.Tika
	if t.URL == "" {
		if len(t.Types) > 0 {
			k.errorf("documents.tika.url", "is required when documents.tika.types names types for Tika to read")
		}
		return
	}
	if u, err := url.Parse(t.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || !validPort(u) {
		k.errorf("documents.tika.url", "must be an absolute http:// or https:// URL with a host, such as http://127.0.0.1:9998")
	}
	if len(t.Types) == 0 {
		k.errorf("documents.tika.types", "must name the media types Tika reads, such as application/msword: none goes to Tika unless listed")
	}
	for j, m := range t.Types {
		m = strings.ToLower(m)
		switch {
		case !mimeType.MatchString(m) || strings.HasSuffix(m, "/*"):
			k.errorf(indexPath("documents.tika.types", j), "%q is not a MIME type such as application/msword", t.Types[j])
		case slices.Contains(BuiltinTypes, m):
			k.errorf(indexPath("documents.tika.types", j), "%s is read by crawlspace itself, not by Tika", m)
		}
	}
}

func (k *checker) elasticsearch(es *Elasticsearch) {
	const p = "elasticsearch"
	k.connection(p, es)
	if msg := indexNameProblem(es.Index); msg != "" {
		k.errorf(p+".index", "%s", msg)
	}
	// A bulk request holds up to this and one more document, and must stay
	// under Elasticsearch's http.max_content_length (100MiB by default).
	k.size(p+".bulk_flush_bytes", int64(es.BulkFlushBytes), 1, 64<<20)
	// Under 10ms the flush timer would keep a core busy.
	k.span(p+".bulk_flush_interval", es.BulkFlushInterval, Duration(10*time.Millisecond), Duration(time.Hour))
	k.between(p+".bulk_workers", int64(es.BulkWorkers), 1, 64)
	if k.has(p + ".pipeline") {
		k.nonEmpty(p+".pipeline", es.Pipeline)
	}
	if k.has(p + ".refresh_interval") {
		k.span(p+".refresh_interval", es.RefreshInterval, Duration(100*time.Millisecond), Duration(time.Hour))
	}
	k.indexOptions(es)
	if es.Embeddings != nil {
		k.embeddings(es.Embeddings)
	}
}

// embeddings checks the embedding service of the index and the passages.
func (k *checker) embeddings(e *Embeddings) {
	const p = "elasticsearch.embeddings"
	k.oneOf(p+".service", e.Service, EmbedOpenAI, EmbedElasticsearch)
	// Keys of the other service are refused when they say something, so
	// a URL never sits unused beside an inference endpoint.
	unused := func(key, v string) {
		if v != "" {
			k.errorf(p+"."+key, "is not used by service %s", e.Service)
		}
	}
	switch e.Service {
	case EmbedOpenAI:
		if u, err := url.Parse(e.URL); err == nil && u.User != nil {
			// Checked first: every later message quotes the URL.
			k.errorf(p+".url", "must not carry credentials; use %s.api_key (or api_key_env, api_key_file)", p)
		} else if !k.has(p + ".url") {
			k.errorf(p+".url", "is required with service openai: the API's base URL, such as http://127.0.0.1:11434/v1")
		} else {
			k.url(p+".url", e.URL, []string{"http", "https"})
		}
		if !k.has(p + ".model") {
			k.errorf(p+".model", "is required with service openai")
		} else {
			k.nonEmpty(p+".model", e.Model)
		}
		unused("inference_id", e.InferenceID)
		if e.APIKey != "" || e.APIKeyEnv != "" || e.APIKeyFile != "" {
			// All three written empty say there is no key, as an empty
			// elasticsearch.api_key does.
			k.secret(p, "api_key", &e.APIKey, e.APIKeyEnv, e.APIKeyFile, false)
		}
		if e.APIKey != "" && !httpguts.ValidHeaderFieldValue(e.APIKey) {
			k.errorf(p+".api_key", "holds a line break or another control character")
		}
		k.readable(p+".ca_file", e.CAFile)
	case EmbedElasticsearch:
		if !k.has(p + ".inference_id") {
			k.errorf(p+".inference_id", "is required with service elasticsearch: the id of an inference endpoint of the cluster")
		} else if k.nonEmpty(p+".inference_id", e.InferenceID) && strings.ContainsAny(e.InferenceID, "/?#% ") {
			k.errorf(p+".inference_id", "%q is not an inference endpoint id", e.InferenceID)
		}
		unused("url", e.URL)
		unused("api_key", e.APIKey)
		unused("api_key_env", e.APIKeyEnv)
		unused("api_key_file", e.APIKeyFile)
		unused("ca_file", e.CAFile)
	}
	if !k.has(p + ".dimensions") {
		k.errorf(p+".dimensions", "is required: the length of the model's vectors (384 for all-MiniLM-L6-v2)")
	} else {
		// 4096 is dense_vector's limit in Elasticsearch 8.19 and 9.x.
		k.between(p+".dimensions", int64(e.Dimensions), 1, 4096)
	}
	k.oneOf(p+".similarity", e.Similarity, docfields.Similarities...)
	k.oneOf(p+".index_type", e.IndexType, docfields.VectorIndexTypes...)
	k.between(p+".batch_size", int64(e.BatchSize), 1, 2048)
	k.between(p+".max_in_flight", int64(e.MaxInFlight), 1, 64)
	k.span(p+".request_timeout", e.RequestTimeout, Duration(time.Second), Duration(10*time.Minute))
	k.oneOf(p+".on_failure", e.OnFailure, OnFailureWait, OnFailureIndex)
	pp := p + ".passages"
	if k.between(pp+".max_tokens", int64(e.Passages.MaxTokens), 16, 8192) {
		k.between(pp+".overlap_tokens", int64(e.Passages.OverlapTokens), 0, int64(e.Passages.MaxTokens/2))
	}
	k.between(pp+".max_per_document", int64(e.Passages.MaxPerDocument), 1, 100000)
}

// connection checks the keys that reach a cluster and size its indices,
// of the block at p (elasticsearch, cluster.elasticsearch).
func (k *checker) connection(p string, es *Elasticsearch) {
	if len(es.Addresses) == 0 {
		k.errorf(p+".addresses", "at least one address is required")
	}
	for i, a := range es.Addresses {
		// Addresses may carry credentials (http://user:pass@host:9200): never echo them.
		u, err := url.Parse(a)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || !validPort(u):
			k.errorf(indexPath(p+".addresses", i), "must be an absolute http:// or https:// URL with a host, such as http://127.0.0.1:9200")
		case u.User != nil:
			// In an address they would reach every error that quotes it.
			k.errorf(indexPath(p+".addresses", i), "must not carry credentials; use %[1]s.username and %[1]s.password (or %[1]s.api_key)", p)
		}
	}
	// 1024 shards is Elasticsearch's own limit for one index.
	k.between(p+".shards", int64(es.Shards), 1, 1024)
	k.between(p+".replicas", int64(*es.Replicas), 0, 64)
	// A whole _bulk request must fit in it.
	k.span(p+".request_timeout", es.RequestTimeout, Duration(MinESRequestTimeout), Duration(MaxESRequestTimeout))
	pwAt, hasPassword := k.connectionSecret(p, "password", &es.Password, es.PasswordEnv, es.PasswordFile)
	keyAt, hasKey := k.connectionSecret(p, "api_key", &es.APIKey, es.APIKeyEnv, es.APIKeyFile)
	switch {
	case es.Username != "" && !hasPassword:
		k.errorf(p+".username", "password is required with username")
	case es.Username == "" && hasPassword:
		k.errorf(pwAt, "username is required with password")
	}
	if hasKey && (es.Username != "" || hasPassword) {
		k.errorf(keyAt, "use either api_key or username and password, not both")
	}
	k.readable(p+".ca_file", es.CAFile)
}

// connectionSecret reads a connection's password or API key from its
// environment variable or file when one of those forms is written, and
// returns the key path of the form written and whether it gives the
// secret (a variable or file that cannot has its own error). The form
// written as is keeps its older reading, where an empty value
// (api_key: "") means none.
func (k *checker) connectionSecret(p, key string, v *string, env, file string) (at string, given bool) {
	for _, form := range []string{key + "_env", key + "_file"} {
		if k.has(p + "." + form) {
			k.secret(p, key, v, env, file, false)
			return p + "." + form, true
		}
	}
	return p + "." + key, *v != ""
}

// stateCluster checks cluster.elasticsearch as the connection of
// elasticsearch is checked, and keeps the secrets read on the way.
func (k *checker) stateCluster(es *StateConnection) {
	const p = "cluster.elasticsearch"
	if k.c.Cluster.StateIndex == "" {
		k.errorf(p, "needs cluster.state_index: without it the state is in state_dir")
	}
	conn := es.connection()
	k.connection(p, conn)
	es.Credentials = conn.Credentials
}

// analysisSections are the parts of index.analysis Elasticsearch knows.
var analysisSections = []string{"analyzer", "char_filter", "filter", "normalizer", "tokenizer"}

// indexOptions checks the shape of analysis, analyzers and subfields and the
// fields they name; what the definitions say is the cluster's to check, when
// it creates the index.
func (k *checker) indexOptions(es *Elasticsearch) {
	const p = "elasticsearch"
	for _, section := range slices.Sorted(maps.Keys(es.Analysis)) {
		sp := p + ".analysis." + section
		if !slices.Contains(analysisSections, section) {
			k.errorf(sp, "%q is not a part of index analysis; use %s", section, strings.Join(analysisSections, ", "))
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(es.Analysis[section])) {
			if _, ok := es.Analysis[section][name].(map[string]any); !ok {
				k.errorf(sp+"."+name, "must be a mapping such as {type: custom, tokenizer: standard, filter: [lowercase]}")
			}
		}
	}
	textField := func(f string) bool {
		return slices.Contains(docfields.TextFields, f) || k.c.ExtraFields[f] == "text"
	}
	for _, field := range slices.Sorted(maps.Keys(es.Analyzers)) {
		fp := p + ".analyzers." + field
		switch {
		case !textField(field):
			k.errorf(fp, "%s is not a text field; analyzers apply to %s and extra fields of type text", field, strings.Join(docfields.TextFields, ", "))
		case k.nonEmpty(fp, es.Analyzers[field]):
			k.analyzer(fp, es, es.Analyzers[field])
		}
	}
	for _, field := range slices.Sorted(maps.Keys(es.Subfields)) {
		fp := p + ".subfields." + field
		if _, extra := k.c.ExtraFields[field]; !extra && !docfields.IsField(field) {
			k.errorf(fp, "%s is not a doc_ field nor declared in extra_fields", field)
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(es.Subfields[field])) {
			np := fp + "." + name
			switch def := es.Subfields[field][name]; {
			case !validSubfield(name):
				k.errorf(np, "%q is not a sub-field name: lower-case letters, digits and _", name)
			case slices.Contains(docfields.BuiltinSubfields[field], name):
				k.errorf(np, "%s.%s is crawlspace's own sub-field; choose another name", field, name)
			default:
				if t, ok := def["type"].(string); !ok || t == "" {
					k.errorf(np, "must give a type, such as {type: text, analyzer: folded}")
				}
				if a, ok := def["analyzer"].(string); ok {
					k.analyzer(np, es, a)
				}
			}
		}
	}
}

// coreAnalyzers are the built-in analyzers every Elasticsearch build has;
// the others (english, pattern, fingerprint...) come with the
// analysis-common module, which a cluster may lack.
var coreAnalyzers = []string{"standard", "simple", "whitespace", "stop", "keyword"}

// analyzer checks that an analyzer a field uses exists: defined in
// elasticsearch.analysis or built in everywhere.
func (k *checker) analyzer(path string, es *Elasticsearch, name string) {
	if _, defined := es.Analysis["analyzer"][name]; defined || slices.Contains(coreAnalyzers, name) {
		return
	}
	k.errorf(path, "analyzer %q is not defined in elasticsearch.analysis.analyzer nor built in (%s)", name, strings.Join(coreAnalyzers, ", "))
}

func validSubfield(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// indexNameProblem applies Elasticsearch's index naming rules, so a bad
// name fails here rather than on the first bulk request.
func indexNameProblem(s string) string {
	switch {
	case s == "":
		return "must not be empty"
	case len(s) > 200:
		// 255 bytes is Elasticsearch's limit; the physical index adds a version suffix.
		return "must be at most 200 bytes"
	case s == "." || s == "..":
		return fmt.Sprintf("%q is not a valid index name", s)
	case s != strings.ToLower(s):
		return fmt.Sprintf("%q must be lower-case", s)
	case strings.ContainsAny(s[:1], "-_+."):
		return fmt.Sprintf("%q must not start with -, _, + or .", s)
	case strings.ContainsAny(s, "\\/*?\"<>| ,#:"):
		return fmt.Sprintf("%q must not contain spaces or any of \\ / * ? \" < > | , # :", s)
	}
	return ""
}

func (k *checker) extensions(path string, list []string) {
	for i, e := range list {
		ip := indexPath(path, i)
		if k.nonEmpty(ip, e) && strings.ContainsAny(e, "/ \t?#") {
			k.errorf(ip, "%q is not a file extension", e)
		}
	}
}

func (k *checker) source(i int) {
	c := k.c
	s := &c.Sources[i]
	p := SourcePath(i)
	at := func(key string) string { return p + "." + key }

	switch {
	case s.Name == "":
		k.errorf(at("name"), "is required")
	case !sourceName.MatchString(s.Name):
		k.errorf(at("name"), "%q may hold only letters, digits, _, - and . (at most 64, starting with a letter or digit): it is used in document fields and metrics", s.Name)
	default:
		for j := range i {
			if c.Sources[j].Name == s.Name {
				k.errorf(at("name"), "duplicate source name %q; first used at line %d", s.Name, c.Pos(SourcePath(j)+".name").Line)
				break
			}
		}
	}

	if len(s.Schemes) == 0 {
		k.errorf(at("schemes"), "at least one scheme is required")
	}
	for j, sc := range s.Schemes {
		sp := indexPath(at("schemes"), j)
		k.oneOf(sp, sc, "http", "https")
		if slices.Contains(s.Schemes[:j], sc) {
			k.errorf(sp, "%q is listed twice", sc)
		}
	}
	if len(s.StartURLs) == 0 {
		k.errorf(at("start_urls"), "at least one start URL is required")
	}
	for j, u := range s.StartURLs {
		k.url(indexPath(at("start_urls"), j), u, s.Schemes)
		if len(u) > urlnorm.MaxLength {
			k.errorf(indexPath(at("start_urls"), j), "is %d bytes, longer than the state store holds (%d)", len(u), urlnorm.MaxLength)
		}
	}
	for j, u := range s.Sitemaps {
		k.url(indexPath(at("sitemaps"), j), u, []string{"http", "https"})
	}
	for j, u := range s.Feeds {
		k.url(indexPath(at("feeds"), j), u, []string{"http", "https"})
	}
	const year = Duration(365 * 24 * time.Hour)
	// The service revisits start URLs, sitemaps and feeds this often: under
	// a minute that is hammering them, not discovery.
	k.span(at("discovery_interval"), s.DiscoveryInterval, Duration(time.Minute), year)
	// Any positive age is safe: aged checks run once a cycle, and the
	// service wakes for them at most once a minute.
	k.span(at("max_age"), s.MaxAge, 1, year)
	// A sitemap is read as a stream, but its URLs are kept until queued:
	// five times the sitemaps.org caps (50MB, 50,000 URLs) and more.
	k.size(at("sitemap_limits.max_bytes"), s.SitemapLimits.MaxBytes, 1, 256<<20)
	k.between(at("sitemap_limits.max_urls"), int64(s.SitemapLimits.MaxURLs), 1, 1_000_000)
	k.between(at("sitemap_limits.max_depth"), int64(s.SitemapLimits.MaxDepth), 0, 20)
	// Each file read is a request; what waits to be read is held in memory.
	k.between(at("sitemap_limits.max_files"), int64(s.SitemapLimits.MaxFiles), 1, 100_000)

	// 0 is no limit; a link or path deeper than 1000 is a trap, not a site.
	k.between(at("max_link_depth"), int64(s.MaxLinkDepth), 0, 1000)
	k.between(at("max_path_depth"), int64(s.MaxPathDepth), 0, 1000)
	// The state store must be able to hold every URL the crawl space allows.
	k.between(at("max_url_length"), int64(s.MaxURLLength), 16, urlnorm.MaxLength)
	for j, q := range s.HonoredQueryParams {
		qp := indexPath(at("honored_query_params"), j)
		if k.nonEmpty(qp, q) && strings.ContainsAny(q, "=&?# ") {
			k.errorf(qp, "%q is not a query parameter name", q)
		}
	}
	k.patterns(at("include"), s.Include)
	k.patterns(at("exclude"), s.Exclude)
	k.patterns(at("kill_patterns"), s.KillPatterns)
	k.entries(at("kill_exact"), s.KillExact)
	k.extensions(at("ignored_extensions"), s.IgnoredExtensions)
	if len(s.MimeTypes) == 0 {
		k.errorf(at("mime_types"), "at least one MIME type is required, or nothing would be indexed")
	}
	for j, m := range s.MimeTypes {
		if !mimeType.MatchString(strings.ToLower(m)) {
			k.errorf(indexPath(at("mime_types"), j), "%q is not a MIME type such as text/html", m)
		}
	}
	for j, r := range s.Rules {
		if _, err := ParseRuleLine(r); err != nil {
			k.errorf(indexPath(at("rules"), j), "%v", err)
		}
	}
	for j := range s.CrawlRules {
		k.crawlRule(s, indexPath(at("crawl_rules"), j), &s.CrawlRules[j])
	}
	k.render(at("render"), &s.Render)

	k.span(at("politeness.delay"), s.Politeness.Delay, 0, Duration(time.Hour))
	k.between(at("politeness.max_parallel_per_host"), int64(s.Politeness.MaxParallelPerHost), 1, 64)
	// robots.txt parsing cuts a Crawl-delay at a day already.
	k.span(at("politeness.max_crawl_delay"), s.Politeness.MaxCrawlDelay, 0, Duration(24*time.Hour))

	e := &s.Extraction
	for j, el := range e.RemoveElements {
		if !elementName.MatchString(el) {
			k.errorf(indexPath(at("extraction.remove_elements"), j), "%q is not an HTML element name", el)
		}
	}
	for j, cl := range e.RemoveClasses {
		cp := indexPath(at("extraction.remove_classes"), j)
		// Nor what cannot stand in a class attribute's token list.
		if k.nonEmpty(cp, cl) && strings.ContainsAny(cl, " \t\n\r\f.<>/\"'=") {
			k.errorf(cp, "%q is not a single class name (no spaces or dots)", cl)
		}
	}
	for j, mm := range e.MetaMappings {
		k.metaMapping(indexPath(at("extraction.meta_mappings"), j), mm)
	}
	if len(e.TitleOrder) == 0 {
		k.errorf(at("extraction.title_order"), "at least one title source is required (title, meta, h1, url)")
	}
	for j, t := range e.TitleOrder {
		tp := indexPath(at("extraction.title_order"), j)
		k.oneOf(tp, t, "title", "meta", "h1", "url")
		if slices.Contains(e.TitleOrder[:j], t) {
			k.errorf(tp, "%q is listed twice", t)
		}
	}
	// A document travels in one bulk request: with bulk_flush_bytes it must
	// stay under Elasticsearch's 100MiB request limit, escaped as JSON.
	k.size(at("extraction.max_body_bytes"), int64(e.MaxBodyBytes), 1, 16<<20)
	k.extractionRules(at("extraction.rules"), e)

	k.oneOf(at("orphans"), s.Orphans, "keep", "recheck", "delete")
	k.between(at("max_temporary_errors"), int64(s.MaxTemporaryErrors), 1, 1000)
	b := &s.Budget
	k.between(at("budget.max_urls"), b.MaxURLs, 1, maxBudgetURLs)
	k.between(at("budget.max_urls_per_host"), b.MaxURLsPerHost, 1, maxBudgetURLs)
	k.between(at("budget.max_hosts"), b.MaxHosts, 1, maxBudgetHosts)
	k.between(at("budget.max_pages_per_cycle"), b.MaxPagesPerCycle, 1, maxBudgetURLs)
	k.between(at("budget.max_pages_per_host_per_cycle"), b.MaxPagesPerHostPerCycle, 1, maxBudgetURLs)
	k.between(at("hold_deletes.percent"), int64(s.HoldDeletes.Percent), 0, 100)
	k.between(at("hold_deletes.min_count"), s.HoldDeletes.MinCount, 0, maxBudgetURLs)

	if s.Auth != nil {
		k.auth(at("auth"), s)
	}
	k.headers(at("headers"), s)
}

// url checks a start, sitemap or feed URL. Credentials belong in auth, where
// they are kept to the source's hosts and out of logs and document ids.
func (k *checker) url(path, raw string, schemes []string) {
	if !k.nonEmpty(path, raw) {
		return
	}
	if strings.TrimSpace(raw) != raw {
		k.errorf(path, "has leading or trailing spaces")
		return
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		k.errorf(path, "is not a valid URL: %v", err)
		return
	}
	switch {
	case u.User != nil:
		// Checked first: every later message quotes the URL.
		k.errorf(path, "must not carry credentials; use the source's auth block")
	case u.Scheme == "":
		k.errorf(path, "%q is not an absolute URL; start it with http:// or https://", raw)
	case !slices.Contains(schemes, strings.ToLower(u.Scheme)):
		k.errorf(path, "scheme %q is not allowed here (schemes: %s)", u.Scheme, strings.Join(schemes, ", "))
	case u.Opaque != "" || u.Hostname() == "":
		k.errorf(path, "%q has no host", raw)
	case !validPort(u):
		k.errorf(path, "port %q is not a number from 1 to 65535", u.Port())
	case u.Fragment != "" || strings.Contains(raw, "#"):
		k.errorf(path, "%q has a fragment (#...), which never reaches the server; remove it", raw)
	}
}

// validPort checks what url.Parse leaves open: the port's range.
func validPort(u *url.URL) bool {
	p := u.Port()
	if p == "" {
		return true
	}
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}

func (k *checker) patterns(path string, list []string) {
	for i, v := range list {
		ip := indexPath(path, i)
		if k.nonEmpty(ip, v) && strings.HasPrefix(v, "regexp:") && strings.TrimSpace(v[len("regexp:"):]) == "" {
			k.errorf(ip, "regexp: needs a pattern after it")
		}
	}
}

func (k *checker) metaMapping(path, mm string) {
	meta, field, ok := SplitMetaMapping(mm)
	if !ok {
		k.errorf(path, "%q must be metaname:extra_field, such as category:extra_category", mm)
		return
	}
	if !docfields.ValidExtraName(field) {
		if _, declared := k.c.ExtraFields["extra_"+field]; declared {
			k.errorf(path, "field %q must be named extra_*; did you mean %q?", field, meta+":extra_"+field)
		} else {
			k.errorf(path, "field %q must be named extra_* (^extra_[a-z0-9_]+$)", field)
		}
		return
	}
	if _, declared := k.c.ExtraFields[field]; !declared {
		k.errorf(path, "field %s is not declared in extra_fields (add \"%s: keyword\" there)", field, field)
	}
}

// extractionRules checks extraction rules, structured data mappings and
// the languages of detection. The regular expressions of include and
// exclude are compiled with the crawl space (rules.Compile), which reads
// them as it reads a source's.
func (k *checker) extractionRules(path string, e *Extraction) {
	for j := range e.Rules {
		rp := indexPath(path, j)
		r := &e.Rules[j]
		k.patterns(rp+".include", r.Include)
		k.patterns(rp+".exclude", r.Exclude)
		if len(r.Fields) == 0 && !k.unknown[rp] {
			k.errorf(rp+".fields", "at least one field is required")
		}
		for f := range r.Fields {
			k.fieldRule(indexPath(rp+".fields", f), &r.Fields[f])
		}
	}
	base := parentPath(path)
	for j, m := range e.StructuredDataMappings {
		mp := indexPath(base+".structured_data_mappings", j)
		prop, field, ok := SplitMetaMapping(m)
		if !ok || !structuredPath.MatchString(prop) {
			k.errorf(mp, "%q must be [Type.]property[.property...]:extra_field, such as Article.author.name:extra_author", m)
			continue
		}
		k.extraField(mp, field)
	}
	if e.IgnoreStructuredData && len(e.StructuredDataMappings) > 0 {
		k.errorf(base+".structured_data_mappings", "contradicts ignore_structured_data: true")
	}
	for j, l := range e.Languages {
		lp := indexPath(base+".languages", j)
		if !slices.Contains(DetectableLanguages, strings.ToLower(l)) {
			k.errorf(lp, "%q is not a language detection knows; give an ISO 639-1 code such as en, de, fr (docs/fields.md lists them)", l)
		}
	}
	if e.NoLanguageDetection && len(e.Languages) > 0 {
		k.errorf(base+".languages", "contradicts no_language_detection: true")
	}
}

// structuredPath is a structured data path: an optional schema.org type
// (capitalised), then properties separated by dots.
var structuredPath = regexp.MustCompile(`^([A-Z][A-Za-z0-9]*\.)?[a-z@][A-Za-z0-9_]*(\.[a-z@][A-Za-z0-9_]*)*$`)

// fieldRule checks one field of an extraction rule: the field declared,
// exactly one of selector, url and value, each valid.
func (k *checker) fieldRule(fp string, r *FieldRule) {
	if k.nonEmpty(fp+".field", r.Field) {
		k.extraField(fp+".field", r.Field)
	}
	var given []string
	for _, g := range []struct {
		key string
		set bool
	}{{"selector", k.has(fp + ".selector")}, {"url", k.has(fp + ".url")}, {"value", r.Value != nil}} {
		if g.set {
			given = append(given, g.key)
		}
	}
	switch {
	case len(given) == 0:
		k.errorf(fp, "give one of selector, url or value")
		return
	case len(given) > 1:
		k.errorf(fp+"."+given[1], "give only one of selector, url or value (%s is given too)", given[0])
		return
	}
	k.oneOf(fp+".values", r.Values, "first", "all")
	if r.Attribute != "" && r.Selector == "" {
		k.errorf(fp+".attribute", "needs a selector")
	}
	if r.Attribute != "" && !attributeName.MatchString(r.Attribute) {
		k.errorf(fp+".attribute", "%q is not an attribute name", r.Attribute)
	}
	switch given[0] {
	case "selector":
		if k.nonEmpty(fp+".selector", r.Selector) {
			if _, err := cascadia.Compile(r.Selector); err != nil {
				k.errorf(fp+".selector", "%q is not a CSS selector: %v", r.Selector, err)
			}
		}
	case "url":
		if k.nonEmpty(fp+".url", r.URL) {
			if _, err := regexp.Compile(r.URL); err != nil {
				k.errorf(fp+".url", "%q is not a regular expression (RE2 syntax): %v", r.URL, err)
			}
		}
	}
}

// attributeName is what an HTML attribute name may be, as selectors see it.
var attributeName = regexp.MustCompile(`^[A-Za-z_:][A-Za-z0-9_:.-]*$`)

// extraField checks that field is an extra field declared in extra_fields.
func (k *checker) extraField(path, field string) {
	if !docfields.ValidExtraName(field) {
		k.errorf(path, "field %q must be named extra_* (^extra_[a-z0-9_]+$)", field)
		return
	}
	if _, declared := k.c.ExtraFields[field]; !declared {
		k.errorf(path, "field %s is not declared in extra_fields (add \"%s: keyword\" there)", field, field)
	}
}

func (k *checker) headers(path string, s *Source) {
	seen := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(s.Headers)) {
		hp := path + "." + name
		canon := strings.ToLower(name)
		switch {
		case !httpguts.ValidHeaderFieldName(name):
			k.errorf(hp, "%q is not a valid HTTP header name", name)
		case slices.ContainsFunc(reservedHeaders, func(r string) bool { return strings.EqualFold(r, name) }):
			k.errorf(hp, "%s is set by the HTTP client and cannot be configured", name)
		case seen[canon] != "":
			k.errorf(hp, "header %s is set twice (also as %s); header names are case-insensitive", name, seen[canon])
		case s.Auth != nil && (canon == "authorization" || s.Auth.Method == AuthBearer && strings.EqualFold(name, s.Auth.Header)):
			k.errorf(hp, "conflicts with auth; use one or the other")
		case !httpguts.ValidHeaderFieldValue(s.Headers[name]):
			// The value may be a token: never echo it.
			k.errorf(hp, "value holds a line break or another control character")
		}
		seen[canon] = name
	}
}

func (k *checker) crawlRule(s *Source, p string, r *CrawlRule) {
	if !k.has(p + ".match") {
		k.errorf(p, "match is required")
	} else {
		k.match(p+".match", &r.Match)
	}
	k.between(p+".priority", int64(r.Priority), -2, 2)
	if r.Ignore {
		for _, a := range []struct {
			key string
			set *bool
		}{{"index", r.Index}, {"follow", r.Follow}, {"accept", r.Accept}} {
			if a.set != nil && *a.set {
				k.errorf(p+"."+a.key, "contradicts ignore: true (ignore means no index, no follow)")
			}
		}
	}
	acted := false
	for _, key := range []string{"index", "follow", "accept", "ignore", "source", "priority", "add_meta", "render"} {
		acted = acted || k.has(p+"."+key)
	}
	if !acted && !k.unknown[p] {
		k.errorf(p, "no action: give one or more of index, follow, accept, ignore, source, priority, add_meta, render")
	}
	if r.Render != nil {
		k.render(p+".render", r.Render)
	}
	if k.has(p+".source") && k.c.SourceByName(r.Source) == nil {
		names := make([]string, len(k.c.Sources))
		for i := range k.c.Sources {
			names[i] = k.c.Sources[i].Name
		}
		k.errorf(p+".source", "no source is named %q (sources: %s)", r.Source, strings.Join(names, ", "))
	}
	if r.AddMeta != nil {
		full := make(map[string]string, len(r.AddMeta))
		for _, key := range slices.Sorted(maps.Keys(r.AddMeta)) {
			kp := p + ".add_meta." + key
			field := AddMetaField(key)
			_, declared := k.c.ExtraFields[field]
			_, dup := full[field]
			switch {
			case !docfields.ValidExtraName(field):
				k.errorf(kp, "%q does not name an extra field (^extra_[a-z0-9_]+$, or the part after extra_)", key)
			case !declared:
				k.errorf(kp, "field %s is not declared in extra_fields (add \"%s: keyword\" there)", field, field)
			case dup:
				k.errorf(kp, "field %s is set twice (as %s and %s)", field, strings.TrimPrefix(field, "extra_"), field)
			default:
				full[field] = r.AddMeta[key]
			}
		}
		r.AddMeta = full
	}
}

var matchOps = []string{"and", "or", "not", "atom", "domain", "host", "path", "ext", "url", "scheme", "query", "inquery", "length"}

func (k *checker) match(p string, m *Match) {
	set := []bool{m.And != nil, m.Or != nil, m.Not != nil, m.Atom != nil, m.Domain != nil, m.Host != nil,
		m.Path != nil, m.Ext != nil, m.URL != nil, m.Scheme != nil, m.Query != nil, m.InQuery != nil, m.Length != nil}
	var ops []string
	for i, ok := range set {
		if ok {
			ops = append(ops, matchOps[i])
		}
	}
	switch len(ops) {
	case 0:
		if !k.unknown[p] {
			k.errorf(p, "empty match: give one of %s", strings.Join(matchOps, ", "))
		}
		return
	case 1:
	default:
		k.errorf(p, "has %d operators (%s); a match node takes exactly one: put them in a list under and", len(ops), strings.Join(ops, ", "))
		return
	}
	switch {
	case m.And != nil:
		k.matchList(p+".and", m.And)
	case m.Or != nil:
		k.matchList(p+".or", m.Or)
	case m.Not != nil:
		k.match(p+".not", m.Not)
	case m.Atom != nil:
		k.atom(p+".atom", m.Atom)
	case m.Domain != nil:
		if k.nonEmpty(p+".domain", *m.Domain) && strings.ContainsAny(*m.Domain, "/:") {
			k.errorf(p+".domain", "%q is not a domain name; write the host name only, such as example.com", *m.Domain)
		}
	case m.Host != nil:
		if k.nonEmpty(p+".host", *m.Host) && strings.Contains(*m.Host, "/") {
			k.errorf(p+".host", "%q is not a host name; write it without scheme or path", *m.Host)
		}
	case m.Path != nil:
		k.nonEmpty(p+".path", *m.Path)
	case m.Ext != nil:
		k.nonEmpty(p+".ext", *m.Ext)
	case m.URL != nil:
		k.nonEmpty(p+".url", *m.URL)
	case m.Scheme != nil:
		k.oneOf(p+".scheme", *m.Scheme, "http", "https")
	case m.Query != nil:
		// An empty exact query is meaningful: the URL has no query.
	case m.InQuery != nil:
		k.nonEmpty(p+".inquery", *m.InQuery)
	case m.Length != nil:
		k.oneOf(p+".length.field", m.Length.Field, "url", "scheme", "host", "path", "query")
		if _, _, err := ParseLengthRange(m.Length.Value); err != nil {
			k.errorf(p+".length.value", "%v", err)
		}
	}
}

func (k *checker) matchList(p string, list []Match) {
	if len(list) == 0 {
		k.errorf(p, "needs at least one match node")
	}
	for i := range list {
		k.match(indexPath(p, i), &list[i])
	}
}

func (k *checker) atom(p string, a *Atom) {
	fields := []string{"url", "scheme", "host", "path", "query"}
	kinds := []string{"exact", "prefix", "suffix", "inside", "length"}
	if a.Field == "" {
		k.errorf(p+".field", "is required: one of %s", strings.Join(fields, ", "))
	} else {
		k.oneOf(p+".field", a.Field, fields...)
	}
	if a.Kind == "" {
		k.errorf(p+".kind", "is required: one of %s", strings.Join(kinds, ", "))
	} else {
		k.oneOf(p+".kind", a.Kind, kinds...)
	}
	if a.Norm != "" {
		k.oneOf(p+".norm", a.Norm, "none", "lower", "norm")
	}
	switch a.Kind {
	case "length":
		if _, _, err := ParseLengthRange(a.Value); err != nil {
			k.errorf(p+".value", "%v", err)
		}
	case "prefix", "suffix", "inside":
		k.nonEmpty(p+".value", a.Value)
	}
}
