package provider

import (
	"fmt"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/provider/fetch"
	"github.com/crawlspace/crawlspace/rules"
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
	ex, err := newExtractors(c.cfg, sc, c.formats, c.readers)
	if err != nil {
		return nil, err
	}
	fs, err := fetch.New(c.cfg, sc, rs, fetch.Options{Accept: accept(c.formats), Sniff: ex.sniff, Browser: c.browser})
	if err != nil {
		return nil, err
	}
	return &source{cfg: sc, rules: rs, extractors: ex, fetch: fs}, nil
}
