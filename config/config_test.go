package config

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, file, src string) *Config {
	t.Helper()
	c, err := Parse(file, []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

func TestDefaultsAreAppliedToWhatTheFileLeavesOut(t *testing.T) {
	c := mustParse(t, "conf/c.yaml", minimal)
	s := c.Sources[0]
	check := func(name string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", name, got, want)
		}
	}
	check("user_agent", c.UserAgent, "crawlspace/0.1 (+https://github.com/crawlspace/crawlspace)")
	check("state_dir", c.StateDir, filepath.Join("conf", ".crawlspace"))
	check("elasticsearch", c.Elasticsearch, (*Elasticsearch)(nil))
	check("output.file", c.Output.File, filepath.Join("conf", "out", "documents.ndjson"))
	check("log", c.Log, Log{Format: "text", Level: "info"})
	check("fetch", c.Fetch, Fetch{Concurrency: 16, ConnectTimeout: Duration(10 * time.Second),
		ResponseHeaderTimeout: Duration(30 * time.Second), Timeout: Duration(time.Minute),
		MaxBodyBytes: 10 << 20, MaxDocumentBytes: 64 << 20, MaxRedirects: 10, MaxLinksPerPage: 2000})
	check("documents", c.Documents, Documents{Timeout: Duration(time.Minute), MaxMemoryBytes: 512 << 20,
		MaxUnpackedBytes: 256 << 20, MaxEntries: 10000, MaxXMLTokenBytes: 8 << 20})
	check("allow_private_networks", c.AllowPrivateNetworks, false)

	check("discovery", *s.Discovery, true)
	check("use_sitemaps", *s.UseSitemaps, true)
	check("sitemap_limits", s.SitemapLimits, Sitemaps{MaxBytes: 10 << 20, MaxURLs: 50000, MaxDepth: 5, MaxFiles: 100})
	check("discovery_interval", s.DiscoveryInterval.D(), time.Hour)
	check("max_age", s.MaxAge.D(), 48*time.Hour)
	check("stay_on_start_hosts", *s.StayOnStartHosts, true)
	check("stay_in_start_dir", s.StayInStartDir, false)
	check("schemes", s.Schemes, []string{"http", "https"})
	check("max_link_depth", s.MaxLinkDepth, 10)
	check("max_path_depth", s.MaxPathDepth, 20)
	check("max_url_length", s.MaxURLLength, 2048)
	check("follow_query_strings", *s.FollowQueryStrings, true)
	check("honored_query_params", s.HonoredQueryParams, []string{"id"})
	check("ignored_extensions", s.IgnoredExtensions, []string{"default"})
	check("mime_types", s.MimeTypes, BuiltinTypes)
	check("robots.obey", *s.Robots.Obey, true)
	check("politeness.delay", s.Politeness.Delay, Duration(0))
	check("politeness.max_parallel_per_host", s.Politeness.MaxParallelPerHost, 2)
	check("politeness.obey_crawl_delay", *s.Politeness.ObeyCrawlDelay, true)
	check("politeness.max_crawl_delay", s.Politeness.MaxCrawlDelay, Duration(5*time.Minute))
	check("extraction", s.Extraction, Extraction{RemoveElements: []string{"header", "footer"},
		RemoveClasses: []string{"noindex"}, TitleOrder: []string{"title", "meta", "h1", "url"}, MaxBodyBytes: 1 << 20})
	check("orphans", s.Orphans, "keep")
	check("max_temporary_errors", s.MaxTemporaryErrors, 3)
	check("budget", s.Budget, Budget{MaxURLs: 5_000_000, MaxURLsPerHost: 1_000_000, MaxHosts: 10_000,
		MaxPagesPerCycle: 2_000_000, MaxPagesPerHostPerCycle: 1_000_000})
	check("hold_deletes", s.HoldDeletes, HoldDeletes{Percent: 10, MinCount: 10})
	check("auth", s.Auth, (*Auth)(nil))
	check("reject_list", s.RejectList, "")
}

func TestElasticsearchDefaultsApplyToAPresentBlock(t *testing.T) {
	for _, block := range []string{"elasticsearch: {}\n", "elasticsearch:\n"} {
		c := mustParse(t, "c.yaml", block+minimal)
		es := c.Elasticsearch
		if es == nil {
			t.Fatalf("%q: elasticsearch is nil", block)
		}
		want := Elasticsearch{Addresses: []string{"http://127.0.0.1:9200"}, Index: "web", Shards: 1, Replicas: es.Replicas,
			BulkFlushBytes: 5_000_000, BulkFlushInterval: Duration(time.Second), BulkWorkers: 2,
			RequestTimeout: Duration(90 * time.Second)}
		if !reflect.DeepEqual(*es, want) || *es.Replicas != 1 {
			t.Errorf("%q: elasticsearch = %+v (replicas %d)", block, *es, *es.Replicas)
		}
		if c.Output.File != "" {
			t.Errorf("%q: output.file = %q, want no file sink beside elasticsearch", block, c.Output.File)
		}
	}
}

func TestExplicitValuesAreKeptOverDefaults(t *testing.T) {
	c := mustParse(t, "c.yaml", "elasticsearch: {replicas: 0}\n"+src(
		"honored_query_params: []",
		"ignored_extensions: []",
		"extraction: {remove_elements: [], remove_classes: []}",
		"max_link_depth: 0",
		"max_path_depth: 0",
		"discovery: false",
		"robots: {obey: false}",
		"politeness: {obey_crawl_delay: false}",
		"sitemap_limits: {max_depth: 0}",
	))
	s := c.Sources[0]
	for name, list := range map[string][]string{
		"honored_query_params": s.HonoredQueryParams, "ignored_extensions": s.IgnoredExtensions,
		"remove_elements": s.Extraction.RemoveElements, "remove_classes": s.Extraction.RemoveClasses,
	} {
		if list == nil || len(list) != 0 {
			t.Errorf("%s = %#v, want an explicit empty list", name, list)
		}
	}
	if s.MaxLinkDepth != 0 || s.MaxPathDepth != 0 || s.SitemapLimits.MaxDepth != 0 {
		t.Errorf("explicit zeros replaced: link %d path %d sitemap %d", s.MaxLinkDepth, s.MaxPathDepth, s.SitemapLimits.MaxDepth)
	}
	if *s.Discovery || *s.Robots.Obey || *s.Politeness.ObeyCrawlDelay {
		t.Error("explicit false replaced by a default true")
	}
	if *c.Elasticsearch.Replicas != 0 {
		t.Errorf("replicas = %d, want the explicit 0", *c.Elasticsearch.Replicas)
	}
	if s.SitemapLimits.MaxURLs != 50000 {
		t.Errorf("sitemap_limits.max_urls = %d: a partly written block still gets defaults for the rest", s.SitemapLimits.MaxURLs)
	}
}

func TestAKeyWithNoValueMeansTheDefault(t *testing.T) {
	c := mustParse(t, "c.yaml", src("honored_query_params:", "max_link_depth: ~", "orphans:", "politeness:"))
	s := c.Sources[0]
	if !slices.Equal(s.HonoredQueryParams, []string{"id"}) || s.MaxLinkDepth != 10 || s.Orphans != "keep" || s.Politeness.MaxParallelPerHost != 2 {
		t.Errorf("null values not defaulted: %v %d %q %d", s.HonoredQueryParams, s.MaxLinkDepth, s.Orphans, s.Politeness.MaxParallelPerHost)
	}
}

func TestRelativePathsResolveAgainstTheConfigDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "crawl.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	body := "state_dir: state\noutput: {file: ../out/x.ndjson}\n" + src("reject_list: reject.txt") +
		"  - name: b\n    start_urls: [http://example.org/]\n    reject_list: /etc/crawlspace/reject.txt\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, got, want string }{
		{"state_dir", c.StateDir, filepath.Join(dir, "sub", "state")},
		{"output.file", c.Output.File, filepath.Join(dir, "out", "x.ndjson")},
		{"reject_list", c.Sources[0].RejectList, filepath.Join(dir, "sub", "reject.txt")},
		{"absolute reject_list", c.Sources[1].RejectList, "/etc/crawlspace/reject.txt"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestDurationsAndSizesAcceptTheirUnits(t *testing.T) {
	c := mustParse(t, "c.yaml", "fetch: {timeout: 1h30m, max_body_bytes: 10MiB}\nelasticsearch: {bulk_flush_bytes: 5MB}\n"+
		src("max_age: 90s", "extraction: {max_body_bytes: \"512 KiB\"}", "sitemap_limits: {max_bytes: 1048576}"))
	s := c.Sources[0]
	if c.Fetch.Timeout.D() != 90*time.Minute || s.MaxAge.D() != 90*time.Second {
		t.Errorf("durations: %v, %v", c.Fetch.Timeout.D(), s.MaxAge.D())
	}
	if c.Fetch.MaxBodyBytes != 10<<20 || c.Elasticsearch.BulkFlushBytes != 5_000_000 ||
		s.Extraction.MaxBodyBytes != 512<<10 || s.SitemapLimits.MaxBytes != 1<<20 {
		t.Errorf("sizes: %d %d %d %d", c.Fetch.MaxBodyBytes, c.Elasticsearch.BulkFlushBytes, s.Extraction.MaxBodyBytes, s.SitemapLimits.MaxBytes)
	}
}

func TestTheDesignSketchLoads(t *testing.T) {
	c, err := Load("../testdata/config/design-sketch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := c.SourceByName("docs")
	if s == nil || s.Index != 0 || s.Path() != "sources[0]" {
		t.Fatalf("SourceByName(docs) = %+v", s)
	}
	r := s.CrawlRules[0]
	if r.Priority != -1 || !*r.Index || *r.Follow || r.Accept != nil || len(r.Match.And) != 2 || *r.Match.And[0].Domain != "example.com" || *r.Match.And[1].Not.Path != "/cgi-bin" {
		t.Errorf("crawl rule = %+v", r)
	}
	if !reflect.DeepEqual(r.AddMeta, map[string]string{"extra_section": "news"}) {
		t.Errorf("add_meta = %v, want the short key expanded to its extra_ field", r.AddMeta)
	}
	if s.RejectList != filepath.Join("..", "testdata", "config", "reject.txt") {
		t.Errorf("reject_list = %q", s.RejectList)
	}
	if c.SourceByName("nope") != nil {
		t.Error("SourceByName found a source that does not exist")
	}
}

func TestAMultiSourceConfigLoads(t *testing.T) {
	c, err := Load("../testdata/config/multi-source.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Sources) != 2 {
		t.Fatalf("%d sources", len(c.Sources))
	}
	hb, news := c.SourceByName("handbook"), c.SourceByName("news")
	if hb.Index != 0 || news.Index != 1 || news.Path() != "sources[1]" {
		t.Errorf("indexes %d %d", hb.Index, news.Index)
	}
	if hb.MaxAge.D() != 24*time.Hour || news.MaxAge.D() != 2*time.Hour || news.Politeness.Delay.D() != 250*time.Millisecond {
		t.Errorf("merged settings: %v %v %v", hb.MaxAge.D(), news.MaxAge.D(), news.Politeness.Delay.D())
	}
	if news.HonoredQueryParams == nil || len(news.HonoredQueryParams) != 0 || !slices.Equal(hb.HonoredQueryParams, []string{"id"}) {
		t.Errorf("honored_query_params: %#v, %#v", news.HonoredQueryParams, hb.HonoredQueryParams)
	}
	if c.ExtraFields["extra_audience"] != "keyword" {
		t.Errorf("extra_audience type %q, want the keyword default", c.ExtraFields["extra_audience"])
	}
	if news.CrawlRules[1].Match.Or[1].Length.Field != "path" {
		t.Errorf("length field %q, want the path default", news.CrawlRules[1].Match.Or[1].Length.Field)
	}
	if c.Output.File != filepath.Join("..", "testdata", "config", "out", "docs.ndjson") {
		t.Errorf("output.file = %q", c.Output.File)
	}
	if Fingerprint(hb) == Fingerprint(news) {
		t.Error("two different sources share a fingerprint")
	}
}

// Every key of the config types appears in every-key.yaml, so that file and
// docs/config.md, which is written from it, cover the whole shape.
func TestEveryKeyFileCoversEveryKey(t *testing.T) {
	c, err := Load("../testdata/config/every-key.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Lists are checked across their items: crawl_rules[2].ignore counts for crawl_rules[0].ignore.
	written := map[string]bool{}
	items := regexp.MustCompile(`\[\d+\]`)
	for p := range c.positions {
		written[items.ReplaceAllString(p, "[0]")] = true
	}
	var missing []string
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct {
			walk(t.Elem(), path+"[0]")
			return
		}
		if t.Kind() != reflect.Struct || t == reflect.TypeFor[Match]() {
			return // match trees are recursive: checked below
		}
		f := fieldsOf(t)
		for _, name := range f.names {
			p := joinPath(path, name)
			if p == "metrics_addr" {
				continue // service.address's older name, not written beside it
			}
			if !writtenForm(written, p) {
				missing = append(missing, p)
			}
			walk(t.FieldByIndex(f.index[name]).Type, p)
		}
	}
	walk(reflect.TypeFor[Config](), "")
	for _, key := range []string{"atom.field", "atom.kind", "atom.norm", "atom.value", "length.field", "length.value"} {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(written)), func(p string) bool { return strings.HasSuffix(p, "."+key) }) {
			missing = append(missing, "…"+key)
		}
	}
	if len(missing) > 0 {
		t.Errorf("keys missing from every-key.yaml: %s", strings.Join(missing, ", "))
	}
	// The match operators all appear somewhere in its rules.
	data, _ := os.ReadFile("../testdata/config/every-key.yaml")
	for _, op := range matchOps {
		if !strings.Contains(string(data), "{"+op+":") && !strings.Contains(string(data), " "+op+":") {
			t.Errorf("match operator %s missing from every-key.yaml", op)
		}
	}
}

// writtenForm reports whether the key at p, or another form of it, is
// written. A secret's forms (key, key_env, key_file) and node_name's
// exclude one another in a block, and a block that is no list item can
// show only one of them; the tests of each key read the others.
func writtenForm(written map[string]bool, p string) bool {
	forms := [][]string{
		{"password", "password_env", "password_file"},
		{"api_key", "api_key_env", "api_key_file"},
		{"node_name", "node_name_env"},
	}
	parent, key := "", p
	if i := strings.LastIndex(p, "."); i >= 0 {
		parent, key = p[:i+1], p[i+1:]
	}
	for _, group := range forms {
		if slices.Contains(group, key) {
			return slices.ContainsFunc(group, func(k string) bool { return written[parent+k] })
		}
	}
	return written[p]
}

// at finds token on the first line containing marker in data and returns
// its 1-based line and column, the way an editor shows them.
func at(t *testing.T, data, marker, token string) Position {
	t.Helper()
	for i, line := range strings.Split(data, "\n") {
		if strings.Contains(line, marker) {
			col := strings.Index(line, token)
			if col < 0 {
				t.Fatalf("%q not on the line of %q", token, marker)
			}
			return Position{Line: i + 1, Column: col + 1}
		}
	}
	t.Fatalf("no line contains %q", marker)
	return Position{}
}

func TestPosAndRefPointAtTheWrittenValue(t *testing.T) {
	const file = "../testdata/config/every-key.yaml"
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	data := string(raw)
	c, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path          string
		marker, token string
	}{
		{"elasticsearch.addresses[1]", "addresses:", `"https://127.0.0.2`},
		{"elasticsearch", "elasticsearch:", "elasticsearch"},
		{"log.level", "log: {", "debug"},
		{"sources", "sources:", "sources"},
		{"sources[0]", "- name: intranet", "name"},
		{"sources[0].start_urls[1]", "start_urls:", `"https://wiki`},
		{"sources[0].exclude[1]", "exclude: [/private/", `"regexp:`},
		{"sources[0].rules[3]", "*fs/*", "forbid"},
		{"sources[0].crawl_rules[0].match", "      - match:", "match"}, // a block value: the key's place
		{"sources[0].crawl_rules[0].match.and[0].domain", "{domain: intranet.example}", "intranet.example"},
		{"sources[0].crawl_rules[0].match.and[2].or[1].scheme", "{scheme: https}", "https}"},
		{"sources[0].crawl_rules[1].match.or[4].length.value", `{length: {field: url`, `"[300:]"`},
		{"sources[0].crawl_rules[0].add_meta.section", "add_meta: {section", "section"},
		{"sources[0].headers.X-Crawler", "headers:", "X-Crawler"},
		{"sources[0].politeness.delay", "politeness: {delay", "500ms"},
		{"sources[0].extraction.meta_mappings[1]", "meta_mappings:", `"dc.subject`},
		{"extra_fields.extra_rating", "extra_rating:", "extra_rating"},
		// Keys left to their defaults fall back to the nearest written parent.
		{"sources[0].crawl_rules[0].ignore", "      - match:", "match"},
	} {
		want := at(t, data, tc.marker, tc.token)
		if got := c.Pos(tc.path); got != want {
			t.Errorf("Pos(%s) = %d:%d, want %d:%d", tc.path, got.Line, got.Column, want.Line, want.Column)
		}
		if got, w := c.Ref(tc.path), file+":"+strconv.Itoa(want.Line)+":"+strconv.Itoa(want.Column)+" "+tc.path; got != w {
			t.Errorf("Ref = %q, want %q", got, w)
		}
	}
	if got := c.Ref("nowhere.at.all"); got != "nowhere.at.all" {
		t.Errorf("Ref of an unwritten path = %q", got)
	}
	e := c.Errorf(SourcePath(0)+".rules[3]", "forbidden by %s", "me")
	want := at(t, data, "*fs/*", "forbid")
	if e.Line != want.Line || e.Column != want.Column || e.Path != "sources[0].rules[3]" || e.File != file || e.Msg != "forbidden by me" {
		t.Errorf("Errorf = %+v", e)
	}
}
