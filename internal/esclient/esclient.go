// Package esclient makes the client crawlspace talks to Elasticsearch with: go-elasticsearch's
// esapi functions over its elastic-transport-go transport, as go-elasticsearch's NewClient
// assembles them.
//
// It stands in for go-elasticsearch's root package because that package links the typed API as
// well: 858 packages that every build compiles and staticcheck analyses, and that crawlspace never
// calls (a race build of the root package from an empty cache took 308 CPU-seconds on this
// project's 2-core machine, of esapi and the transport 96).
package esclient

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/elastic/elastic-transport-go/v8/elastictransport"
	tpversion "github.com/elastic/elastic-transport-go/v8/elastictransport/version"
	"github.com/elastic/go-elasticsearch/v8/esapi"
)

// Config is the part of go-elasticsearch's Config that crawlspace sets.
type Config struct {
	// Addresses are the nodes' URLs, at least one (the configuration always names one).
	Addresses []string
	// Username and Password are HTTP basic credentials; credentials in the first address's
	// URL take their place. APIKey, when set, is sent instead of both.
	Username, Password, APIKey string
	// Transport carries the requests (TLS, timeouts, observation); nil is http.DefaultTransport.
	Transport http.RoundTripper
	// DisableRetry turns off the transport's retries of 502, 503 and 504 answers, for callers
	// that retry with their own backoff.
	DisableRetry bool
}

// Client is go-elasticsearch's esapi API over one transport.
type Client struct {
	*esapi.API
	tp         *elastictransport.Client
	meta       string
	compatible bool
	// genuine is set once a successful answer has said it came from Elasticsearch.
	genuine atomic.Bool
}

// New returns a client for the nodes cfg names.
func New(cfg Config) (*Client, error) {
	urls, err := addresses(cfg.Addresses)
	if err != nil {
		return nil, fmt.Errorf("cannot create client: %s", err)
	}
	opts := []elastictransport.Option{
		elastictransport.WithUserAgent(userAgent()),
		elastictransport.WithURLs(urls...),
	}
	if u := urls[0].User; u != nil {
		cfg.Username = u.Username()
		cfg.Password, _ = u.Password()
	}
	if cfg.APIKey != "" {
		opts = append(opts, elastictransport.WithAPIKey(cfg.APIKey))
	} else if cfg.Username != "" || cfg.Password != "" {
		opts = append(opts, elastictransport.WithBasicAuth(cfg.Username, cfg.Password))
	}
	if cfg.DisableRetry {
		opts = append(opts, elastictransport.WithDisableRetry())
	}
	if cfg.Transport != nil {
		opts = append(opts, elastictransport.WithTransport(cfg.Transport))
	}
	tp, err := elastictransport.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("error creating transport: %s", err)
	}
	compatible, _ := strconv.ParseBool(os.Getenv("ELASTIC_CLIENT_APIVERSIONING"))
	c := &Client{tp: tp, meta: metaHeader(), compatible: compatible}
	c.API = esapi.New(c)
	return c, nil
}

const compatibilityHeader = "application/vnd.elasticsearch+json;compatible-with=8"

// Perform sends req through the transport, with the headers go-elasticsearch adds, and refuses
// a server whose first successful answer does not say it is Elasticsearch.
func (c *Client) Perform(req *http.Request) (*http.Response, error) {
	if c.compatible {
		if req.Body != nil {
			req.Header.Set("Content-Type", compatibilityHeader)
		}
		req.Header.Set("Accept", compatibilityHeader)
	}
	if prior := req.Header.Get("X-Elastic-Client-Meta"); prior != "" {
		req.Header.Set("X-Elastic-Client-Meta", c.meta+","+prior)
	} else {
		req.Header.Set("X-Elastic-Client-Meta", c.meta)
	}
	res, err := c.tp.Perform(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 && !c.genuine.Load() {
		if res.Header.Get("X-Elastic-Product") != "Elasticsearch" {
			res.Body.Close()
			return nil, errors.New("the client noticed that the server is not Elasticsearch and we do not support this unknown product")
		}
		c.genuine.Store(true)
	}
	return res, nil
}

func addresses(addrs []string) ([]*url.URL, error) {
	if len(addrs) == 0 {
		return nil, errors.New("no address")
	}
	urls := make([]*url.URL, 0, len(addrs))
	for _, a := range addrs {
		u, err := url.Parse(strings.TrimRight(a, "/"))
		if err != nil {
			return nil, fmt.Errorf("cannot parse url: %v", err)
		}
		urls = append(urls, u)
	}
	return urls, nil
}

var goVersion = regexp.MustCompile(`go(\d+\.\d+\..+)`)

func userAgent() string {
	v := goVersion.ReplaceAllString(runtime.Version(), "$1")
	if v == "" {
		v = runtime.Version()
	}
	return fmt.Sprintf("go-elasticsearch/%s (%s %s; Go %s)", esapi.Version, runtime.GOOS, runtime.GOARCH, v)
}

var metaVersion = regexp.MustCompile("([0-9.]+)(.*)")

// metaHeader is X-Elastic-Client-Meta as go-elasticsearch sends it: the client's, Go's and the
// transport's versions.
func metaHeader() string {
	strip := func(version string) string {
		v := metaVersion.FindStringSubmatch(version)
		if len(v) != 3 || strings.Contains(version, "devel") {
			return "0.0p"
		}
		if v[2] != "" {
			return v[1] + "p"
		}
		return v[1]
	}
	goV := strip(runtime.Version())
	return "es=" + strip(esapi.Version) + ",go=" + goV + ",t=" + strip(tpversion.Transport) + ",hc=" + goV
}
