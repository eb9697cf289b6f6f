package provider

import (
	"fmt"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/mapping"
	"github.com/crawlspace/crawlspace/provider/fetch"
	"github.com/crawlspace/crawlspace/rules"
)

// source is one configured source with everything compiled for it.
type source struct {
	cfg       *config.Source
	rules     *rules.Source
	extractor *mapping.Extractor
	// fetch reaches the source's sites: pages, robots.txt, sitemaps and feeds.
	fetch *fetch.Source
}

// pageAccept is the Accept header of page requests.
const pageAccept = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1"

func (c *Crawler) newSource(sc *config.Source) (*source, error) {
	rs := c.rules.Source(sc.Name)
	if rs == nil {
		return nil, fmt.Errorf("source %s: no compiled rules", sc.Name)
	}
	ex, err := mapping.New(c.cfg, sc)
	if err != nil {
		return nil, err
	}
	fs, err := fetch.New(c.cfg, sc, rs, fetch.Options{Accept: pageAccept})
	if err != nil {
		return nil, err
	}
	return &source{cfg: sc, rules: rs, extractor: ex, fetch: fs}, nil
}
