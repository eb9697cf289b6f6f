// Package provider is the web provider: it crawls each configured source
// with colly, turns pages into documents through mapping and hands them to
// a sink.
//
// Concurrency is bounded by a fixed pool of workers, each calling colly
// synchronously; colly's own Async mode would start a goroutine per request
// with no bound on how many wait.
package provider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gocolly/colly/v2"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/mapping"
	"github.com/crawlspace/crawlspace/sink"
)

// Crawler runs crawl cycles over every source of one configuration.
type Crawler struct {
	cfg     *config.Config
	sink    sink.Sink
	report  *Report
	log     *slog.Logger
	sources []*source
	coll    *colly.Collector
	q       *queue
	// sourceHeaders names every custom header of any source, to strip on
	// a redirect to another host.
	sourceHeaders map[string]bool
}

type source struct {
	cfg       *config.Source
	extractor *mapping.Extractor
	// own holds scheme://host:port of the start URLs: the hosts the source
	// stays on, and the only hosts its credentials and headers go to.
	own     map[string]bool
	mime    map[string]bool
	headers http.Header
}

// New prepares a crawler. The sink must report its results to report.SinkResult.
func New(cfg *config.Config, s sink.Sink, report *Report, log *slog.Logger) (*Crawler, error) {
	if log == nil {
		log = slog.Default()
	}
	c := &Crawler{cfg: cfg, sink: s, report: report, log: log, sourceHeaders: map[string]bool{}}
	for i := range cfg.Sources {
		sc := &cfg.Sources[i]
		ex, err := mapping.New(cfg, sc)
		if err != nil {
			return nil, err
		}
		src := &source{cfg: sc, extractor: ex, own: map[string]bool{}, mime: map[string]bool{}, headers: http.Header{}}
		for _, raw := range sc.StartURLs {
			u, err := url.Parse(raw)
			if err != nil {
				return nil, fmt.Errorf("source %s: start URL %q: %w", sc.Name, raw, err)
			}
			src.own[hostKey(u)] = true
		}
		for _, m := range sc.MimeTypes {
			src.mime[strings.ToLower(m)] = true
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
		c.sources = append(c.sources, src)
	}
	if err := c.setupCollector(); err != nil {
		return nil, err
	}
	if cfg.Fetch.InsecureSkipVerify {
		report.Warn("TLS certificates are not verified (fetch.insecure_skip_verify)")
		log.Warn("TLS certificates are not verified", "setting", "fetch.insecure_skip_verify")
	}
	return c, nil
}

// fetchResult travels with a request through colly's callbacks.
type fetchResult struct {
	it       item
	status   int
	header   http.Header
	body     []byte
	finalURL *url.URL
	skip     string // a reason decided from the headers; the body was not downloaded
	err      error
}

const resultKey = "crawlspace.result"

var errTooManyRedirects = errors.New("too many redirects")

func (c *Crawler) setupCollector() error {
	tr, err := newTransport(c.cfg)
	if err != nil {
		return err
	}
	f := c.cfg.Fetch
	coll := colly.NewCollector(
		colly.UserAgent(c.cfg.UserAgent),
		// We deduplicate in the frontier; colly's visited set would only grow.
		colly.AllowURLRevisit(),
		// Every status reaches OnResponse, so errors are classified in one place.
		colly.ParseHTTPErrorResponse(),
		// One more byte than allowed tells an over-size body from one that fits exactly.
		colly.MaxBodySize(int(f.MaxBodyBytes)+1),
	)
	coll.WithTransport(tr)
	coll.SetRequestTimeout(f.Timeout.D())
	coll.SetRedirectHandler(func(req *http.Request, via []*http.Request) error {
		if len(via) > f.MaxRedirects {
			return errTooManyRedirects
		}
		// Credentials and custom headers go to the host they were meant for
		// only; net/http strips Authorization across domains but not ours.
		if hostKey(via[len(via)-1].URL) != hostKey(req.URL) {
			req.Header.Del("Authorization")
			for k := range c.sourceHeaders {
				req.Header.Del(k)
			}
		}
		return nil
	})
	coll.OnResponseHeaders(func(r *colly.Response) {
		res := r.Ctx.GetAny(resultKey).(*fetchResult)
		res.status = r.StatusCode
		res.header = r.Headers.Clone()
		res.finalURL = r.Request.URL
		if r.StatusCode != http.StatusOK {
			// Error pages and not-modified answers are never indexed: skip their bodies.
			r.Request.Abort()
			return
		}
		if mt := mediaType(r.Headers.Get("Content-Type")); !res.it.source.mime[mt] {
			res.skip = "mime_type"
			r.Request.Abort()
		}
	})
	coll.OnResponse(func(r *colly.Response) {
		res := r.Ctx.GetAny(resultKey).(*fetchResult)
		res.body = r.Body
		res.header = r.Headers.Clone()
	})
	coll.OnError(func(r *colly.Response, err error) {
		res := r.Ctx.GetAny(resultKey).(*fetchResult)
		if res.err == nil {
			res.err = err
		}
	})
	c.coll = coll
	return nil
}

// Crawl runs one cycle of every source: start URLs, then every in-scope link
// found, until nothing is waiting. It returns when the cycle is done or ctx
// ends; documents handed to the sink are flushed either way.
func (c *Crawler) Crawl(ctx context.Context) error {
	c.q = newQueue()
	for _, src := range c.sources {
		for _, raw := range src.cfg.StartURLs {
			c.enqueue(src, raw, 0)
		}
	}
	workers := max(c.cfg.Fetch.Concurrency, 1)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				it, err := c.q.next(ctx)
				if err != nil {
					return
				}
				c.process(ctx, it)
				c.q.done(it)
			}
		})
	}
	wg.Wait()
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	if err := c.sink.Flush(flushCtx); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	return ctx.Err()
}

// enqueue normalises raw and queues it for src if it is in the source's space.
func (c *Crawler) enqueue(src *source, raw string, depth int) {
	u, err := normalise(raw)
	if err != nil {
		c.report.Reason(src.cfg.Name, raw, "malformed_url", err.Error(), false)
		return
	}
	if reason := c.scope(src, u, depth); reason != "" {
		if c.q.markSeen(u.String()) {
			c.report.Reason(src.cfg.Name, u.String(), reason, "", false)
		}
		return
	}
	p := src.cfg.Politeness
	c.q.add(item{url: u.String(), source: src, depth: depth, host: hostKey(u)}, p.MaxParallelPerHost, p.Delay.D())
}

// scope decides whether a URL belongs to the source's crawl space; "" means it does.
func (c *Crawler) scope(src *source, u *url.URL, depth int) string {
	if u.Scheme != "http" && u.Scheme != "https" {
		return "scheme"
	}
	if config.Bool(src.cfg.StayOnStartHosts, true) && !src.own[hostKey(u)] {
		return "offsite"
	}
	if depth > src.cfg.MaxLinkDepth {
		return "max_link_depth"
	}
	return ""
}

func (c *Crawler) process(ctx context.Context, it item) {
	src := it.source
	res := &fetchResult{it: it}
	cctx := colly.NewContext()
	cctx.Put(resultKey, res)
	hdr := http.Header{}
	if src.own[hostKeyString(it.url)] {
		for k, v := range src.headers {
			hdr[k] = v
		}
	}
	hdr.Set("User-Agent", c.cfg.UserAgent)
	hdr.Set("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1")
	fetched := time.Now().UTC()
	err := c.coll.Request(http.MethodGet, it.url, nil, cctx, hdr)
	if ctx.Err() != nil {
		return
	}
	log := c.log.With("url", it.url, "source", src.cfg.Name)
	switch {
	case res.skip != "":
		c.report.Reason(src.cfg.Name, it.url, res.skip, mediaType(res.header.Get("Content-Type")), false)
		log.Debug("skipped", "reason", res.skip, "status", res.status)
		return
	case res.status != 0 && res.status != http.StatusOK:
		reason := fmt.Sprintf("http_%d", res.status)
		c.report.Reason(src.cfg.Name, it.url, reason, "", true)
		log.Info("fetch failed", "reason", reason, "status", res.status)
		return
	case err != nil && !errors.Is(err, colly.ErrAbortedAfterHeaders):
		reason, _ := classify(err)
		c.report.Reason(src.cfg.Name, it.url, reason, err.Error(), true)
		log.Info("fetch failed", "reason", reason, "err", err)
		return
	case res.err != nil && res.body == nil:
		reason, _ := classify(res.err)
		c.report.Reason(src.cfg.Name, it.url, reason, res.err.Error(), true)
		log.Info("fetch failed", "reason", reason, "err", res.err)
		return
	}
	c.report.fetched(src.cfg.Name)
	if int64(len(res.body)) > c.cfg.Fetch.MaxBodyBytes {
		c.report.Reason(src.cfg.Name, it.url, "too_large", fmt.Sprintf("over %d bytes", c.cfg.Fetch.MaxBodyBytes), false)
		log.Info("skipped", "reason", "too_large", "status", res.status)
		return
	}
	final, err := normalise(res.finalURL.String())
	if err != nil {
		final, _ = url.Parse(it.url)
	}
	if final.String() != it.url {
		// A redirect: the target is the document. Another page may already
		// have queued or fetched it in this cycle.
		if !c.q.markSeen(final.String()) {
			c.report.Reason(src.cfg.Name, it.url, "redirect_duplicate", final.String(), false)
			return
		}
	}
	page := mapping.Page{URL: final, Header: colly2UTF8(res.header), Body: res.body, Depth: it.depth, Source: src.cfg.Name, Fetched: fetched}
	out, err := src.extractor.Extract(page)
	if err != nil {
		c.report.Reason(src.cfg.Name, it.url, "extract_failed", err.Error(), true)
		log.Warn("extraction failed", "reason", "extract_failed", "err", err)
		return
	}
	follow := !out.Robots.NoFollow || src.cfg.Robots.IgnoreNofollow || !config.Bool(src.cfg.Robots.Obey, true)
	if follow && config.Bool(src.cfg.Discovery, true) {
		for _, l := range out.Links {
			if l.NoFollow && !src.cfg.Robots.IgnoreNofollow && config.Bool(src.cfg.Robots.Obey, true) {
				continue
			}
			c.enqueue(src, l.URL, it.depth+1)
		}
	}
	if out.Robots.NoIndex && !src.cfg.Robots.IgnoreNoindex && config.Bool(src.cfg.Robots.Obey, true) {
		c.report.Reason(src.cfg.Name, final.String(), "noindex", "", false)
		return
	}
	doc := out.Doc
	c.report.expect(doc.URL, src.cfg.Name)
	if err := c.sink.Index(ctx, &doc); err != nil {
		c.report.Reason(src.cfg.Name, doc.URL, "index_failed", err.Error(), true)
		log.Warn("index failed", "reason", "index_failed", "err", err, "id", docfields.ID(doc.URL))
	}
}

// colly2UTF8 adjusts headers for a body colly has already converted: colly
// decodes a non-UTF-8 charset named in Content-Type into UTF-8, so the
// header must say utf-8 or the page would be decoded twice.
func colly2UTF8(h http.Header) http.Header {
	ct := h.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || params["charset"] == "" || strings.EqualFold(params["charset"], "utf-8") || strings.EqualFold(params["charset"], "utf8") {
		return h
	}
	params["charset"] = "utf-8"
	h.Set("Content-Type", mime.FormatMediaType(mt, params))
	return h
}

// hostKey is scheme://host:port with the default port made explicit, the
// unit of politeness and of "the same site".
func hostKey(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		default:
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

func hostKeyString(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return hostKey(u)
}

// normalise is the skeleton's URL normalisation: absolute http(s), lower-case
// scheme and host, no fragment, "/" for an empty path.
func normalise(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, err
	}
	if !u.IsAbs() || u.Host == "" {
		return nil, fmt.Errorf("not an absolute URL")
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "" {
		u.Path = "/"
	}
	if (u.Scheme == "http" && u.Port() == "80") || (u.Scheme == "https" && u.Port() == "443") {
		u.Host = u.Hostname()
	}
	return u, nil
}
