package provider

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/sitemap"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// discoverListed queues the URLs a source's sitemaps and feeds list: those
// in the config, and with use_sitemaps those robots.txt names for the start
// URLs' hosts. Child sitemaps of an index are followed to max_depth. Every
// URL passes the crawl space like a link; a file that cannot be read or
// parsed costs its own URLs only, with its reason in the report. The URLs
// listed are stored as roots for finding orphans (storeListed).
func (c *Crawler) discoverListed(ctx context.Context, src *source) {
	var listed []uint64
	whole := true // every file was read whole
	type file struct {
		url   string
		depth int
	}
	var files []file
	for _, u := range src.cfg.Sitemaps {
		files = append(files, file{u, 0})
	}
	for _, u := range src.cfg.Feeds {
		files = append(files, file{u, 0})
	}
	obey := *src.cfg.Robots.Obey
	if *src.cfg.UseSitemaps && obey {
		for host := range src.fetch.Hosts() {
			sitemaps, ok := c.sitemapsNamed(ctx, host)
			if !ok {
				whole = false // the sitemaps it names are unknown
				continue
			}
			for _, sm := range sitemaps {
				files = append(files, file{sm, 0})
			}
		}
	}
	lim := src.cfg.SitemapLimits
	seen := map[string]bool{}
	for len(files) > 0 && ctx.Err() == nil {
		f := files[0]
		files = files[1:]
		// A sitemap or feed is read as named: the query filter is for pages
		// (a sitemap index may list sitemap.xml?page=2, page=3...).
		fu, err := urlnorm.Found(f.url)
		if err != nil || seen[fu] {
			continue
		}
		seen[fu] = true
		res, err := c.fetchListing(ctx, src, fu, lim)
		if res == nil {
			whole = false
			c.reportNow().Failure(src.cfg.Name, fu, "sitemap_failed", err.Error())
			c.log.Info("sitemap or feed not read", "url", fu, "source", src.cfg.Name, "reason", "sitemap_failed", "err", err)
			continue
		}
		if err != nil {
			// Partial results are kept: a file broken half-way still lists its first half.
			whole = false
			c.reportNow().Reason(src.cfg.Name, fu, "sitemap_malformed", err.Error())
		}
		if res.Truncated != "" {
			whole = false
			c.reportNow().Reason(src.cfg.Name, fu, "sitemap_"+res.Truncated, "")
		}
		for _, child := range res.Sitemaps {
			if f.depth+1 > lim.MaxDepth {
				whole = false
				c.reportNow().Reason(src.cfg.Name, child.URL, "sitemap_max_depth", fu)
				continue
			}
			files = append(files, file{child.URL, f.depth + 1})
		}
		ds := discovered{items: make([]frontier.Item, 0, len(res.URLs))}
		for _, e := range res.URLs {
			if it := ds.add(c.rules, src.rules, e.URL, 0); it != nil {
				it.Lastmod = e.Lastmod
				listed = append(listed, frontier.LinkKey(it.URL))
			}
		}
		c.recordRefusals(&ds.refused)
		n, err := c.front.Add(ds.items...)
		if err != nil {
			c.log.Error("cannot queue sitemap URLs", "url", fu, "source", src.cfg.Name, "err", err)
			continue
		}
		c.log.Debug("sitemap read", "url", fu, "source", src.cfg.Name, "kind", res.Kind.String(), "urls", len(res.URLs), "queued", n)
	}
	if ctx.Err() == nil {
		c.storeListed(src, listed, whole)
	}
}

// fetchListing fetches and parses one sitemap or feed, after robots.txt.
func (c *Crawler) fetchListing(ctx context.Context, src *source, fu string, lim config.Sitemaps) (*sitemap.Result, error) {
	u, err := url.Parse(fu)
	if err != nil {
		return nil, err
	}
	if *src.cfg.Robots.Obey {
		if ok, line, err := c.robots.Allowed(ctx, u); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("robots.txt disallows it (%s)", line)
		}
	}
	maxBytes := lim.MaxBytes
	if maxBytes <= 0 {
		maxBytes = sitemap.DefaultMaxBytes
	}
	// Parse reads one byte past max_bytes to tell a file cut by the limit.
	if maxBytes < math.MaxInt64 {
		maxBytes++
	}
	res, err := src.fetch.Get(ctx, fu, maxBytes)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", res.StatusCode)
	}
	return sitemap.Parse(res.Body, fu, sitemap.Limits{MaxBytes: lim.MaxBytes, MaxURLs: lim.MaxURLs})
}
