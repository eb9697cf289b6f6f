// Package layering holds the module's import rules, the one table of
// which package may import which (arrows), and the test that keeps them:
// it reads the import graph with `go list -deps -json ./...` and fails,
// naming the import chain, on an arrow the table does not allow or a link
// from a leaf package to an engine. docs/architecture.md's "Layering"
// section is generated from the table (go test ./internal/layering
// -update rewrites it; the test fails while it differs).
package layering

// arrow is one row of the table: a package of the module (its path
// relative to the module) and what it may import directly: packages of the
// module, and the engines' own modules (a path with a dot, standing for
// the packages under it). A leaf links none of the engines, directly or
// through any chain of imports.
type arrow struct {
	pkg     string
	imports []string
	leaf    bool
}

// arrows lists every package of the module. A package that is not listed,
// or an import that its row does not name, fails the test: adding an arrow
// is a decision made here, in one place, and shown in the architecture.
var arrows = []arrow{
	// Leaves: what a URL is, what the config says, how a page or file reads.
	{"urlnorm", nil, true},
	{"docfields", nil, true},
	{"passage", []string{"docfields"}, true},
	{"config", []string{"docfields", "passage", "urlnorm"}, true},
	{"rules", []string{"config", "docfields", "urlnorm"}, true},
	{"robots", []string{"urlnorm"}, true},
	{"sitemap", []string{"internal/xmlguard", "urlnorm"}, true},
	{"htmllex", nil, true},
	{"charset", nil, true},
	{"mapping", []string{"charset", "config", "docfields", "document", "htmllex", "robots", "rules", "urlnorm"}, true},
	{"document", nil, true},
	{"document/office", []string{"document", "internal/xmlguard"}, true},
	{"document/pdf", []string{"document"}, true},
	{"document/rtf", []string{"document"}, true},
	{"document/text", []string{"charset", "document"}, true},
	{"document/tika", []string{"document"}, true},

	// Engines and services: the state stores, the browser, the index.
	{"frontier", []string{"urlnorm", "go.etcd.io/bbolt"}, false},
	{"frontier/esfrontier", []string{"frontier", "internal/esclient", "urlnorm"}, false},
	{"frontier/internal/layout", []string{"frontier", "go.etcd.io/bbolt"}, false},
	{"frontier/internal/scale", []string{"frontier", "go.etcd.io/bbolt"}, false},
	{"render", []string{"github.com/chromedp"}, false},
	{"embed", []string{"config", "internal/redact"}, false},
	{"search", []string{"docfields", "embed"}, false},
	// The Elasticsearch client: go-elasticsearch's esapi over its transport, without the
	// typed API that its root package links.
	{"internal/esclient", []string{"github.com/elastic/go-elasticsearch", "github.com/elastic/elastic-transport-go"}, false},
	{"sink", []string{"config", "docfields", "embed", "internal/esclient", "internal/redact", "passage", "github.com/elastic/go-elasticsearch"}, false},

	// The crawl and what runs it.
	{"provider/fetch", []string{"config", "docfields", "internal/redact", "render", "robots", "rules", "urlnorm", "github.com/gocolly/colly"}, false},
	{"provider", []string{"config", "docfields", "document", "document/office", "document/pdf", "document/rtf", "document/text", "document/tika", "frontier", "frontier/esfrontier", "mapping", "provider/fetch", "render", "robots", "rules", "sink", "sitemap", "urlnorm"}, false},
	{"monitor", []string{"config", "frontier", "frontier/esfrontier", "provider"}, false},
	{"control", []string{"config", "embed", "provider"}, false},
	{"cmd/crawlspace", []string{"config", "control", "docfields", "document/pdf", "embed", "frontier", "frontier/esfrontier", "mapping", "monitor", "provider", "provider/fetch", "robots", "rules", "search", "sink", "urlnorm"}, false},

	// Production helpers under internal/.
	{"internal/redact", nil, true},
	{"internal/xmlguard", nil, true},

	// Test parts: imported by tests only, so no production package names them.
	{"internal/benchpage", nil, false},
	{"internal/chromiumtest", nil, false},
	{"internal/conformance", nil, false},
	{"internal/crawltest", []string{"config", "provider", "rules", "sink"}, false},
	{"internal/embedtest", []string{"docfields", "internal/servicetest"}, false},
	{"internal/estest", []string{"internal/esclient", "internal/faultproxy", "internal/servicetest", "github.com/elastic/go-elasticsearch"}, false},
	{"internal/fakeclock", nil, false},
	{"internal/faultproxy", nil, false},
	{"internal/hostile", nil, false},
	{"internal/layering", nil, false},
	{"internal/packaging", nil, false},
	{"internal/pdftest", nil, false},
	{"internal/pdftest/warm", []string{"document", "document/pdf"}, false},
	{"internal/proctest", nil, false},
	{"internal/servicetest", nil, false},
	{"internal/tikatest", []string{"internal/servicetest"}, false},
	{"internal/tmpfs", nil, false},
	{"internal/wordmatch", nil, false},

	// Benchmark and soak tools.
	{"bench/benchtool", []string{"config", "docfields", "provider/fetch", "rules"}, false},
	{"bench/collypeer", []string{"github.com/gocolly/colly"}, false},
	{"bench/pdfcompare", []string{"document", "document/pdf", "internal/wordmatch"}, false},
	{"bench/rendercompare", []string{"render"}, false},
	{"bench/semantic", []string{"config", "docfields", "embed", "internal/esclient", "mapping", "passage", "provider", "rules", "search", "sink"}, false},
	{"bench/site", nil, false},
	{"bench/soaktool", []string{"internal/faultproxy", "internal/hostile"}, false},
}

// engine is what a leaf must not link: import paths, each standing for
// itself and the packages under it. A path without a dot is the module's;
// one with a dot is imported directly only where the table says so.
type engine struct {
	name  string
	paths []string
}

var engines = []engine{
	{"the storage engine", []string{"go.etcd.io/bbolt", "frontier"}},
	{"the crawler's HTTP client", []string{"provider/fetch", "github.com/gocolly/colly"}},
	{"an Elasticsearch client", []string{"internal/esclient", "github.com/elastic/go-elasticsearch", "github.com/elastic/elastic-transport-go"}},
	{"the browser", []string{"render", "github.com/chromedp"}},
}
