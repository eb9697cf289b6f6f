package provider

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"

	"github.com/gocolly/colly/v2"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/mapping"
	"github.com/crawlspace/crawlspace/robots"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// source is one configured source with everything compiled for it.
type source struct {
	cfg       *config.Source
	rules     *rules.Source
	extractor *mapping.Extractor
	// coll fetches pages. Each source has its own collector and transport
	// so the dialer can apply this source's address rules to the address
	// actually connected to: connections are pooled per transport, and a
	// connection dialed for one source is never reused for another.
	coll *colly.Collector
	// client fetches robots.txt, sitemaps and feeds over the same transport.
	client       *http.Client
	robotsClient *http.Client
	// own holds scheme://host:port of the start URLs: the hosts whose
	// politeness this source sets, and the only hosts its credentials and
	// headers go to.
	own     map[string]bool
	headers http.Header
}

func (c *Crawler) newSource(sc *config.Source) (*source, error) {
	rs := c.rules.Source(sc.Name)
	if rs == nil {
		return nil, fmt.Errorf("source %s: no compiled rules", sc.Name)
	}
	src := &source{cfg: sc, rules: rs, extractor: mapping.New(c.cfg, sc), own: map[string]bool{}, headers: http.Header{}}
	for _, u := range rs.StartURLs() {
		src.own[urlnorm.Origin(u)] = true
	}
	for k, v := range sc.Headers {
		src.headers.Set(k, v)
		c.sourceHeaders[http.CanonicalHeaderKey(k)] = true
	}
	if sc.Auth != nil {
		req := &http.Request{Header: http.Header{}}
		req.SetBasicAuth(sc.Auth.Username, sc.Auth.Password)
		src.headers.Set("Authorization", req.Header.Get("Authorization"))
	}
	tr, err := newTransport(c.cfg, func(ip netip.Addr) error {
		if d := rs.DecideAddress(ip); !d.Crawl {
			return &addressError{ip: ip, reason: string(d.Reason), rule: d.Rule}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rt := &decodingTransport{base: tr, limit: c.cfg.Fetch.MaxBodyBytes}
	src.client = &http.Client{Transport: rt, Timeout: c.cfg.Fetch.Timeout.D(), CheckRedirect: c.redirectPolicy(c.cfg.Fetch.MaxRedirects)}
	src.robotsClient = robots.Client(&http.Client{Transport: rt, Timeout: c.cfg.Fetch.Timeout.D(), CheckRedirect: c.keepHeadersHome})
	src.coll = c.newCollector(rt)
	return src, nil
}

// redirectPolicy follows up to limit redirects for sitemaps and feeds
// (pages are not followed by the client: each hop is queued; robots.txt
// follows robots.Client's).
func (c *Crawler) redirectPolicy(limit int) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > limit {
			return errors.New("too many redirects")
		}
		return c.keepHeadersHome(req, via)
	}
}

// keepHeadersHome sends credentials and custom headers to the host they
// were meant for only; net/http strips Authorization across domains but not
// custom headers.
func (c *Crawler) keepHeadersHome(req *http.Request, via []*http.Request) error {
	if urlnorm.Origin(via[len(via)-1].URL.String()) != urlnorm.Origin(req.URL.String()) {
		req.Header.Del("Authorization")
		for k := range c.sourceHeaders {
			req.Header.Del(k)
		}
	}
	return nil
}

// addressError is the dialer's refusal of an address the source's rules forbid.
type addressError struct {
	ip     netip.Addr
	reason string
	rule   string
}

func (e *addressError) Error() string {
	if e.rule != "" {
		return fmt.Sprintf("address %s refused (%s, %s)", e.ip, e.reason, e.rule)
	}
	return fmt.Sprintf("address %s refused (%s)", e.ip, e.reason)
}

// newCollector builds the colly collector of one source. Redirects are not
// followed by the client: each 3xx is recorded and its target queued as a
// URL of its own, so every hop passes the crawl space and robots.txt, keeps
// its own state and is fetched at most once.
func (c *Crawler) newCollector(tr http.RoundTripper) *colly.Collector {
	f := c.cfg.Fetch
	coll := colly.NewCollector(
		colly.UserAgent(c.cfg.UserAgent),
		// The frontier deduplicates; colly's visited set would only grow.
		colly.AllowURLRevisit(),
		// Every status reaches OnResponse, so errors are classified in one place.
		colly.ParseHTTPErrorResponse(),
		// One more byte than allowed tells an over-size body from one that
		// fits exactly; the transport counts the limit in decoded bytes
		// and leaves colly nothing to decompress.
		colly.MaxBodySize(int(f.MaxBodyBytes)+1),
	)
	coll.WithTransport(tr)
	coll.SetRequestTimeout(f.Timeout.D())
	coll.SetRedirectHandler(func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse })
	coll.OnResponseHeaders(func(r *colly.Response) {
		res := r.Ctx.GetAny(resultKey).(*fetchResult)
		res.status = r.StatusCode
		res.header = r.Headers.Clone()
		// colly would convert a body whose Content-Type names a charset,
		// trusting the label whatever the bytes say; mapping decides the
		// encoding once, from the bytes and every declaration. The map is
		// the one colly reads after the body; the copy above is ours.
		r.Headers.Del("Content-Type")
		if r.StatusCode != http.StatusOK {
			// Redirects, errors and not-modified answers are never indexed: skip their bodies.
			r.Request.Abort()
			return
		}
		if d := res.src.rules.DecideMIME(res.header.Get("Content-Type"), res.url); !d.Crawl {
			res.skip = d
			r.Request.Abort()
		}
	})
	coll.OnResponse(func(r *colly.Response) {
		res := r.Ctx.GetAny(resultKey).(*fetchResult)
		res.body = r.Body
	})
	coll.OnError(func(r *colly.Response, err error) {
		res := r.Ctx.GetAny(resultKey).(*fetchResult)
		if res.err == nil && !errors.Is(err, colly.ErrAbortedAfterHeaders) {
			res.err = err
		}
	})
	return coll
}

// setHeaders sets the headers of a request for rawURL: the source's own
// headers when the URL is on one of its hosts (credentials go nowhere else),
// then the crawler's User-Agent and the codings it decodes, which a
// configured header does not replace.
func (s *source) setHeaders(h http.Header, rawURL, userAgent string) {
	if s.own[urlnorm.Origin(rawURL)] {
		for k, v := range s.headers {
			h[k] = v
		}
	}
	h.Set("User-Agent", userAgent)
	h.Set("Accept-Encoding", acceptEncoding)
}
