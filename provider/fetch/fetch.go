// Package fetch is how the crawler reaches a site: one Source per
// configured source owns the transport (the address rules checked at dial
// time, the proxy, the CA, the body decoding and its limit), the
// credentials and custom headers and the hosts they may go to, and the
// redirect policy of each kind of request. Pages, robots.txt, sitemaps and
// feeds go through it, and so does `crawlspace explain`, so what explain
// calls allowed is what the crawl is allowed.
//
// Deciding what to do with an answer (its status, its type, its body) is
// the caller's; the one decision made here is to stop downloading a page
// whose Content-Type the crawl space refuses, which only the headers'
// arrival can make in time.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/netip"
	"net/url"
	"sync"
	"time"

	"github.com/gocolly/colly/v2"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/render"
	"github.com/crawlspace/crawlspace/robots"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// Source is the fetch layer of one configured source. Each source has its
// own transport so the dialer can apply this source's address rules to
// the address actually connected to: connections are pooled per transport,
// and a connection dialed for one source is never reused for another.
// It is safe for concurrent use.
type Source struct {
	name      string
	rules     *rules.Source
	userAgent string
	accept    string
	// own holds scheme://host:port of the start URLs: the hosts whose
	// politeness this source sets, and the only hosts its credentials and
	// headers go to.
	own     map[string]bool
	headers http.Header
	// strip names every custom header of any source, removed with
	// Authorization on a redirect to another host.
	strip map[string]bool
	// listing fetches sitemaps and feeds, robots robots.txt; pages are
	// fetched by clones of coll, one per request at a time (pages), but
	// for conditional GETs colly would send unchanged (recheck).
	listing *http.Client
	robots  *http.Client
	coll    *colly.Collector
	pages   sync.Pool
	// recheck makes the conditional GETs colly would send unchanged,
	// without colly (page.go, recheck): the same transport, timeout,
	// redirect policy and cookie jar. maxRead is colly's body limit.
	recheck *http.Client
	maxRead int64
	// timeout is fetch.timeout, a deadline on each page request's context
	// rather than the clients' Timeout: net/http enforces a client Timeout
	// over a wrapped transport (decodingTransport) with two goroutines and
	// a timer a request, a tenth of a re-crawl's CPU for a 304. expired is
	// the deadline's cause, made once rather than for every request.
	timeout time.Duration
	expired error
	// auth is the source's authentication, nil without an auth block.
	auth *auth
	// browser renders the pages the crawl space says to render; sub makes
	// the requests of those pages, following no redirect. maxBody bounds
	// each of their bodies and the rendered DOM.
	browser *render.Browser
	sub     *http.Client
	maxBody int64
	// robotsAllow and delay are Options.Robots and Options.Delay.
	robotsAllow func(ctx context.Context, u *url.URL) (bool, string, error)
	delay       func(hostKey string) time.Duration
	// now is Options.Now, time.Now when that is nil.
	now func() time.Time
}

// Options are what the fetch layer takes besides the configuration.
type Options struct {
	// Accept is the Accept header of page requests: the media types the
	// crawler can read.
	Accept string
	// Sniff names the media type of a body by its first bytes (up to
	// 1 KiB), for page responses whose Content-Type says nothing
	// (docfields.Generic): the type the crawl space then decides on before
	// the rest is downloaded. Nil leaves such responses as they came.
	Sniff func(prefix []byte) string
	// Browser renders the pages whose source or crawl rule asks for it;
	// nil when nothing renders.
	Browser *render.Browser
	// Robots says whether robots.txt lets the crawler have u, and the line
	// that decided, for the requests of a rendered page, whatever their
	// host (the page itself was checked before it was fetched); an error
	// (robots.txt unreachable) refuses. Nil when the source ignores
	// robots.txt.
	Robots func(ctx context.Context, u *url.URL) (allowed bool, line string, err error)
	// Delay is the pause a host wants between two requests (its
	// politeness.delay, or its robots.txt Crawl-delay): a rendered page's
	// requests to one host are made one at a time, this far apart. Nil
	// makes them one at a time with no pause.
	Delay func(hostKey string) time.Duration
	// Now is the crawler's clock, which paces a rendered page's requests;
	// nil means time.Now.
	Now func() time.Time
}

// New builds the fetch layer of the source sc of cfg, whose compiled rules
// are rs.
func New(cfg *config.Config, sc *config.Source, rs *rules.Source, opts Options) (*Source, error) {
	s := &Source{name: sc.Name, rules: rs, userAgent: cfg.UserAgent, accept: opts.Accept,
		own: map[string]bool{}, headers: http.Header{}, strip: map[string]bool{}, now: opts.Now}
	if s.now == nil {
		s.now = time.Now
	}
	for _, u := range rs.StartURLs() {
		s.own[urlnorm.Origin(u)] = true
	}
	for k, v := range sc.Headers {
		s.headers.Set(k, v)
	}
	for i := range cfg.Sources {
		for k := range cfg.Sources[i].Headers {
			s.strip[http.CanonicalHeaderKey(k)] = true
		}
	}
	tr, err := newTransport(cfg, func(ip netip.Addr) error {
		if d := rs.DecideAddress(ip); !d.Crawl {
			return &AddressError{IP: ip, Reason: string(d.Reason), Rule: d.Rule}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var rt http.RoundTripper = &decodingTransport{base: tr, limit: cfg.Fetch.MaxBodyBytes, docLimit: cfg.Fetch.MaxDocumentBytes, sniff: opts.Sniff}
	rt = locationTransport{base: rt}
	if sc.Auth != nil {
		if sc.Auth.Method == config.AuthNTLM {
			noHTTP2(tr)
		}
		if s.auth, err = newAuth(sc.Name, sc.Auth, s.own, rt); err != nil {
			return nil, err
		}
		rt = &authTransport{base: rt, a: s.auth}
	}
	// The caller follows a sitemap's redirects, judging each hop as it
	// judges the file (provider/discover.go).
	s.listing = &http.Client{Transport: rt, Timeout: cfg.Fetch.Timeout.D(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	s.robots = robots.Client(&http.Client{Transport: rt, Timeout: cfg.Fetch.Timeout.D(), CheckRedirect: s.keepHeadersHome})
	s.coll = newCollector(cfg, rt)
	// colly's default jar, made here so that rechecks share it.
	jar, _ := cookiejar.New(nil)
	s.coll.SetCookieJar(jar)
	s.timeout = cfg.Fetch.Timeout.D()
	s.expired = timeoutError(s.timeout)
	s.recheck = &http.Client{Transport: rt, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	s.maxRead = maxRead(cfg)
	if opts.Browser != nil {
		s.browser, s.maxBody = opts.Browser, cfg.Fetch.MaxBodyBytes
		s.robotsAllow, s.delay = opts.Robots, opts.Delay
		s.sub = &http.Client{Transport: rt, Timeout: cfg.Fetch.Timeout.D(),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if s.auth != nil && sc.Auth.Method == config.AuthForm {
		signIn := &http.Client{Transport: rt, Timeout: cfg.Fetch.Timeout.D(), CheckRedirect: s.redirectPolicy(cfg.Fetch.MaxRedirects)}
		if s.auth.form, err = newFormAuth(s.auth, signIn, s.setHeaders); err != nil {
			return nil, err
		}
		// One jar for every request of the source: the session signed in
		// for pages holds for robots.txt, sitemaps and feeds too.
		s.listing.Jar = s.auth.form.jar
		s.robots.Jar = s.auth.form.jar
		s.coll.SetCookieJar(s.auth.form.jar)
		s.recheck.Jar = s.auth.form.jar
		if s.sub != nil {
			s.sub.Jar = s.auth.form.jar
		}
	}
	s.pages.New = func() any { return s.newPageFetch() }
	return s, nil
}

// Name is the name of the source.
func (s *Source) Name() string { return s.name }

// Hosts are the hosts of the source's start URLs, as frontier.HostKey gives them.
func (s *Source) Hosts() map[string]bool { return s.own }

// Auth says which authentication a request for rawURL gets: "" when the
// source has none, else the method and user, or why none is sent. It never
// holds a secret.
func (s *Source) Auth(rawURL string) string {
	if s.auth == nil {
		return ""
	}
	return s.auth.describe(rawURL)
}

// AuthFor says which authentication a request for rawURL gets from the
// source sc whose start URLs are startURLs, as Source.Auth does, without
// building a transport: explain -offline and status answer from the config.
func AuthFor(sc *config.Source, startURLs []string, rawURL string) string {
	if sc == nil || sc.Auth == nil {
		return ""
	}
	own := map[string]bool{}
	for _, u := range startURLs {
		own[urlnorm.Origin(u)] = true
	}
	a, err := newAuth(sc.Name, sc.Auth, own, nil)
	if err != nil {
		return ""
	}
	return a.describe(rawURL)
}

// ResetAuth forgets a failed sign-in, so the next request tries again. The
// crawler calls it as each cycle starts: within a cycle a source that could
// not sign in is asked nothing more.
func (s *Source) ResetAuth() {
	if s.auth == nil {
		return
	}
	s.auth.failed.set(nil)
	if s.auth.form != nil {
		s.auth.form.reset()
	}
	if s.auth.krb != nil {
		s.auth.krb.reset()
	}
}

// Get fetches a sitemap or a feed, or one hop of its redirects: a 3xx is
// returned, not followed, so that the caller judges where it leads before
// any request goes there. The body stops after limit decoded bytes with an
// error. The caller closes the body.
func (s *Source) Get(ctx context.Context, rawURL string, limit int64) (*http.Response, error) {
	if f := s.formFor(rawURL); f != nil {
		// A sitemap behind the login needs the session a page would have.
		if _, err := f.session(ctx); err != nil {
			return nil, err
		}
	}
	req, err := http.NewRequestWithContext(withBodyLimit(ctx, limit), http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	s.setHeaders(req.Header, rawURL)
	return s.listing.Do(req)
}

// Robots fetches a robots.txt as robots.Fetcher does, with the source's
// credentials: a site behind authentication serves its robots.txt behind
// it too, and without them a 401 would read as "everything allowed".
func (s *Source) Robots(ctx context.Context, robotsURL string) (int, io.ReadCloser, error) {
	if f := s.formFor(robotsURL); f != nil {
		// A robots.txt behind the login is the site's, not its login page.
		if _, err := f.session(ctx); err != nil {
			return 0, nil, err
		}
	}
	// The cache reads one byte past what it parses, to know the file was cut.
	req, err := http.NewRequestWithContext(withBodyLimit(ctx, robots.MaxSize+1), http.MethodGet, robotsURL, nil)
	if err != nil {
		return 0, nil, err
	}
	s.setHeaders(req.Header, robotsURL)
	res, err := s.robots.Do(req)
	if err != nil {
		return 0, nil, err
	}
	return res.StatusCode, res.Body, nil
}

// Set is the fetch layer of every source of a configuration, in its order.
type Set []*Source

// NewSet builds the fetch layer of every source of cfg.
func NewSet(cfg *config.Config, rs *rules.Set, opts Options) (Set, error) {
	set := make(Set, 0, len(cfg.Sources))
	for i := range cfg.Sources {
		sc := &cfg.Sources[i]
		r := rs.Source(sc.Name)
		if r == nil {
			return nil, fmt.Errorf("source %s: no compiled rules", sc.Name)
		}
		s, err := New(cfg, sc, r, opts)
		if err != nil {
			return nil, err
		}
		set = append(set, s)
	}
	return set, nil
}

// Owner is the source whose start URLs are on the host, else the first
// source: a host's politeness and robots.txt are the same whichever
// source found the URL (rules.Set.HostOwner picks the same, for explain
// and status).
func (set Set) Owner(hostKey string) *Source {
	for _, s := range set {
		if s.own[hostKey] {
			return s
		}
	}
	return set[0]
}

// Robots fetches a robots.txt through the source owning its host, so the
// address rules, credentials and TLS settings apply to it too.
func (set Set) Robots(ctx context.Context, robotsURL string) (int, io.ReadCloser, error) {
	return set.Owner(urlnorm.Origin(robotsURL)).Robots(ctx, robotsURL)
}

// redirectPolicy follows up to limit redirects for a form sign-in (pages
// are not followed: each hop is queued; sitemaps and feeds are followed by
// the caller, hop by hop; robots.txt follows robots.Client's).
func (s *Source) redirectPolicy(limit int) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > limit {
			return errors.New("too many redirects")
		}
		return s.keepHeadersHome(req, via)
	}
}

// keepHeadersHome gives each hop of a redirect the headers its own URL
// gets (setHeaders): net/http copies the first request's headers onto
// every hop, custom headers always and Authorization unless the host name
// changes (another port or scheme keeps it), so a hop off the source's
// hosts, or one after it, would carry them.
func (s *Source) keepHeadersHome(req *http.Request, via []*http.Request) error {
	if !s.own[urlnorm.Origin(req.URL.String())] {
		req.Header.Del("Authorization")
		for k := range s.strip {
			req.Header.Del(k)
		}
	}
	return nil
}

// setHeaders sets the headers of a request for rawURL: the source's own
// headers when the URL is on one of its hosts (credentials go nowhere else),
// then the crawler's User-Agent and the codings it decodes, which a
// configured header does not replace.
func (s *Source) setHeaders(h http.Header, rawURL string) {
	if s.own[urlnorm.Origin(rawURL)] {
		for k, v := range s.headers {
			h[k] = v
		}
	}
	h.Set("User-Agent", s.userAgent)
	h.Set("Accept-Encoding", acceptEncoding)
}
