package provider

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/provider/fetch"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// source is one configured source with everything compiled for it.
type source struct {
	cfg        *config.Source
	rules      *rules.Source
	extractors extractors
	// fetch reaches the source's sites: pages, robots.txt, sitemaps and feeds.
	fetch *fetch.Source
}

func (c *Crawler) newSource(sc *config.Source) (*source, error) {
	rs := c.rules.Source(sc.Name)
	if rs == nil {
		return nil, fmt.Errorf("source %s: no compiled rules", sc.Name)
	}
	ex, err := newExtractors(c.cfg, sc, c.formats, c.readers, c.timing.readGrace)
	if err != nil {
		return nil, err
	}
	opts := fetch.Options{Accept: accept(c.formats), Sniff: ex.sniff, Browser: c.browser,
		Delay: func(hostKey string) time.Duration { return c.polite.policy(hostKey).Delay }, Now: c.now}
	if *sc.Robots.Obey {
		opts.Robots = func(ctx context.Context, u *url.URL) (bool, string, error) { return c.robotsAllow(ctx, sc, u) }
	}
	fs, err := fetch.New(c.cfg, sc, rs, opts)
	if err != nil {
		return nil, err
	}
	return &source{cfg: sc, rules: rs, extractors: ex, fetch: fs}, nil
}

// robotsAllow says whether robots.txt lets the crawler have u, a request
// of a page of sc being rendered, and the line that decided: the cache,
// user agent and Crawl-delay the crawl's own requests have.
func (c *Crawler) robotsAllow(ctx context.Context, sc *config.Source, u *url.URL) (bool, string, error) {
	r, err := c.robots.Get(ctx, u)
	if err != nil {
		return false, "", err
	}
	c.polite.learnFrom(sc, urlnorm.Origin(u.String()), r)
	ok, line := r.Test(c.agent, u.RequestURI())
	return ok, line, nil
}
